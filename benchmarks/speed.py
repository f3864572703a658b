"""Speed and cost of the engine on synthetic trees (see benchmarks/synthetic.py).

* indexing throughput (chunks/s) against raw ``SentenceTransformer.encode`` on the same texts;
* no-op re-sync and a one-line edit on a tree of ``--files`` files;
* hybrid / vector / keyword query latency, warm, query embedding included, on ``--chunks`` chunks;
* index size on disk and peak RSS.

:func:`run_sizes` (used by ``memsearch bench speed``) measures all of it at each size in a
fresh child process (``python -m benchmarks.speed _size ...``), so that peak RSS and warm-up
belong to one size only, together with the synthetic corpus' retrieval quality at that size;
:func:`daemon_freshness` runs benchmarks/daemon.py small. :func:`main` is the older
two-size command line and stays as it was.
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

__all__ = ["throughput", "resync", "latency", "main", "size_run", "run_sizes", "daemon_freshness"]

#: Texts of the raw-encode comparison at one size: a random sample of the very texts the
#: indexer embeds (the whole set up to this many), so 100k chunks need not be encoded twice.
RAW_SAMPLE = 2000
LATENCY_QUERIES = 100
QUALITY_QUESTIONS = 200


def _embed_texts(root: Path, index) -> list[str]:
    """Exactly the texts the indexer embeds for this tree (context header + chunk text)."""
    from memsearch.engine.sync import _chunk_file
    from memsearch.memory.tokens import get_encoding
    from memsearch.memory.tree import scan

    enc = get_encoding()
    count = lambda t: len(enc.encode_ordinary(t))  # noqa: E731
    cut = lambda t, b: [enc.decode(enc.encode_ordinary(t)[i : i + b]) for i in range(0, len(enc.encode_ordinary(t)), b)]  # noqa: E731
    texts = []
    for rel in scan(root).external_files:
        _, chunks, headers = _chunk_file(rel, (root / rel).read_text(), count, cut, index.chunker, index.embedder)
        texts += [f"{h}\n{c.text}" for h, c in zip(headers, chunks)]
    return list(dict.fromkeys(texts))


def throughput(work: Path, files: int, embedder) -> dict:
    from memsearch.engine.index import MemoryIndex

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
    from memsearch.engine.embedder import load_embedder

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


# --- per-size runs (memsearch bench speed) ----------------------------------------------------
def _say(label: str, done: int, total: int) -> None:
    print(f"@progress {done} {total} {label}", flush=True)


class _PeakRss:
    """Samples this process's RSS every 50 ms (psutil) while in the ``with`` block."""

    def __init__(self):
        self.peak = 0

    def __enter__(self):
        import threading

        import psutil

        proc, self._stop = psutil.Process(), threading.Event()

        def sample():
            while not self._stop.wait(0.05):
                self.peak = max(self.peak, proc.memory_info().rss)

        self.peak = proc.memory_info().rss
        self._thread = threading.Thread(target=sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def size_run(work: Path, chunks: int, raw_sample: int = RAW_SAMPLE, seed: int = 1) -> dict:
    """Everything measured at one size (run it in a fresh process: see :func:`run_sizes`)."""
    import random

    from benchmarks import quality
    from benchmarks.run import _embedder
    from benchmarks.synthetic import generate_chunks
    from memsearch.engine.index import MemoryIndex

    root, db = work / f"tree-{chunks}", work / f"db-{chunks}"
    shutil.rmtree(root, ignore_errors=True)
    started = time.perf_counter()
    planted = generate_chunks(root, chunks, seed=seed)
    write_s = time.perf_counter() - started
    embedder = _embedder()  # the default model (a hashing stand-in in smoke tests)
    embedder.embed_query("warm up")
    index = MemoryIndex(root, db=db, embedder=embedder, rebuild=True)
    texts = _embed_texts(root, index)
    sample = random.Random(0).sample(texts, min(len(texts), raw_sample))
    embedder.embed_documents(sample[:64])  # warm up the batch path
    started = time.perf_counter()
    embedder.embed_documents(sample)
    raw_s = time.perf_counter() - started
    files = len(planted)

    def progress(phase, done_files, total_files, done_chunks):
        _say(f"{chunks:,} chunks: index", done_chunks, len(texts))

    with _PeakRss() as rss:
        started = time.perf_counter()
        report = index.sync(progress=progress)
        index_s = time.perf_counter() - started
    result = {
        "nominal_chunks": chunks, "files": files, "chunks": report.chunks_total, "tree_write_s": round(write_s, 2),
        "raw_sample": len(sample), "raw_encode_s": round(raw_s, 2), "raw_chunks_per_s": round(len(sample) / raw_s, 1),
        "index_s": round(index_s, 2), "index_chunks_per_s": round(report.chunks_embedded / index_s, 1),
        "index_peak_rss_mb": round(rss.peak / 2**20, 1),
    }
    result["ratio_to_raw"] = round(result["index_chunks_per_s"] / result["raw_chunks_per_s"], 3)
    _say(f"{chunks:,} chunks: re-sync", 0, 1)
    result["resync"] = resync(index)
    _say(f"{chunks:,} chunks: re-sync", 1, 1)
    result["index_disk_mb"] = round(index.store.disk_bytes() / 2**20, 2)
    queries = [p.query for p in planted[:: max(1, len(planted) // LATENCY_QUERIES)]][:LATENCY_QUERIES]
    result["latency"] = {}
    for n, (config, (mode, fusion)) in enumerate(quality.CONFIGS.items()):
        index.fusion = fusion or index.fusion
        for q in queries[:5]:
            index.search(q, k=10, mode=mode)  # warm
        times = []
        for q in queries:
            t0 = time.perf_counter()
            index.search(q, k=10, mode=mode)
            times.append((time.perf_counter() - t0) * 1000)
        times.sort()
        result["latency"][config] = {"p50_ms": round(statistics.median(times), 2),
                                     "p95_ms": round(times[int(0.95 * (len(times) - 1))], 2), "queries": len(times)}
        _say(f"{chunks:,} chunks: latency", n + 1, len(quality.CONFIGS))
    step = max(1, len(planted) // QUALITY_QUESTIONS)
    corpus = quality.Corpus("synthetic", {"": root}, [
        quality.Question(f"syn-{i}", p.query, (quality.Item(p.path, (p.line, p.line)),), p.kind)
        for i, p in enumerate(planted[::step][:QUALITY_QUESTIONS])])
    hits = {}
    for n, (config, (mode, fusion)) in enumerate(quality.CONFIGS.items()):
        index.fusion = fusion or index.fusion
        hits[config] = {q.qid: index.search(q.query, k=quality.K, mode=mode) for q in corpus.questions}
        _say(f"{chunks:,} chunks: quality", n + 1, len(quality.CONFIGS))
    result["quality"] = {"questions": len(corpus.questions), "results": quality.score(corpus, hits)}
    result["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    return result


def run_sizes(sizes, work: Path, progress=None) -> list[dict]:
    """:func:`size_run` for each size, each in a fresh ``python -m benchmarks.speed _size`` child."""
    import os
    import subprocess
    import sys

    results = []
    work.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    for chunks in sizes:
        out = work / f"size-{chunks}.json"
        out.unlink(missing_ok=True)
        with open(work / f"size-{chunks}.log", "w") as log:
            proc = subprocess.Popen([sys.executable, "-m", "benchmarks.speed", "_size", str(chunks), str(work), str(out)],
                                    stdout=subprocess.PIPE, stderr=log, text=True, env=env, cwd=str(Path(__file__).resolve().parents[1]))
            for line in proc.stdout:
                parts = line.split(maxsplit=3)
                if progress and len(parts) == 4 and parts[0] == "@progress":
                    progress(parts[3].strip(), int(parts[1]), int(parts[2]))
            code = proc.wait()
        if code != 0 or not out.is_file():
            tail = (work / f"size-{chunks}.log").read_text()[-400:].strip().splitlines()
            results.append({"nominal_chunks": chunks, "error": f"exit {code}: {tail[-1] if tail else ''}"})
        else:
            results.append(json.loads(out.read_text()))
        shutil.rmtree(work / f"tree-{chunks}", ignore_errors=True)  # trees and indexes of 100k are large
        shutil.rmtree(work / f"db-{chunks}", ignore_errors=True)
    return results


def daemon_freshness(work: Path, files: int = 300, edits: int = 20, rapid: int = 100, timeout: int = 900) -> dict:
    """benchmarks/daemon.py at a small size (its live phases only): write-to-searchable times."""
    import os
    import subprocess
    import sys

    out = work / "daemon"
    out.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "benchmarks.daemon", "--out", str(out), "--files", str(files), "--edits", str(edits),
           "--rapid", str(rapid), "--disk-edits", "0"]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=str(Path(__file__).resolve().parents[1]),
                              env=dict(os.environ, HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false"))
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout} s"}
    if proc.returncode != 0 or not (out / "daemon.json").is_file():
        tail = (proc.stderr or proc.stdout).strip().splitlines()
        return {"error": f"exit {proc.returncode}: {tail[-1] if tail else ''}"}
    data = json.loads((out / "daemon.json").read_text())
    keep = ("command", "tree", "full_index", "freshness_s", "rapid_edits", "reader_during_full_index", "reader_during_rapid_edits", "seconds")
    return {k: data[k] for k in keep if k in data}


if __name__ == "__main__":
    import sys

    if len(sys.argv) > 1 and sys.argv[1] == "_size":
        chunks, work, out = int(sys.argv[2]), Path(sys.argv[3]), Path(sys.argv[4])
        out.write_text(json.dumps(size_run(work, chunks), indent=2))
        raise SystemExit(0)
    raise SystemExit(main())
