"""Benchmark of a cold index: time from starting the first sync of a tree never indexed to its first keyword hit.

    python -m benchmarks.perf.coldstart [--chunks 20000] [--out DIR] [--full]
    python -m benchmarks.perf.coldstart --cli [--chunks 20000] [--out DIR]

A synthetic tree (:mod:`benchmarks.synthetic`, about ``--chunks`` chunks) is indexed from nothing
by ``MemoryIndex.sync`` in a thread, as ``memsearch watch`` and ``serve`` do, while a second
index handle (a reader, as the daemon's) asks keyword searches for the planted facts every 0.1 s.
The sync writes every new file's text first (``MEMSEARCH_TEXT_FIRST_FILES``), then embeds it.

Reported, each with the load average beside it: the seconds to the first keyword hit (and
whether it says ``partial``), to the end of the text pass (every file searchable by keyword),
a few keyword and hybrid searches timed during the embedding pass, and a bare query encode timed
in the same process (the reference of the search times). Without ``--full`` the sync is stopped
after those searches (embedding 20k chunks takes a long time on 2 cores); with it, the total.
Results go to ``DIR/coldstart.json`` and a Markdown table on stdout.

``--cli``: the first ``memsearch search --json`` calls on such a tree, as a shell user makes them
with no daemon started by hand (autostart on, the default): the first call's wall time (it writes
the text rows, starts a daemon and answers keyword hits flagged ``partial``), the time until the
auto-started daemon serves, and the next calls' wall times (through the daemon), beside Python's
bare start timed in the same run. Results go to ``DIR/coldstart_cli.json``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from benchmarks.common import bench_embedder, child_env, load_average, write_result
from benchmarks.synthetic import generate_chunks

__all__ = ["run", "run_cli", "main", "report", "report_cli"]

#: Seconds between the reader's keyword searches while it waits for the first hit.
POLL_S = 0.1
#: Searches of each mode timed during the embedding pass.
SEARCHES = 5


class _Stop(Exception):
    """Raised from the sync's progress callback to end it (the batch in hand is committed)."""


