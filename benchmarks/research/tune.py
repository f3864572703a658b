"""The cheap tuning loop for ranking: dump every LoCoMo question's candidates once, replay rankings offline.

``dump`` indexes the LoCoMo trees (one per conversation) with the engine as it is and saves,
for every question, the BM25 and the cosine candidate lists (top :data:`POOL`, the rows the
engine's hybrid search would see) with the query vector, plus each tree's chunk vectors; a
ranking variant (:data:`VARIANTS`, from :mod:`benchmarks.research.tune_rules` and :mod:`benchmarks.research.tune_vectors`)
is then a function of those lists, scored on the tuning split (conversations 0-4), the held-out test
split (5-9) and all ten in a second or two::

    python -m benchmarks.research.tune dump --out /tmp/tune          # minutes: embeds ~2.3k chunks
    python -m benchmarks.research.tune lines --out /tmp/tune         # for the lines-* rows: embeds ~5.9k turns alone
    python -m benchmarks.research.tune expand --out /tmp/tune        # for the rm3-* rows: a second BM25 query each
    python -m benchmarks.research.tune eval --out /tmp/tune [NAME ...]

Every variant is a technique measured for hybrid ranking (shipped or not); the results and
why each was or was not adopted are in ``memsearch/engine/search/fusion.py``'s docstring.

Variants that change what is embedded or indexed need a fresh dump (and their own engine
change); this loop is for everything that only re-ranks.
"""

from __future__ import annotations

import argparse
import pickle
import re
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks import quality
from benchmarks.metrics import Span
from benchmarks.research import tune_rules, tune_spread, tune_vectors
from benchmarks.research.tune_rules import EXPAND_TERMS, POOL, baseline
from memsearch.engine.search import shape

__all__ = ["POOL", "VARIANTS", "dump", "embed_lines", "expand", "evaluate", "main"]

#: The row columns the engine's searches return (memsearch.engine.index reads the same).
COLUMNS = ["id", "path", "dir", "heading", "start_line", "end_line", "text", "date"]


#: What ``eval`` prints per corpus: LoCoMo's four measures, and for the agent-written tree the
#: right note first (hit@1), in the top 3, MRR and the share of questions where a MEMORY.md
#: ranks above the answer.
MEASURES = {"locomo": ("file_recall@5", "file_recall@10", f"turn_recall@{quality.LINE_BUDGET}lines", "mrr@10"),
            "agentmem": ("hit@1", "file_recall@3", "mrr@10", "index_above@10"),
            "longchat": ("file_recall@5", "turn_recall@10hits", "turn_recall@6000chars", "mrr@10")}
MEASURES["longchat-alt"] = MEASURES["longchat"]
MEASURES["longchat-hard"] = MEASURES["longchat-ask"] = MEASURES["longchat"]
MEASURES["codeagent"] = ("hit@1", "file_recall@5", "turn_recall@6000chars", "index_above@10")


_corpus = quality.dumped_corpus


def dump(out: Path, locomo=None, corpus_name: str = "locomo", max_tokens: int | None = None,
         long_line_factor: float | None = None) -> Path:
    from benchmarks.common import bench_embedder
    from memsearch import MemoryIndex
    from memsearch.engine.ingest.chunker import ChunkerConfig
    from memsearch.engine.search.flat import FlatVectors
    from memsearch.engine.storage.filter import Filter

    out.mkdir(parents=True, exist_ok=True)
    (out / "corpus.txt").write_text(corpus_name)
    corpus = _corpus(out, locomo)
    embedder = bench_embedder()
    data: dict = {"trees": {}, "questions": {}}
    flt = Filter()
    for key, root in corpus.trees.items():
        given = {"max_tokens": max_tokens, "long_line_factor": long_line_factor}
        chunker = ChunkerConfig(**{k: v for k, v in given.items() if v is not None}) if any(given.values()) else None
        index = MemoryIndex(root, db=out / "db" / (key or "_"), embedder=embedder, rebuild=True, chunker=chunker)
        index.sync()
        table = index.store.chunks()
        flat = FlatVectors(index.store.read(COLUMNS + ["vector"]), table.version)
        data["trees"][key] = {"rows": flat.rows, "matrix": flat.matrix}
        for q in corpus.questions:
            if q.tree != key:
                continue
            vec = embedder.embed_query(q.query)
            data["questions"][q.qid] = {"vector": np.asarray(vec, np.float32),
                                        "keyword": index.searcher.keyword(q.query, POOL, flt),
                                        "vec": flat.search(vec, POOL, flt)}
        index.close()
        print(f"dumped {key}", file=sys.stderr, flush=True)
    path = out / "candidates.pkl"
    path.write_bytes(pickle.dumps(data))
    return path


