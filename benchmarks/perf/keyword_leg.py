"""Benchmark of the in-memory BM25 leg by table size, run here and through a worker thread (the hand-over's cost).

    python -m benchmarks.perf.keyword_leg [--rows 220,2300,10000,50000] [--out FILE]

Rows are chunks of three lines each, cycled from the Markdown of examples/memory; the 16 queries of
:data:`benchmarks.perf.concurrency.QUERIES` in turn, as many candidates as a hybrid search of k=5 asks
(``fusion.MIN_CANDIDATES``: 100 until round eight of benchmarks/research/LOG.md, 200 since).
Reported per size: the CPU of one keyword leg (:meth:`MemoryBM25.search` and the canonical order)
and the extra CPU when each leg is handed to a one-thread pool and waited for, as
:class:`memsearch.engine.search.searcher.Searcher` does past ``KEYWORD_THREAD_MIN_ROWS``.
"""

from __future__ import annotations

import argparse
import json
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from benchmarks.common import REPO, load_average
from benchmarks.perf.concurrency import QUERIES

__all__ = ["run", "main"]


def _table(n: int):
    import pyarrow as pa

    lines = [line for path in sorted((REPO / "examples" / "memory").rglob("*.md"))
             for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    texts = ["\n".join(lines[(i * 3 + j) % len(lines)] for j in range(3)) for i in range(n)]
    return pa.table({"id": [f"c{i}" for i in range(n)], "path": [f"notes/f{i // 8}.md" for i in range(n)],
                     "dir": ["notes"] * n, "heading": [""] * n, "start_line": [i % 8 * 3 + 1 for i in range(n)],
                     "end_line": [i % 8 * 3 + 3 for i in range(n)], "text": texts, "date": [None] * n,
                     "search_text": texts})


def run(sizes: list[int], log=print) -> dict:
    from memsearch.engine.search.bm25 import MemoryBM25
    from memsearch.engine.search.fusion import CANDIDATE_FACTOR, MIN_CANDIDATES
    from memsearch.engine.search.searcher import canonical
    from memsearch.engine.storage.filter import Filter

    flt, pool = Filter(), ThreadPoolExecutor(max_workers=1)
    depth = max(5 * CANDIDATE_FACTOR, MIN_CANDIDATES)
    out: dict = {"loadavg_start": load_average(), "sizes": []}
    for n in sizes:
        copy = MemoryBM25(_table(n), ("bench", 1))

        def leg(i: int, copy=copy) -> list[dict]:
            return canonical(copy.search(QUERIES[i % len(QUERIES)], depth, flt))

        for i in range(len(QUERIES)):  # warm: the rows' dicts, the analyser's words
            leg(i)
        reps = max(100, 400_000 // n)
        cpu = time.process_time()
        for i in range(reps):
            leg(i)
        here = (time.process_time() - cpu) / reps
        cpu = time.process_time()
        for i in range(reps):
            pool.submit(leg, i).result()
        handed = (time.process_time() - cpu) / reps
        size = {"rows": n, "leg_cpu_ms": round(here * 1000, 3), "hand_over_cpu_ms": round((handed - here) * 1000, 3),
                "loadavg": load_average()}
        out["sizes"].append(size)
        log(f"{n:>7} rows: keyword leg {size['leg_cpu_ms']:.3f} ms CPU, through the worker thread "
            f"+{size['hand_over_cpu_ms']:.3f} ms  load {size['loadavg']}")
    pool.shutdown()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.perf.keyword_leg", description=__doc__.split("\n")[0])
    parser.add_argument("--rows", default="220,2300,10000,50000", help="table sizes, comma-separated")
    parser.add_argument("--out", type=Path, help="write the results here (JSON)")
    args = parser.parse_args(argv)
    results = run([int(n) for n in args.rows.split(",")])
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
