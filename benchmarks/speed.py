"""Speed and cost of the engine on synthetic trees (see benchmarks/synthetic.py).

* indexing throughput (chunks/s) against raw ``SentenceTransformer.encode`` on the same texts;
* no-op re-sync and a one-line edit on a tree of ``--files`` files;
* hybrid / vector / keyword query latency, warm, query embedding included, on ``--chunks`` chunks;
* index size on disk and peak RSS.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import time
from pathlib import Path

from benchmarks.synthetic import generate

__all__ = ["throughput", "resync", "latency", "main"]


def _embed_texts(root: Path, index) -> list[str]:
    """Exactly the texts the indexer embeds for this tree (context header + chunk text)."""
    from memsearch.indexer import _chunk_file
    from memsearch.tokens import get_encoding
    from memsearch.tree import scan

    enc = get_encoding()
    count = lambda t: len(enc.encode_ordinary(t))  # noqa: E731
    cut = lambda t, b: [enc.decode(enc.encode_ordinary(t)[i : i + b]) for i in range(0, len(enc.encode_ordinary(t)), b)]  # noqa: E731
    texts = []
    for rel in scan(root).external_files:
        _, chunks, headers = _chunk_file(rel, (root / rel).read_text(), count, cut, index.chunker, index.embedder)
        texts += [f"{h}\n{c.text}" for h, c in zip(headers, chunks)]
    return list(dict.fromkeys(texts))


def throughput(work: Path, files: int, embedder) -> dict:
    from memsearch.index import MemoryIndex

    root = work / f"tree-{files}"
    shutil.rmtree(root, ignore_errors=True)
    generate(root, files, seed=1)
    index = MemoryIndex(root, db=work / f"db-{files}", embedder=embedder, rebuild=True)
    texts = _embed_texts(root, index)
    embedder.embed_documents(texts[:64])  # warm up
    started = time.perf_counter()
    embedder.embed_documents(texts)
    raw = time.perf_counter() - started
    started = time.perf_counter()
    report = index.sync()
    full = time.perf_counter() - started
    return {
        "files": files, "chunks": report.chunks_total, "unique_texts": len(texts),
        "raw_encode_s": round(raw, 2), "raw_chunks_per_s": round(len(texts) / raw, 1),
        "index_s": round(full, 2), "index_chunks_per_s": round(report.chunks_embedded / full, 1),
        "ratio_to_raw": round(raw / full, 3), "index": index,
    }


def resync(index, repeats: int = 5) -> dict:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        report = index.sync()
        times.append(time.perf_counter() - started)
        assert not report.changed
    # a one-line edit in the middle of one file
    target = sorted((index.root / "notes").rglob("2*.md"))[0]
    lines = target.read_text().splitlines()
    lines[len(lines) // 2] += " (edited)"
    target.write_text("\n".join(lines) + "\n")
    started = time.perf_counter()
    report = index.sync()
    edit_s = time.perf_counter() - started
    return {"noop_resync_s_median": round(statistics.median(times), 4), "noop_resync_s_max": round(max(times), 4),
            "edit_resync_s": round(edit_s, 3), "edit_chunks_embedded": report.chunks_embedded,
            "edit_chunks_reused": report.chunks_reused, "edit_file_chunks": report.chunks_embedded + report.chunks_reused}


def latency(index, queries: list[str], repeats: int = 1) -> dict:
    out = {}
    for mode in ("hybrid", "vector", "keyword"):
        for q in queries[:5]:
            index.search(q, k=10, mode=mode)  # warm
        times = []
        for _ in range(repeats):
            for q in queries:
                started = time.perf_counter()
                index.search(q, k=10, mode=mode)
                times.append((time.perf_counter() - started) * 1000)
        times.sort()
        out[mode] = {"p50_ms": round(statistics.median(times), 2), "p95_ms": round(times[int(0.95 * (len(times) - 1))], 2)}
    return out


def main(argv=None) -> int:
    from memsearch.embedder import load_embedder

    parser = argparse.ArgumentParser(description="memsearch engine speed benchmark")
    parser.add_argument("--files", type=int, default=1000, help="files of the re-sync tree")
    parser.add_argument("--chunks", type=int, default=10_000, help="chunks of the latency index (approximate)")
    parser.add_argument("--out", default="bench-results/speed")
    args = parser.parse_args(argv)
    work = Path(args.out)
    work.mkdir(parents=True, exist_ok=True)
    embedder = load_embedder()
    small = throughput(work, args.files, embedder)
    index = small.pop("index")
    result = {"throughput": small, "resync": resync(index)}
    print(json.dumps(result, indent=2), flush=True)
    big_files = max(args.files, int(args.files * args.chunks / max(small["chunks"], 1)))
    big = throughput(work, big_files, embedder)
    big_index = big.pop("index")
    planted = generate(work / "queries-only", 200, seed=1)  # same seed: the same first 200 facts
    shutil.rmtree(work / "queries-only")
    result["throughput_large"] = big
    result["latency"] = latency(big_index, [p.query for p in planted]) | {"chunks": big["chunks"]}
    result["index_disk_mb"] = round(big_index.store.disk_bytes() / 2**20, 1)
    result["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    (work / "results.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
