"""The keyword path: LanceDB's full-text search against the in-memory BM25 (memsearch.engine.search.bm25).

On all ten LoCoMo conversations in one tree (2.3k chunks) and on copies of it in one index
(about 9k chunks), timed interleaved in one process so that the machine's load falls on both
alike: the LanceDB call as the engine makes it, with ``fast_search``, after ``prewarm_index``,
the in-memory search, and hybrid search with each keyword path; the in-memory copy's build
(first, and again after one edit); how far the two agree (top-1 and top-10 of every LoCoMo
question, score differences); and both after ``--edits`` single-file syncs (LanceDB's
unindexed tail, folded by the engine past FTS_TAIL_MAX_ROWS).

    python -m benchmarks.research.keyword --locomo /path/to/locomo10.json --copies 1,4 --edits 1000
    python -m benchmarks.research.keyword --locomo /path/to/locomo10.json --quality   # LoCoMo recall, each path
"""

from __future__ import annotations

import json
import os
import re
import shutil
import statistics
import time
from pathlib import Path

from benchmarks.perf.speed import interleaved

__all__ = ["agreement", "build_times", "size_run", "run", "quality", "main"]

N = 50  # candidates asked of the keyword leg (k=10 searches ask max(k * CANDIDATE_FACTOR, MIN_CANDIDATES))


def _calls(index, lance, table, flt) -> dict:
    from memsearch.engine.search.cjk import keyword_text

    copy = index.keywords.ensure(index.store, (index._build, table.version))

    def fast(q):
        return (table.search(keyword_text(q), query_type="fts", fts_columns="search_text").fast_search().limit(N)
                .select(["id", "_score"]).to_list())

    return {"lancedb": lambda q: lance.searcher.keyword(q, N, flt), "lancedb_fast_search": fast,
            "memory": lambda q: copy.search(keyword_text(q), N, flt)}


def _ratios(lat: dict) -> dict:
    ref = lat["lancedb"]["p50_ms"]
    return {name: round(v["p50_ms"] / ref, 3) for name, v in lat.items() if name != "lancedb"}


def _content(row: dict) -> tuple[str, int]:
    """A row as its content: the copies of one chunk (``copy-N/...``) tie exactly, in any order."""
    return re.sub(r"^copy-\d+/", "", row["path"]), row["start_line"]


def agreement(index, lance, table, queries: list[str]) -> dict:
    """How often the in-memory BM25 and LanceDB agree on LoCoMo's questions (top-1 and top-10 by
    content, since the order of exactly tied copies is arbitrary in both), and their largest
    relative score difference on one row."""
    from memsearch.engine.storage.filter import Filter

    copy = index.keywords.ensure(index.store, (index._build, table.version))
    top1 = top10 = 0
    worst = 0.0
    for q in queries:
        a, b = lance.searcher.keyword(q, N, Filter()), index.searcher.keyword(q, N, Filter())
        top1 += [_content(r) for r in a[:1]] == [_content(r) for r in b[:1]]
        top10 += {_content(r) for r in a[:10]} == {_content(r) for r in b[:10]}
        sa, sb = {r["id"]: r["score"] for r in a}, {r["id"]: r["score"] for r in b}
        worst = max([worst] + [abs(sa[i] - sb[i]) / sa[i] for i in set(sa) & set(sb) if sa[i]])
    assert copy is index.keywords.ensure(index.store, (index._build, table.version))
    return {"queries": len(queries), "same_top1": round(top1 / len(queries), 4),
            "same_top10_set": round(top10 / len(queries), 4), "max_relative_score_difference": round(worst, 4)}


def build_times(index, table, rounds: int = 3) -> dict:
    """Seconds to build the copy from nothing, and from the previous version's copy (no change)."""
    from memsearch.engine.search.bm25 import MemoryBM25

    columns, first, again = index.keywords.columns, [], []
    for _ in range(rounds):
        t0 = time.perf_counter()
        copy = MemoryBM25(index.store.read(columns + ["search_text"]), "bench")
        first.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        MemoryBM25(index.store.read(columns + ["search_text"]), "bench", previous=copy)
        again.append(time.perf_counter() - t0)
    return {"first_s": round(statistics.median(first), 3), "next_version_s": round(statistics.median(again), 3)}


def size_run(index, lance, queries: list[str]) -> dict:
    from memsearch.engine.storage.filter import Filter

    table = index.store.chunks()
    out = {"rows": table.count_rows(), "fulltext_tail": index.store.fulltext_tail(), "load": os.getloadavg(),
           "build": build_times(index, table)}
    out["cold"] = interleaved(_calls(index, lance, table, Filter()), queries)
    for ix in table.list_indices():
        table.prewarm_index(ix.name)
    out["prewarmed"] = lat = interleaved(_calls(index, lance, table, Filter()), queries)
    out["ratios_to_lancedb"] = _ratios(lat)
    scoped = Filter(scope=sorted({r["dir"] for r in table.search().select(["dir"]).limit(None).to_list()})[-1])
    out["scoped"] = interleaved(_calls(index, lance, table, scoped), queries)
    hybrid = interleaved({"hybrid_lancedb": lambda q: lance.search(q, k=10), "hybrid_memory": lambda q: index.search(q, k=10),
                          "query_embedding": index.embedder.embed_query}, queries)
    out["hybrid"] = hybrid | {"memory_over_lancedb": round(hybrid["hybrid_memory"]["p50_ms"] / hybrid["hybrid_lancedb"]["p50_ms"], 3)}
    return out


