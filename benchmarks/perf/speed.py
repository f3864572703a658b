"""Speed and cost of the engine on synthetic trees (see benchmarks/synthetic.py).

* indexing throughput (chunks/s) against raw ``SentenceTransformer.encode`` on the same texts;
* no-op re-sync and a one-line edit;
* query latency per search configuration, warm, query embedding included;
* index size on disk and peak RSS.

:func:`run_sizes` (used by ``python -m benchmarks speed``) measures all of it at each size in a
fresh child process (``python -m benchmarks.perf.speed _size ...``, :func:`main`), so that peak RSS
and warm-up belong to one size only, together with the synthetic corpus' retrieval quality at
that size; :func:`daemon_freshness` runs benchmarks/perf/daemon.py small.
"""

from __future__ import annotations

import json
import resource
import shutil
import statistics
import time
from pathlib import Path

from benchmarks import quality
from benchmarks.common import REPO, bench_embedder, child_env
from benchmarks.synthetic import generate_chunks

__all__ = ["resync", "size_run", "run_sizes", "daemon_freshness", "interleaved", "bare_encoder", "encoders",
           "keyword_options", "paths_run", "main"]

#: Texts of the raw-encode comparison at one size: a random sample of the very texts the
#: indexer embeds (the whole set up to this many), so 100k chunks need not be encoded twice.
RAW_SAMPLE = 2000
LATENCY_QUERIES = 100
QUALITY_QUESTIONS = 200


def _embed_texts(index) -> list[str]:
    """Exactly the texts the indexer embeds for the index's tree (context header + chunk text)."""
    from memsearch import scan
    from memsearch.engine.ingest.batches import embedded_texts

    texts = []
    for rel in scan(index.root).external_files:
        text = (index.root / rel).read_bytes().decode("utf-8", errors="replace").removeprefix("\ufeff")
        texts += embedded_texts(rel, text, index.chunker, index.embedder, index.encoding)
    return list(dict.fromkeys(texts))


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


# --- per-size runs (python -m benchmarks speed) ------------------------------------------------
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

    from memsearch import MemoryIndex

    root, db = work / f"tree-{chunks}", work / f"db-{chunks}"
    shutil.rmtree(root, ignore_errors=True)
    started = time.perf_counter()
    planted = generate_chunks(root, chunks, seed=seed)
    write_s = time.perf_counter() - started
    embedder = bench_embedder()  # the default model (a hashing stand-in in smoke tests)
    embedder.embed_query("warm up")
    index = MemoryIndex(root, db=db, embedder=embedder, rebuild=True)
    texts = _embed_texts(index)
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
    """:func:`size_run` for each size, each in a fresh ``python -m benchmarks.perf.speed _size`` child."""
    import subprocess
    import sys

    results = []
    work.mkdir(parents=True, exist_ok=True)
    env = child_env()
    for chunks in sizes:
        out = work / f"size-{chunks}.json"
        out.unlink(missing_ok=True)
        with open(work / f"size-{chunks}.log", "w") as log:
            proc = subprocess.Popen([sys.executable, "-m", "benchmarks.perf.speed", "_size", str(chunks), str(work), str(out)],
                                    stdout=subprocess.PIPE, stderr=log, text=True, env=env, cwd=str(REPO))
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
    """benchmarks/perf/daemon.py at a small size (its live phases only): write-to-searchable times."""
    import subprocess
    import sys

    out = work / "daemon"
    out.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "benchmarks.perf.daemon", "--out", str(out), "--files", str(files), "--edits", str(edits),
           "--rapid", str(rapid), "--disk-edits", "0"]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=str(REPO),
                              env=child_env())
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout} s"}
    if proc.returncode != 0 or not (out / "daemon.json").is_file():
        tail = (proc.stderr or proc.stdout).strip().splitlines()
        return {"error": f"exit {proc.returncode}: {tail[-1] if tail else ''}"}
    data = json.loads((out / "daemon.json").read_text())
    keep = ("command", "tree", "full_index", "freshness_s", "rapid_edits", "reader_during_full_index",
            "reader_during_rapid_edits", "seconds")
    return {k: data[k] for k in keep if k in data}


# --- the query path against a bare model encode (python -m benchmarks.perf.speed paths) --------------
def interleaved(calls: dict, queries: list[str], warm: int = 5) -> dict:
    """p50/p95 ms of each ``calls[name](query)``, run in turn on every query.

    Each query goes through every call back to back, so that a noisy machine's load falls on
    all of them alike and their ratios stay meaningful when the absolute times do not.
    """
    for q in queries[:warm]:
        for call in calls.values():
            call(q)
    times: dict[str, list[float]] = {name: [] for name in calls}
    for q in queries:
        for name, call in calls.items():
            t0 = time.perf_counter()
            call(q)
            times[name].append((time.perf_counter() - t0) * 1000)
    out = {}
    for name, ts in times.items():
        ts.sort()
        out[name] = {"p50_ms": round(statistics.median(ts), 2), "p95_ms": round(ts[int(0.95 * (len(ts) - 1))], 2)}
    return out