def embed_lines(out: Path) -> Path:
    """Every non-heading line of every chunk embedded on its own (the ``lines-*`` variants)."""
    from benchmarks.common import bench_embedder

    data = pickle.loads((out / "candidates.pkl").read_bytes())
    embedder = bench_embedder()
    result = {}
    for key, tree in data["trees"].items():
        texts: dict[tuple[str, int], str] = {}
        for r in tree["rows"]:
            for i, line in enumerate(r["text"].split("\n")):
                if line.strip() and not line.startswith("#"):
                    texts[(r["path"], r["start_line"] + i)] = line
        keys = list(texts)
        matrix = np.asarray(embedder.embed_documents([texts[k] for k in keys]), np.float32)
        matrix /= np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
        result[key] = {"keys": keys, "matrix": matrix}
        print(f"embedded the lines of {key}", file=sys.stderr, flush=True)
    path = out / "lines.pkl"
    path.write_bytes(pickle.dumps(result))
    return path


#: Words left out of expansion terms (BM25 in the engine drops English stop words itself).
_STOP = frozenset("""a an and are as at be but by for if in into is it no not of on or such that the their then
there these they this to was will with i you he she we me my your his her our what when where who why how did do
does has have had been would could should which can about from so just its im""".split())


def _words(text: str) -> list[str]:
    return [w for w in re.findall(r"[a-z0-9']+", text.lower()) if w not in _STOP and len(w) > 2]


def expand(out: Path, locomo=None) -> Path:
    """RM3-style pseudo-relevance feedback on the BM25 side: for each question, the terms of its
    top 3 hybrid hits weighted by share of the hit x fused score x idf (words in half the tree or
    more left out), and the BM25 list of the query plus the best :data:`EXPAND_TERMS` of them."""
    import math
    from collections import Counter

    from benchmarks.common import bench_embedder
    from memsearch import MemoryIndex
    from memsearch.engine.storage.filter import Filter

    data = pickle.loads((out / "candidates.pkl").read_bytes())
    corpus = quality.locomo_corpus(out / "trees", locomo)
    embedder = bench_embedder()
    result = {}
    for key, root in corpus.trees.items():
        rows = data["trees"][key]["rows"]
        df = Counter(w for r in rows for w in set(_words(r["text"])))
        with MemoryIndex(root, db=out / "db" / key, embedder=embedder) as index:
            for q in corpus.questions:
                if q.tree != key:
                    continue
                d = data["questions"][q.qid]
                weight: Counter = Counter()
                for r in baseline(q, [dict(x) for x in d["vec"]], [dict(x) for x in d["keyword"]], {})[:3]:
                    counts = Counter(_words(r["text"]))
                    for w, n in counts.items():
                        weight[w] += n / sum(counts.values()) * r["score"]
                asked = set(_words(q.query))
                ranked = sorted(((s * math.log(len(rows) / (1 + df[w])), w) for w, s in weight.items()
                                 if w not in asked and df[w] < len(rows) / 2), reverse=True)
                terms = [w for _, w in ranked]
                result[q.qid] = {t: index.searcher.keyword(f"{q.query} {' '.join(terms[:t])}", POOL, Filter()) for t in EXPAND_TERMS}
        print(f"expanded the queries of {key}", file=sys.stderr, flush=True)
    path = out / "expanded.pkl"
    path.write_bytes(pickle.dumps(result))
    return path


