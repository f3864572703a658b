"""Benchmark of the indexing daemon (``memsearch watch``): freshness, searches under writes, disk use.

    python -m benchmarks.perf.daemon --out DIR [--files 2000] [--edits 100] [--rapid 500] [--disk-edits 1000]

Processes: the daemon (``python -m memsearch watch``, real model), a *reader* that
searches in a loop and records every latency and error, and this controller.

1. **full index**: the daemon starts on a fresh tree of ``--files`` synthetic notes; its
   catch-up is a full index, while the reader searches all along.
2. **freshness**: ``--edits`` times, write a unique word into a random file and search for it
   from this process (a search every ``POLL_S``) until a hit's text holds it; the reader
   pauses. p50/p95 of write-to-visible with the default (or ``--debounce``) debounce.
3. **rapid edits**: ``--rapid`` writes to ``RAPID_FILES`` files, ``RAPID_GAP_S`` apart, while the
   reader searches; then the time until every last write is searchable.
4. **disk**: ``--disk-edits`` edits of one file, each waited for, under the library
   :func:`memsearch.watcher.watch` with compaction off and on; index size right after the
   last edit and once the daemon's quiet-time compaction ran. This phase uses the
   HashEmbedder with 384 dimensions (the default model's vector size): disk use depends on
   the vectors' size and the LanceDB versions, not on their values, and the real model
   would make 2 x 1,000 waited edits too slow for one run.

Everything runs with ``--threads`` torch/OpenMP threads per process (default 1: three
processes share the CPU cores; two threads each oversubscribe a 2-core machine badly).
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

POLL_S = 0.02
RAPID_FILES = 50
RAPID_GAP_S = 0.01
QUERIES = ["budget review for the harbour project", "who owns the kayak rental", "deadline moved to spring",
           "notes about the vendor contract", "what did we decide about hiring", "coffee with the design team"]
WORDS = ("harbour project budget vendor contract kayak rental deadline spring hiring design team coffee "
         "review migration database outage customer launch roadmap quarter meeting notes decision risk "
         "travel berlin lisbon invoice payment schedule release testing feedback onboarding garden").split()


def _percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))], 4)


def _summary(values: list[float]) -> dict:
    return {"n": len(values), "p50": _percentile(values, 0.5), "p95": _percentile(values, 0.95),
            "max": round(max(values), 4) if values else None, "mean": round(sum(values) / len(values), 4) if values else None}


def _note(rng: random.Random, i: int) -> str:
    def sentence() -> str:
        return " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 16))).capitalize() + "."

    sections = "".join(f"## Part {p}\n\n{' '.join(sentence() for _ in range(rng.randint(2, 4)))}\n\n" for p in range(3))
    return f"# Note {i}\n\n{sections}"


def make_tree(root: Path, files: int, seed: int = 7) -> list[str]:
    """A memory tree of ``files`` synthetic notes in folders of 50; returns their relative paths."""
    rng = random.Random(seed)
    root.mkdir(parents=True, exist_ok=True)
    (root / "MEMORY.md").write_text("# Memory\n\nBenchmark tree.\n")
    paths = []
    for i in range(files):
        folder = root / f"topic{i // 50:03d}"
        if not folder.exists():
            folder.mkdir()
            (folder / "MEMORY.md").write_text(f"# Topic {i // 50}\n\nNotes of one topic.\n")
        rel = f"topic{i // 50:03d}/note{i:05d}.md"
        (root / rel).write_text(_note(rng, i))
        paths.append(rel)
    return paths


def _set_threads(threads: int) -> None:
    import torch

    torch.set_num_threads(threads)


def _write_phase(control: Path, phase: str) -> None:
    tmp = control / "phase.tmp"
    tmp.write_text(phase)
    os.replace(tmp, control / "phase")


# --- the reader process ---------------------------------------------------------------------
def reader(root: str, db: str, control: str, threads: int) -> None:
    """Search in a loop; record latency and errors per phase until the phase is 'stop'."""
    from memsearch.engine.index import MemoryIndex

    _set_threads(threads)
    ctl = Path(control)
    index = MemoryIndex(root, db=db)
    index.embedder.embed_query("warm up")
    (ctl / "ready").touch()
    results: dict[str, dict] = {}
    i = 0
    while True:
        phase = (ctl / "phase").read_text().strip() if (ctl / "phase").exists() else "idle"
        if phase == "stop":
            break
        if phase == "idle":
            time.sleep(0.1)
            continue
        entry = results.setdefault(phase, {"latencies": [], "errors": []})
        started = time.perf_counter()
        try:
            index.search(QUERIES[i % len(QUERIES)], k=10)
            entry["latencies"].append(time.perf_counter() - started)
        except Exception as exc:  # noqa: BLE001 - the point is to count them
            entry["errors"].append(f"{type(exc).__name__}: {exc}"[:300])
        i += 1
        time.sleep(POLL_S)
    out = {phase: {"searches": len(v["latencies"]) + len(v["errors"]), "errors": len(v["errors"]),
                   "first_errors": v["errors"][:5], "latency_s": _summary(v["latencies"])} for phase, v in results.items()}
    (ctl / "reader.json").write_text(json.dumps(out, indent=2))


# --- the controller -------------------------------------------------------------------------
def _wait(condition, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")


def _state(db: Path) -> dict:
    from memsearch.watcher import read_state

    return read_state(db) or {}


def _visible(index, word: str) -> bool:
    return any(word in hit.text for hit in index.search(word, k=5))


def _indexed(index, root: Path, paths: list[str]) -> bool:
    """Whether the index holds the current size and mtime of every one of ``paths``."""
    index.store.refresh()
    states = index.store.file_states()
    for rel in paths:
        st, state = (root / rel).stat(), states.get(rel)
        if state is None or (state.size, state.mtime_ns) != (st.st_size, st.st_mtime_ns):
            return False
    return True


def live_phases(args, work: Path) -> dict:
    from memsearch.engine.index import MemoryIndex

    root, db, control = work / "tree", work / "index", work / "control"
    control.mkdir(parents=True)
    started = time.perf_counter()
    paths = make_tree(root, args.files)
    result: dict = {"tree": {"files": args.files, "seconds_to_write": round(time.perf_counter() - started, 2)}}
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads), MKL_NUM_THREADS=str(args.threads), HF_HUB_OFFLINE="1",
               TOKENIZERS_PARALLELISM="false")
    read_proc = subprocess.Popen(
        [sys.executable, "-m", "benchmarks.perf.daemon", "_reader", str(root), str(db), str(control), str(args.threads)],
        env=env,
        stderr=open(work / "reader.log", "wb"),
    )
    _wait(lambda: (control / "ready").exists() or read_proc.poll() is not None, 300, "the reader")
    _write_phase(control, "full-index")
    cmd = [sys.executable, "-m", "memsearch", "watch", str(root), "--db", str(db)]
    if args.debounce:
        cmd += ["--debounce", str(args.debounce)]
    t0 = time.perf_counter()
    daemon = subprocess.Popen(cmd, env=env, stderr=open(work / "daemon.log", "wb"))
    try:
        _wait(lambda: _state(db).get("syncs") or daemon.poll() is not None, args.timeout, "the catch-up (full index)")
        state = _state(db)
        result["full_index"] = {
            "wall_s_from_daemon_start": round(time.perf_counter() - t0, 2),
            "sync_seconds": round(state["last_sync"]["seconds"], 2),
            "chunks": state["last_sync"]["chunks_total"],
            "files": state["last_sync"]["files_added"],
        }
        print(f"full index: {result['full_index']}", flush=True)

        _set_threads(args.threads)
        index = MemoryIndex(root, db=db)  # this process searches as a harness would
        index.embedder.embed_query("warm up")
        _write_phase(control, "idle")
        rng = random.Random(11)
        fresh, misses = [], 0
        for i in range(args.edits):
            rel = rng.choice(paths)
            word = f"fresh{i:04d}q{rng.randint(1000, 9999)}"
            text = (root / rel).read_text().split("\n## Update")[0]
            (root / rel).write_text(f"{text}\n## Update\n\nThe {word} arrived today.\n")
            written = time.perf_counter()
            try:
                _wait(lambda: _visible(index, word), 30, word)
                fresh.append(time.perf_counter() - written)
            except TimeoutError:
                misses += 1
            time.sleep(rng.uniform(0.05, 0.5))
        result["freshness_s"] = dict(_summary(fresh), misses=misses, debounce_ms=_state(db).get("debounce_ms"))
        print(f"freshness: {result['freshness_s']}", flush=True)

        _write_phase(control, "rapid-edits")
        time.sleep(1.0)
        targets = rng.sample(paths, min(RAPID_FILES, len(paths)))
        last: dict[str, str] = {}
        burst = time.perf_counter()
        for i in range(args.rapid):
            rel = targets[i % len(targets)]
            word = f"rapid{i:04d}q{rng.randint(1000, 9999)}"
            text = (root / rel).read_text().split("\n## Update")[0]
            (root / rel).write_text(f"{text}\n## Update\n\nThe {word} arrived today.\n")
            last[rel] = word
            time.sleep(RAPID_GAP_S)
        written = time.perf_counter()
        _wait(lambda: _indexed(index, root, targets), 120, "the last rapid edits to be indexed")
        indexed_after = time.perf_counter() - written
        missing = [w for w in last.values() if not _visible(index, w)]
        result["rapid_edits"] = {
            "edits": args.rapid,
            "files": len(targets),
            "seconds_writing": round(written - burst, 2),
            "seconds_until_indexed_after_last_write": round(indexed_after, 2),
            "last_words_not_found": len(missing),
        }
        _write_phase(control, "idle")
        stop_at = time.perf_counter()
        daemon.send_signal(signal.SIGTERM)
        code = daemon.wait(120)
        result["stop"] = {"exit_code": code, "seconds": round(time.perf_counter() - stop_at, 2)}
    finally:
        if daemon.poll() is None:
            daemon.kill()
        _write_phase(control, "stop")
        read_proc.wait(120)
    reads = json.loads((control / "reader.json").read_text())
    result["reader_during_full_index"] = reads.get("full-index")
    result["reader_during_rapid_edits"] = reads.get("rapid-edits")
    result["daemon_state"] = _state(db)
    return result


def disk_phase(work: Path, edits: int, compact: bool, debounce: int) -> dict:
    from memsearch import watcher
    from memsearch.engine.embed.embedder import HashEmbedder
    from memsearch.engine.index import MemoryIndex
    from memsearch.engine.storage.store import Store

    root = work / f"disk-{'compact' if compact else 'plain'}"
    paths = make_tree(root, 20)
    db = root / ".memsearch"
    index = MemoryIndex(root, db=db, embedder=HashEmbedder(dimension=384, name="hash-384"))
    reports: queue.Queue = queue.Queue()
    stop = threading.Event()

    def run() -> None:
        for report in watcher.watch(root, index=index, debounce=debounce, stop_event=stop, compact=compact):
            reports.put(report)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    reports.get(timeout=120)
    target, base = root / paths[0], (root / paths[0]).read_text()
    started = time.perf_counter()
    for i in range(edits):
        target.write_text(f"{base}\n## Update\n\nedit number {i} of the benchmark.\n")
        while paths[0] not in reports.get(timeout=60).changed_paths:
            pass
    seconds = time.perf_counter() - started
    result = {
        "edits": edits,
        "seconds": round(seconds, 1),
        "bytes_after_edits": Store(db).disk_bytes(),
        "versions_after_edits": len(Store(db).chunks().list_versions()),
    }
    if compact:
        # The daemon compacts once writes pause for COMPACT_QUIET_S; pruning keeps the versions
        # of the last VERSION_KEEP_S. Measure after that compaction, then after one more edit
        # made once the keep window has passed (the floor over days of edits).
        def compaction_after(mark: str | None):
            return lambda: (watcher.read_state(db) or {}).get("last_compaction") not in (None, mark)

        mark = (watcher.read_state(db) or {}).get("last_compaction")
        _wait(compaction_after(mark), 60, "the quiet-time compaction")
        result["bytes_after_quiet_compaction"] = Store(db).disk_bytes()
        result["versions_after_quiet_compaction"] = len(Store(db).chunks().list_versions())
        time.sleep(watcher.VERSION_KEEP_S)
        mark = (watcher.read_state(db) or {}).get("last_compaction")
        target.write_text(f"{base}\n## Update\n\none more edit after a pause.\n")
        while paths[0] not in reports.get(timeout=60).changed_paths:
            pass
        _wait(compaction_after(mark), 60, "the compaction after the pause")
        result["bytes_after_pause_and_one_edit"] = Store(db).disk_bytes()
        result["versions_after_pause_and_one_edit"] = len(Store(db).chunks().list_versions())
    stop.set()
    thread.join(60)
    return result


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "_reader":
        reader(argv[1], argv[2], argv[3], int(argv[4]))
        return 0
    parser = argparse.ArgumentParser(prog="python -m benchmarks.perf.daemon", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="Directory for result.json and the work trees.")
    parser.add_argument("--files", type=int, default=2000, help="Notes in the tree indexed under search load.")
    parser.add_argument("--edits", type=int, default=100, help="Edits timed for freshness.")
    parser.add_argument("--rapid", type=int, default=500, help="Rapid edits under search load.")
    parser.add_argument(
        "--disk-edits", type=int, default=1000, help="Edits of one file for the disk measure (0: skip)."
    )
    parser.add_argument("--debounce", type=int, default=None, help="Daemon debounce in ms (default: the daemon's own).")
    parser.add_argument(
        "--disk-debounce", type=int, default=20, help="Debounce (ms) of the disk phase, to keep it short."
    )
    parser.add_argument("--threads", type=int, default=1, help="torch/OpenMP threads per process.")
    parser.add_argument("--timeout", type=float, default=1800, help="Longest wait for the full index (s).")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    work = args.out / "daemon-work"
    if work.exists():
        import shutil

        shutil.rmtree(work)
    work.mkdir(parents=True)
    started = time.perf_counter()
    result = {
        "command": "python -m benchmarks.perf.daemon " + " ".join(argv),
        "cpus": os.cpu_count(),
        "loadavg_at_start": os.getloadavg(),
        "threads_per_process": args.threads,
    }
    result.update(live_phases(args, work))
    if args.disk_edits:
        from memsearch.watcher import COMPACT_QUIET_S, VERSION_KEEP_S

        result["disk"] = {
            "embedder": "HashEmbedder(dimension=384)",
            "compact_quiet_s": COMPACT_QUIET_S,
            "version_keep_s": VERSION_KEEP_S,
            "without_compaction": disk_phase(work, args.disk_edits, False, args.disk_debounce),
            "with_compaction": disk_phase(work, args.disk_edits, True, args.disk_debounce),
        }
        print(f"disk: {result['disk']}", flush=True)
    result["loadavg_at_end"] = os.getloadavg()
    result["seconds"] = round(time.perf_counter() - started, 1)
    (args.out / "daemon.json").write_text(json.dumps(result, indent=2))
    print(json.dumps({k: v for k, v in result.items() if k != "daemon_state"}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
