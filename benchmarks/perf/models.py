"""Embedding models side by side in one process: index throughput, one query's encode, and warm hybrid search against the bare encode.

``python -m benchmarks.perf.models [--models A,B] [--corpus codeagent] [--queries 200] [--texts 256] [--rounds 3]``
indexes a one-tree corpus of ``python -m benchmarks quality`` (default ``codeagent``, 325 chunks;
``locomo-merged``: 2.3k) once per model, then times, query by query
and in turn (:func:`benchmarks.perf.speed.interleaved`, so the machine's load falls on all alike), the
reference of ``docs/benchmarks.md`` (``SentenceTransformer.encode`` of the default model on one torch
thread), each model's query encode, and each model's warm hybrid search (k=10, query encode included).
Documents: chunk-sized texts embedded by each model in alternating rounds (chunks/s). Ratios are the
figures to compare; the load average is recorded beside them. Writes ``models.json`` to ``--out``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

from benchmarks.common import load_average, write_result

__all__ = ["run", "main", "MODELS"]

#: The default model first: every ratio is against it.
MODELS = ("all-MiniLM-L6-v2", "multilingual-e5-small-q4")


def _chunk_texts(root: Path, count: int) -> list[str]:
    files = sorted(p for p in root.rglob("*.md") if ".memsearch" not in p.parts)
    lines = [line for f in files for line in f.read_text().splitlines() if line.strip()]
    return ["\n".join(lines[i : i + 6]) for i in range(0, len(lines), 6)][:count]  # six lines: chunk-sized


def run(work: Path, corpus: str = "codeagent", locomo=None, models=MODELS, queries: int = 200, texts: int = 256,
        rounds: int = 3) -> dict:
    from benchmarks.perf.speed import bare_encoder, interleaved
    from benchmarks.quality import load_corpus
    from memsearch import MemoryIndex
    from memsearch.engine.embed.embedder import load_embedder

    built = load_corpus(corpus, work, locomo=locomo)
    if set(built.trees) != {""}:
        raise ValueError(f"{corpus}: one tree needed (locomo-merged, not locomo)")
    root = built.trees[""]
    qs = [q.query for q in built.questions][:queries]
    result: dict = {"corpus": corpus, "load_start": load_average(), "queries": len(qs), "models": {}}
    embedders = {name: load_embedder(name) for name in models}
    for embedder in embedders.values():
        embedder.load()
    sample = _chunk_texts(root, texts)
    spent: dict[str, list[float]] = {name: [] for name in models}
    for _ in range(rounds):  # alternating rounds: the load is shared out
        for name, embedder in embedders.items():
            t0 = time.perf_counter()
            embedder.embed_documents(sample)
            spent[name].append(time.perf_counter() - t0)
    indexes = {}
    for name, embedder in embedders.items():
        t0 = time.perf_counter()
        indexes[name] = MemoryIndex(root, db=work / f"db-{name}", embedder=embedder, rebuild=True)
        report = indexes[name].sync()
        seconds = time.perf_counter() - t0
        result["models"][name] = {
            "backend": getattr(embedder, "backend", None),
            "fingerprint": embedder.fingerprint,
            "chunks": report.chunks_total,
            "index_s": round(seconds, 1),
            "index_chunks_per_s": round(report.chunks_total / seconds, 1),
            "documents_per_s": round(len(sample) / statistics.median(spent[name]), 1),
            "index_load": load_average(),
        }
    calls = {"bare_encode": bare_encoder()}
    for name, embedder in embedders.items():
        calls[f"query:{name}"] = embedder.embed_query
        calls[f"hybrid:{name}"] = lambda q, index=indexes[name]: index.search(q, k=10)
    lat = interleaved(calls, qs)
    result["latency"] = lat
    base = models[0]
    for name, row in result["models"].items():
        query, hybrid = lat[f"query:{name}"]["p50_ms"], lat[f"hybrid:{name}"]["p50_ms"]
        row |= {
            "query_p50_ms": query,
            "hybrid_p50_ms": hybrid,
            "hybrid_over_bare_encode": round(hybrid / lat["bare_encode"]["p50_ms"], 3),
            "query_over_base": round(query / lat[f"query:{base}"]["p50_ms"], 2),
            "hybrid_over_base": round(hybrid / lat[f"hybrid:{base}"]["p50_ms"], 2),
            "documents_over_base": round(row["documents_per_s"] / result["models"][base]["documents_per_s"], 2),
            "index_over_base": round(row["index_chunks_per_s"] / result["models"][base]["index_chunks_per_s"], 2),
        }
    for index in indexes.values():
        index.close()
    result["load_end"] = load_average()
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.perf.models", description=__doc__.split("\n")[0])
    parser.add_argument("--models", default=",".join(MODELS), help="comma-separated registry names, the reference first")
    parser.add_argument("--corpus", default="codeagent", help="a one-tree corpus (codeagent, agentmem, locomo-merged, ...)")
    parser.add_argument("--locomo", help="path of locomo10.json (default ../shared/data/locomo10.json)")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--texts", type=int, default=256, help="chunk-sized texts per document round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path("bench-results/models"))
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    result = run(args.out / "work", args.corpus, args.locomo, tuple(args.models.split(",")), args.queries, args.texts,
                 args.rounds)
    write_result(args.out, "models.json", result)
    for name, row in result["models"].items():
        print(f"{name}: " + ", ".join(f"{k} {v}" for k, v in row.items() if k not in ("fingerprint",)))
    print(f"bare encode p50 {result['latency']['bare_encode']['p50_ms']} ms; load {result['load_start']} -> "
          f"{result['load_end']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