#: Every ranking variant ``eval`` knows, by name: the query-side rules, then the first-stage variants.
VARIANTS = tune_rules.VARIANTS | tune_vectors.VARIANTS | tune_spread.VARIANTS


def evaluate(out: Path, names=None, locomo=None, by_category: bool = False) -> dict:
    unknown = [n for n in names or () if n not in VARIANTS]
    if unknown:
        raise SystemExit(f"unknown variant {', '.join(unknown)}: choose from {', '.join(VARIANTS)}")
    if not (out / "candidates.pkl").is_file():
        raise SystemExit(f"no candidates in {out}: run `python -m benchmarks.research.tune dump --out {out}` first")
    data = pickle.loads((out / "candidates.pkl").read_bytes())
    lines = pickle.loads((out / "lines.pkl").read_bytes()) if (out / "lines.pkl").is_file() else {}
    expanded = pickle.loads((out / "expanded.pkl").read_bytes()) if (out / "expanded.pkl").is_file() else None
    corpus = _corpus(out, locomo)
    measures = MEASURES.get(corpus.name, MEASURES["locomo"])
    print(f"{corpus.name}: {' / '.join(measures)}", flush=True)
    results = {}
    extra = tune_vectors._extra(out)
    needs = {"lines-": bool(lines), "rm3-": expanded is not None}
    needs |= {prefix: pkl in extra for prefix, pkl in tune_vectors.NEEDS.items()}
    for name in names or [n for n in VARIANTS if all(ok or not n.startswith(p) for p, ok in needs.items())]:
        started = time.perf_counter()
        hits = {}
        for q in corpus.questions:
            d = data["questions"][q.qid]
            ctx = {
                "tree": data["trees"][q.tree],
                "vector": d["vector"],
                "question": q,
                "lines": lines.get(q.tree),
                "expanded": expanded,
                "extra": extra,
            }
            ranked = VARIANTS[name](q, [dict(r) for r in d["vec"]], [dict(r) for r in d["keyword"]], ctx)
            hits[q.qid] = [
                Span(h["path"], h["start_line"], h["end_line"]) for h in shape.merge_rows(ranked, quality.K)
            ]
        scored = quality.score(corpus, {name: hits})[name]
        row = {}
        for split, summary in [*scored.get("splits", {}).items(), ("all", scored["scores"])]:
            for cat, s in summary.items():
                if cat == "all" or (by_category and split == "all"):
                    row[split if cat == "all" else cat] = tuple(s[m] for m in measures)
        results[name] = row
        cells = "  ".join(f"{split} " + "/".join(f"{x:.3f}" for x in vals) for split, vals in row.items())
        print(f"{name:28s} {cells}  ({time.perf_counter() - started:.1f}s)", flush=True)
    return results


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.research.tune")
    parser.add_argument("what", choices=("dump", "lines", "expand", "eval"))
    parser.add_argument("names", nargs="*")
    parser.add_argument("--out", type=Path, default=Path("bench-results/tune"))
    parser.add_argument("--locomo")
    parser.add_argument("--corpus", default="locomo", help="dump: the corpus (locomo, agentmem, longchat, longchat-hard, codeagent)")
    parser.add_argument("--max-tokens", type=int, help="dump: chunk size (default: the engine's)")
    parser.add_argument("--long-line-factor", type=float, help="dump: budget factor for long-line sections")
    parser.add_argument("--by-category", action="store_true", help="eval: a column per question category too")
    args = parser.parse_intermixed_args(argv)
    if args.what == "dump":
        print(dump(args.out, args.locomo, args.corpus, args.max_tokens, args.long_line_factor))
    elif args.what == "lines":
        print(embed_lines(args.out))
    elif args.what == "expand":
        print(expand(args.out, args.locomo))
    else:
        evaluate(args.out, args.names, args.locomo, args.by_category)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