def run(chunks: int = 20_000, out: Path | None = None, full: bool = False, log=print) -> dict:
    """Run the benchmark; returns the results (also written to ``out/coldstart.json``)."""
    from memsearch.engine.index import MemoryIndex
    from memsearch.engine.storage.store import Store

    work = Path(tempfile.mkdtemp(prefix="memsearch-coldstart-"))
    root, db = work / "memory", work / "db"
    result: dict = {"chunks_asked": chunks, "load_start": load_average()}
    try:
        planted = generate_chunks(root, chunks)
        queries = [p.query for p in planted[:: max(1, len(planted) // 20)]]
        embedder = bench_embedder()
        getattr(embedder, "load", lambda: None)()
        embedder.embed_query("warm up")
        started = time.perf_counter()
        for _ in range(20):
            embedder.embed_query(queries[0])
        result["reference_encode_s"] = {"mean": round((time.perf_counter() - started) / 20, 5), "load": load_average()}
        stop = threading.Event()

        texted = threading.Event()

        def progress(phase, done, total, embedded):
            if phase == "text":
                texted.set()
            result["embedded_at_stop"] = embedded
            if stop.is_set():
                raise _Stop

        writer = MemoryIndex(root, db=db, embedder=embedder)
        outcome: list = []

        def sync() -> None:
            try:
                outcome.append(writer.sync(progress=progress))
            except _Stop:
                outcome.append(None)

        thread = threading.Thread(target=sync, name="coldstart-sync")
        started = time.perf_counter()
        thread.start()
        reader = None
        first = None
        while first is None and (thread.is_alive() or not outcome):
            time.sleep(POLL_S)
            if reader is None:
                if not (db / "index.json").exists() or Store(db).chunks() is None:
                    continue
                reader = MemoryIndex(root, db=db, embedder=embedder)
            for query in queries:
                hits = reader.search(query, k=5, mode="keyword")
                if hits:
                    first = (time.perf_counter() - started, hits[0])
                    break
        if first is None:
            raise RuntimeError("no keyword hit before the sync ended")
        result["first_keyword_hit_s"] = {"wall": round(first[0], 3), "partial": first[1].partial, "load": load_average()}
        log(f"first keyword hit after {first[0]:.2f} s (partial: {first[1].partial}), load {load_average()}")
        while thread.is_alive() and not texted.wait(POLL_S):
            pass
        result["text_pass_s"] = {"wall": round(time.perf_counter() - started, 3), "load": load_average(),
                                 "rows": Store(db).row_count(), "text_only_rows": Store(db).text_only_rows()}
        log(f"text pass done after {result['text_pass_s']['wall']:.2f} s: {result['text_pass_s']['rows']:,} rows")
        for mode in ("keyword", "hybrid"):
            walls, partial = [], 0
            for query in queries[:SEARCHES]:
                t0 = time.perf_counter()
                hits = reader.search(query, k=5, mode=mode)
                walls.append(time.perf_counter() - t0)
                partial += any(h.partial for h in hits)
            walls.sort()
            result[f"{mode}_during_embedding_s"] = {"p50": round(walls[len(walls) // 2], 4), "max": round(walls[-1], 4),
                                                    "with_partial_hits": partial, "load": load_average()}
            log(f"{mode} search during embedding: p50 {walls[len(walls) // 2]:.3f} s, {partial} with partial hits")
        if not full:
            stop.set()
        thread.join()
        result["sync_s"] = {"wall": round(time.perf_counter() - started, 3), "stopped": not full, "load": load_average()}
        result["rows"] = Store(db).row_count()
        result["ratio_first_hit_to_encode"] = round(first[0] / result["reference_encode_s"]["mean"], 1)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    result["load_end"] = load_average()
    write_result(out, "coldstart.json", result)
    return result


def report(r: dict) -> str:
    rows = [("bare query encode (reference, mean)", r["reference_encode_s"]["mean"], r["reference_encode_s"]["load"]),
            ("first keyword hit after sync start", r["first_keyword_hit_s"]["wall"], r["first_keyword_hit_s"]["load"]),
            ("text pass done (all rows keyword-searchable)", r["text_pass_s"]["wall"], r["text_pass_s"]["load"]),
            ("keyword search during embedding (p50)", r["keyword_during_embedding_s"]["p50"],
             r["keyword_during_embedding_s"]["load"]),
            ("hybrid search during embedding (p50)", r["hybrid_during_embedding_s"]["p50"],
             r["hybrid_during_embedding_s"]["load"]),
            ("sync " + ("until stopped" if r["sync_s"]["stopped"] else "total"), r["sync_s"]["wall"],
             r["sync_s"]["load"])]
    lines = ["| step | seconds | load (1/5/15 min) |", "|---|---:|---|"]
    lines += [f"| {name} | {wall:.3f} | {' '.join(map(str, load))} |" for name, wall, load in rows]
    lines.append(f"\n{r['text_pass_s']['rows']:,} rows; first hit partial: {r['first_keyword_hit_s']['partial']}; "
                 f"{r.get('embedded_at_stop', 0):,} chunks embedded when the sync ended.")
    return "\n".join(lines)


def _timed(cmd: list[str], env: dict) -> tuple[float, subprocess.CompletedProcess]:
    started = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=3600)
    return time.perf_counter() - started, done


def run_cli(chunks: int = 20_000, out: Path | None = None, calls: int = 5, log=print) -> dict:
    """The ``--cli`` measurement (module docstring); returns the results (also ``out/coldstart_cli.json``)."""
    from memsearch.service.process import daemon_status, stop

    work = Path(tempfile.mkdtemp(prefix="memsearch-coldcli-"))
    root = work / "memory"
    env = child_env(MEMSEARCH_AUTOSTART="1", MEMSEARCH_IDLE_EXIT="600")
    result: dict = {"chunks_asked": chunks, "load_start": load_average()}
    try:
        planted = generate_chunks(root, chunks)
        result["files"] = sum(1 for _ in root.rglob("*.md"))
        result["python_start_s"] = round(min(_timed([sys.executable, "-c", "pass"], env)[0] for _ in range(3)), 4)
        queries = [p.query for p in planted[:: max(1, len(planted) // (calls + 1))]][: calls + 1]
        walls = []
        started = time.perf_counter()
        for i, query in enumerate(queries):
            wall, done = _timed([sys.executable, "-m", "memsearch", "search", str(root), query, "--json", "-k", "5"], env)
            if done.returncode != 0:
                raise RuntimeError(f"memsearch search failed: {done.stderr[-500:]}")
            hits = json.loads(done.stdout)["hits"]
            walls.append({"wall": round(wall, 3), "hits": len(hits), "partial": sum(bool(h.get("partial")) for h in hits),
                          "load": load_average(), "stderr": done.stderr.strip()[-300:]})  # e.g. a fallback's warning
            log(f"call {i + 1}: {wall:.3f} s, {len(hits)} hits ({walls[-1]['partial']} partial), load {load_average()}")
            if i == 0:  # wait for the auto-started daemon before the calls it answers
                deadline = time.monotonic() + 600
                while not daemon_status(root)["serving"] and time.monotonic() < deadline:
                    time.sleep(0.2)
                result["daemon_serving_s"] = {"wall": round(time.perf_counter() - started, 3), "load": load_average()}
        result["calls"] = walls
        info = daemon_status(root)
        result["at_end"] = {k: info[k] for k in ("serving", "chunks", "partial_files", "partial_chunks")}
    finally:
        stop(root, timeout=120)
        shutil.rmtree(work, ignore_errors=True)
    result["load_end"] = load_average()
    write_result(out, "coldstart_cli.json", result)
    return result


def report_cli(r: dict) -> str:
    later = sorted(c["wall"] for c in r["calls"][1:])
    lines = ["| step | seconds | load (1/5/15 min) |", "|---|---:|---|",
             f"| Python's bare start (reference) | {r['python_start_s']:.3f} | {' '.join(map(str, r['load_start']))} |"]
    first = r["calls"][0]
    lines.append(f"| first call (no daemon; {first['partial']}/{first['hits']} hits partial) | {first['wall']:.3f} | "
                 f"{' '.join(map(str, first['load']))} |")
    lines.append(f"| auto-started daemon serving, from the first call's start | {r['daemon_serving_s']['wall']:.3f} | "
                 f"{' '.join(map(str, r['daemon_serving_s']['load']))} |")
    for i, call in enumerate(r["calls"][1:], 2):
        lines.append(f"| call {i} (through the daemon; {call['partial']}/{call['hits']} hits partial) | "
                     f"{call['wall']:.3f} | {' '.join(map(str, call['load']))} |")
    lines.append(f"\n{r['files']:,} files; later calls p50 {later[len(later) // 2]:.3f} s; at the end "
                 f"{r['at_end']['chunks']:,} chunks, {r['at_end']['partial_chunks']:,} not yet embedded.")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.perf.coldstart", description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=20_000, help="approximate size of the tree, in chunks")
    parser.add_argument("--out", type=Path, default=None, help="write coldstart.json here")
    parser.add_argument("--full", action="store_true", help="let the sync finish (embed every chunk)")
    parser.add_argument("--cli", action="store_true", help="time the first CLI calls instead (no daemon started by hand)")
    args = parser.parse_args(argv)
    print(report_cli(run_cli(args.chunks, args.out)) if args.cli else report(run(args.chunks, args.out, args.full)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