def bare_encoder():
    """The reference: ``SentenceTransformer.encode`` of one query on one torch thread, in this process."""
    import torch
    from sentence_transformers import SentenceTransformer

    from memsearch.engine.embed.embedder import load_embedder

    torch.set_num_threads(1)  # the benchmark's own process: the reference is one thread
    model = SentenceTransformer(load_embedder(backend="torch").source, device="cpu", local_files_only=True)
    return lambda q: model.encode([q], normalize_embeddings=True, show_progress_bar=False)


def encoders(texts: list[str], queries: list[str], rounds: int = 3) -> dict:
    """torch vs ONNX Runtime FP32 vs int8: one query (p50), documents (chunks/s), cosine to torch."""
    import os

    import numpy as np

    from memsearch.engine.embed.embedder import load_embedder

    models = {
        "torch": load_embedder(backend="torch"),
        "onnx-fp32": load_embedder(backend="onnx", quantize="none"),
        "onnx-int8": load_embedder(backend="onnx", quantize="int8"),
    }
    out = {name: {} for name in models}
    load_start = os.getloadavg()
    for name, lat in interleaved({n: m.embed_query for n, m in models.items()}, queries).items():
        out[name]["query"] = lat
    reference_q = np.stack([models["torch"].embed_query(q) for q in queries])
    reference_d = models["torch"].embed_documents(texts)
    spent = {name: [] for name in models}
    for _ in range(rounds):  # alternating rounds: the load is shared out
        for name, model in models.items():
            t0 = time.perf_counter()
            vectors = model.embed_documents(texts)
            spent[name].append(time.perf_counter() - t0)
            out[name]["document_cosine_min"] = round(float((vectors * reference_d).sum(axis=1).min()), 4)
    for name, model in models.items():
        out[name]["documents_per_s"] = round(len(texts) / statistics.median(spent[name]), 1)
        q = np.stack([model.embed_query(t) for t in queries])
        out[name]["query_cosine_min"] = round(float((q * reference_q).sum(axis=1).min()), 4)
    for name in models:
        out[name]["documents_over_torch"] = round(out[name]["documents_per_s"] / out["torch"]["documents_per_s"], 2)
    return {
        "texts": len(texts),
        "queries": len(queries),
        "rounds": rounds,
        "load_start": load_start,
        "load_end": os.getloadavg(),
        "results": out,
    }


def keyword_options(index, queries: list[str], edits: int = 1000) -> dict:
    """LanceDB full-text search as the engine runs it, with ``fast_search``, after prewarm, and
    after ``edits`` single-row commits without ``optimize()`` (an unindexed tail)."""
    from memsearch.engine.storage.filter import Filter

    table, flt, n = index.store.chunks(), Filter(), 50

    def fast(q):
        return (
            table.search(q, query_type="fts", fts_columns="search_text")
            .fast_search()
            .limit(n)
            .select(["id", "_score"])
            .to_list()
        )

    out = {
        "rows": table.count_rows(),
        "cold": interleaved({"fts": lambda q: index.searcher.keyword(q, n, flt), "fts_fast_search": fast}, queries),
    }
    for ix in table.list_indices():
        table.prewarm_index(ix.name)
    out["prewarmed"] = interleaved(
        {"fts": lambda q: index.searcher.keyword(q, n, flt), "fts_fast_search": fast}, queries
    )
    notes = index.root / "bench-edits"
    notes.mkdir(exist_ok=True)
    for i in range(edits):
        (notes / f"e{i % 50:02}.md").write_text(f"# Edit {i}\n\nedit number {i} of the keyword tail benchmark\n")
        index.sync(only=[f"bench-edits/e{i % 50:02}.md"])
    table = index.store.chunks()
    stats = table.index_stats(next(ix.name for ix in table.list_indices() if tuple(ix.columns) == ("search_text",)))
    out["after_edits"] = {
        "edits": edits,
        "unindexed_rows": getattr(stats, "num_unindexed_rows", None),
        **interleaved({"fts": lambda q: index.searcher.keyword(q, n, flt)}, queries),
    }
    return out


