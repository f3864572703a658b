"""Searches per second held, with zero errors, while a daemon ingests a burst of edits.

    python -m benchmarks.perf.burst [--edits 1000] [--files 50]

A copy of examples/memory gets a real ``memsearch watch`` daemon (real model, real file
events). This process searches the same index in a loop (a reader: no lock) while another
thread writes ``--edits`` edits to ``--files`` notes as fast as it can; the window closes
when the daemon has indexed the last edit. Reported: searches/s in the window and its error
count, the same rate on the idle index, a bare query encode rate as the reference, and
the load average (the machine is shared: compare the ratios).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from benchmarks.common import REPO
from memsearch.engine.index import MemoryIndex
from memsearch.service.watcher import read_state

QUERIES = ["which warehouse did we choose for Atlas", "billing webhook secret", "heron", "what happened on Monday",
           '"kingfisher burst"', "decisions about the schema"]


def _rate(index: MemoryIndex, seconds: float) -> float:
    done, started = 0, time.perf_counter()
    while time.perf_counter() - started < seconds:
        index.search(f"{QUERIES[done % len(QUERIES)]} {done}", k=5)  # unique: no query cache hit
        done += 1
    return done / (time.perf_counter() - started)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edits", type=int, default=1000)
    parser.add_argument("--files", type=int, default=50)
    parser.add_argument("--timeout", type=float, default=600.0)
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="memsearch-burst-"))
    root, db = work / "memory", work / "db"
    shutil.copytree(REPO / "examples" / "memory", root, ignore=shutil.ignore_patterns(".memsearch"))
    (root / "burst").mkdir()
    (root / "burst" / "MEMORY.md").write_text("# Burst\nnotes written by the benchmark\n")
    env = dict(os.environ, HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    daemon = subprocess.Popen([sys.executable, "-m", "memsearch", "watch", str(root), "--db", str(db)],
                              stdout=subprocess.DEVNULL, stderr=open(work / "daemon.log", "wb"), env=env, cwd=str(REPO))
    try:
        deadline = time.monotonic() + args.timeout
        while not ((state := read_state(db)) and state.get("state") == "watching" and state.get("syncs", 0) >= 1):
            if daemon.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"the daemon did not start: see {work / 'daemon.log'}")
            time.sleep(0.2)
        index = MemoryIndex(root, db=db)
        encoder = index.embedder
        encoder.embed_query("warm up")
        index.search("warm up", k=5)
        started = time.perf_counter()
        encodes = 0
        while time.perf_counter() - started < 3.0:
            encoder.embed_query(f"{QUERIES[encodes % len(QUERIES)]} {encodes}")
            encodes += 1
        encode_rate = encodes / (time.perf_counter() - started)
        idle_rate = _rate(index, 3.0)

        counts = {"ok": 0, "errors": 0}
        errors: list[str] = []
        stop = threading.Event()

        def searcher() -> None:
            i = 0
            while not stop.is_set():
                try:
                    index.search(f"{QUERIES[i % len(QUERIES)]} {i}", k=5)
                    counts["ok"] += 1
                except Exception as exc:  # noqa: BLE001 - counted, the figure must show them
                    counts["errors"] += 1
                    errors.append(f"{type(exc).__name__}: {exc}"[:200])
                i += 1

        marker = f"kingfisher burst final {os.getpid()}"
        thread = threading.Thread(target=searcher, daemon=True)
        window_start = time.perf_counter()
        thread.start()
        for i in range(args.edits):
            text = f"# Burst note {i % args.files}\nedit {i}: the heron counted {i} fish\n"
            if i == args.edits - 1:
                text += f"{marker}\n"
            (root / "burst" / f"note{i % args.files}.md").write_text(text)
        written = time.perf_counter()
        probe = MemoryIndex(root, db=db)
        while True:  # the window closes when the last edit is searchable
            hits = probe.search(f'"{marker}"', k=1, mode="keyword")
            if hits and marker in hits[0].text:
                break
            if time.monotonic() > deadline or daemon.poll() is not None:
                raise SystemExit(f"the burst was not ingested in time: see {work / 'daemon.log'}")
            time.sleep(0.05)
        window = time.perf_counter() - window_start
        stop.set()
        thread.join(30)
        searched = counts["ok"] + counts["errors"]
        load = os.getloadavg()
        result = {
            "edits": args.edits, "files": args.files, "write_seconds": round(written - window_start, 2),
            "ingest_window_seconds": round(window, 2), "searches": searched, "search_errors": counts["errors"],
            "searches_per_second_during_burst": round(counts["ok"] / window, 2),
            "searches_per_second_idle": round(idle_rate, 2), "query_encodes_per_second": round(encode_rate, 2),
            "burst_over_idle": round(counts["ok"] / window / idle_rate, 3),
            "burst_over_encode": round(counts["ok"] / window / encode_rate, 3),
            "daemon_syncs": (read_state(db) or {}).get("syncs"), "load_average": [round(x, 2) for x in load],
            "first_errors": errors[:3],
        }
        print(json.dumps(result, indent=2))
        return 0 if counts["errors"] == 0 else 1
    finally:
        daemon.terminate()
        try:
            daemon.wait(60)
        except subprocess.TimeoutExpired:
            daemon.kill()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