def _edits(index, edits: int) -> None:
    notes = index.root / "bench-edits"
    notes.mkdir(exist_ok=True)
    for i in range(edits):
        (notes / f"e{i % 50:02}.md").write_text(f"# Edit {i}\n\nedit number {i} of the keyword tail benchmark\n")
        index.sync(only=[f"bench-edits/e{i % 50:02}.md"])


def run(work: Path, locomo=None, copies=(1, 4), queries: int = 200, edits: int = 0) -> dict:
    from benchmarks.quality import locomo_corpus
    from memsearch import MemoryIndex

    corpus = locomo_corpus(work, locomo, merged=True)
    root = corpus.trees[""]
    qs = [q.query for q in corpus.questions]
    index = MemoryIndex(root, db=work / "db-keyword", keyword="memory")
    result = {"load_start": os.getloadavg(), "queries": min(queries, len(qs)), "sizes": []}
    for n in copies:
        for c in range(1, n):
            target = root / f"copy-{c}"
            if not target.exists():
                shutil.copytree(root, target, ignore=shutil.ignore_patterns("copy-*", ".memsearch"))
        index.sync()
        lance = MemoryIndex(root, db=work / "db-keyword", keyword="lancedb", embedder=index.embedder)
        result["sizes"].append({"copies": n, **size_run(index, lance, qs[:queries])})
        result["sizes"][-1]["agreement"] = agreement(index, lance, index.store.chunks(), qs)  # every question
        print(json.dumps(result["sizes"][-1]), flush=True)
    if edits:
        _edits(index, edits)
        table = index.store.chunks()
        lance = MemoryIndex(root, db=work / "db-keyword", keyword="lancedb", embedder=index.embedder)
        t0 = time.perf_counter()
        index.keywords.ensure(index.store, (index._build, table.version))
        built = time.perf_counter() - t0
        from memsearch.engine.storage.filter import Filter

        lat = interleaved(_calls(index, lance, table, Filter()), qs[:queries])
        result["after_edits"] = {"edits": edits, "rows": table.count_rows(), "fulltext_tail": index.store.fulltext_tail(),
                                 "copy_rebuild_s": round(built, 3), "latency": lat, "ratios_to_lancedb": _ratios(lat)}
    result["load_end"] = os.getloadavg()
    return result


def quality(work: Path, locomo=None, configs=("keyword", "hybrid-convex", "hybrid-rrf")) -> dict:
    """LoCoMo (one index per conversation, as ``python -m benchmarks quality --corpus locomo``) scored
    with each keyword path over the same indexes: file R@5, turn recall, per split."""
    from benchmarks.metrics import Span
    from benchmarks.quality import CONFIGS, K, locomo_corpus, score
    from memsearch import MemoryIndex
    from memsearch.engine.embed.embedder import load_embedder

    corpus = locomo_corpus(work, locomo)
    embedder = load_embedder()
    for key, root in corpus.trees.items():
        MemoryIndex(root, db=work / "db-quality" / key, embedder=embedder).sync()
    hits = {}
    for path in ("lancedb", "memory"):
        indexes = {key: MemoryIndex(root, db=work / "db-quality" / key, embedder=embedder, keyword=path)
                   for key, root in corpus.trees.items()}
        for index in indexes.values():
            table = index.store.chunks()
            if path == "memory":
                index.keywords.ensure(index.store, (index._build, table.version))
        for config in configs:
            mode, fusion = CONFIGS[config]
            for index in indexes.values():
                index.fusion = fusion or index.fusion
            hits[f"{config}/{path}"] = {q.qid: [Span(h.path, h.start_line, h.end_line) for h in
                                                indexes[q.tree].search(q.query, k=K, mode=mode)] for q in corpus.questions}
    scored = score(corpus, hits)
    out = {"questions": len(corpus.questions), "results": {}}
    for config in configs:
        pair = {path: scored[f"{config}/{path}"] for path in ("lancedb", "memory")}
        rows = {path: {"all": r["scores"]["all"]} | {s: r["splits"][s]["all"] for s in r.get("splits", {})}
                for path, r in pair.items()}
        out["results"][config] = rows | {"memory_minus_lancedb": {
            split: {m: round(rows["memory"][split][m] - v, 4) for m, v in rows["lancedb"][split].items() if m != "n"}
            for split in rows["lancedb"]}}
    return out


def main(argv=None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m benchmarks.research.keyword", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("bench-results/keyword"))
    parser.add_argument("--locomo")
    parser.add_argument("--copies", default="1,4", help="LoCoMo tree copies in one index, per size")
    parser.add_argument("--queries", type=int, default=200, help="questions timed per call")
    parser.add_argument("--edits", type=int, default=0, help="single-file syncs before the last comparison")
    parser.add_argument("--quality", action="store_true", help="LoCoMo recall with each keyword path instead")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.quality:
        result = quality(args.out, args.locomo)
        (args.out / "keyword-quality.json").write_text(json.dumps(result, indent=2))
        print(json.dumps(result, indent=2))
        return 0
    result = run(args.out, args.locomo, [int(c) for c in args.copies.split(",")], args.queries, args.edits)
    (args.out / "keyword.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
