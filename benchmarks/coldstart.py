"""Benchmark of a cold index: time from starting the first sync of a tree never indexed to its first keyword hit.

    python -m benchmarks.coldstart [--chunks 20000] [--out DIR] [--full]

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
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

from benchmarks.common import bench_embedder, load_average
from benchmarks.synthetic import generate_chunks

__all__ = ["run", "main", "report"]

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
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "coldstart.json").write_text(json.dumps(result, indent=2) + "\n")
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.coldstart", description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=20_000, help="approximate size of the tree, in chunks")
    parser.add_argument("--out", type=Path, default=None, help="write coldstart.json here")
    parser.add_argument("--full", action="store_true", help="let the sync finish (embed every chunk)")
    args = parser.parse_args(argv)
    print(report(run(args.chunks, args.out, args.full)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