def paths_run(work: Path, locomo=None, copies=(1, 4), queries: int = 200, tail_edits: int = 0) -> dict:
    """Warm hybrid search against a bare encode of the same query, on all ten LoCoMo conversations
    in one tree (2.3k chunks) and on ``copies`` of that tree in one index (vectors reused by
    content hash, so only the first copy is embedded): the issue-11 ratio targets."""
    import os

    from benchmarks.quality import locomo_corpus
    from memsearch import MemoryIndex

    corpus = locomo_corpus(work, locomo, merged=True)
    root = corpus.trees[""]
    qs = [q.query for q in corpus.questions][:queries]
    reference = bare_encoder()
    index = MemoryIndex(root, db=work / "db-paths")
    result = {"load_start": os.getloadavg(), "queries": len(qs), "runs": []}
    for n in copies:
        for c in range(1, n):
            target = root / f"copy-{c}"
            if not target.exists():
                shutil.copytree(root, target, ignore=shutil.ignore_patterns("copy-*", ".memsearch"))
        started = time.perf_counter()
        report = index.sync()
        lat = interleaved(
            {
                "bare_encode": reference,
                "hybrid": lambda q: index.search(q, k=10),
                "vector": lambda q: index.search(q, k=10, mode="vector"),
                "keyword": lambda q: index.search(q, k=10, mode="keyword"),
                "query_embedding": index.embedder.embed_query,
            },
            qs,
        )
        result["runs"].append(
            {
                "copies": n,
                "chunks": report.chunks_total,
                "sync_s": round(time.perf_counter() - started, 1),
                "latency": lat,
                "load": os.getloadavg(),
                "vector_top10_agreement": _exact_agreement(index, qs),
                "hybrid_over_bare_encode": round(lat["hybrid"]["p50_ms"] / lat["bare_encode"]["p50_ms"], 3),
            }
        )
        print(json.dumps(result["runs"][-1]), flush=True)
    if tail_edits:
        result["keyword_options"] = keyword_options(index, qs, tail_edits)
    result["load_end"] = os.getloadavg()
    return result


def _exact_agreement(index, queries: list[str]) -> float | None:
    """Mean share of the vector leg's top 10 rows (scores to 6 decimals: copies tie) that an exact scan
    of the same in-memory copy also ranks in its top 10; None when the copy is scanned exactly anyway."""
    import numpy as np

    from memsearch.engine.search.flat import QUANTIZED_MIN_ROWS
    from memsearch.engine.storage.filter import Filter

    copy = index.searcher._flat
    if copy is None or copy.bits is None or len(copy.rows) < QUANTIZED_MIN_ROWS:
        return None
    shares = []
    for q in queries:
        vector = index.embedder.embed_query(q)
        screened = [round(r["score"], 6) for r in copy.search(vector, 10, Filter())]
        exact = np.sort(np.einsum("ij,j->i", copy.matrix, vector / np.linalg.norm(vector)))[::-1][:10]
        shares.append(sum(1 for a, b in zip(screened, np.round(exact, 6)) if a == b) / 10)
    return round(float(np.mean(shares)), 4)


def main(argv=None) -> int:
    """``_size CHUNKS WORK OUT.json`` (the child of :func:`run_sizes`), or ``paths`` / ``encoders``."""
    import argparse
    import sys

    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in ("paths", "encoders"):
        parser = argparse.ArgumentParser(prog=f"python -m benchmarks.perf.speed {argv[0]}")
        parser.add_argument("--out", type=Path, default=Path("bench-results/speed-paths"))
        parser.add_argument("--locomo")
        parser.add_argument("--copies", default="1,4", help="LoCoMo tree copies in one index (paths)")
        parser.add_argument("--queries", type=int, default=200)
        parser.add_argument("--tail-edits", type=int, default=0, help="keyword options after this many edits (paths)")
        parser.add_argument("--texts", type=int, default=256, help="chunk-sized texts to embed (encoders)")
        parser.add_argument("--rounds", type=int, default=3, help="alternating document rounds (encoders)")
        args = parser.parse_args(argv[1:])
        args.out.mkdir(parents=True, exist_ok=True)
        if argv[0] == "paths":
            result = paths_run(
                args.out, args.locomo, [int(c) for c in args.copies.split(",")], args.queries, args.tail_edits
            )
        else:
            from benchmarks.quality import locomo_corpus

            corpus = locomo_corpus(args.out, args.locomo, merged=True)
            files = sorted(corpus.trees[""].rglob("2*.md"))
            lines = [line for f in files[:60] for line in f.read_text().splitlines() if line.strip()]
            texts = ["\n".join(lines[i : i + 6]) for i in range(0, len(lines), 6)][: args.texts]  # chunk-sized
            result = encoders(texts, [q.query for q in corpus.questions][: args.queries], args.rounds)
        (args.out / f"{argv[0]}.json").write_text(json.dumps(result, indent=2))
        print(json.dumps(result, indent=2))
        return 0
    if len(argv) != 4 or argv[0] != "_size":
        print(
            "usage: python -m benchmarks speed [--size 1000,10000] [--out DIR] "
            "(python -m benchmarks.perf.speed only runs one size for it: _size CHUNKS WORK OUT.json)",
            file=sys.stderr,
        )
        return 2
    chunks, work, out = int(argv[1]), Path(argv[2]), Path(argv[3])
    out.write_text(json.dumps(size_run(work, chunks), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
