"""Does a question that lists several things rank better searched as several questions? Replayed over tune dumps.

Round ten of benchmarks/research/LOG.md. "In which order did these happen: A, B, C?" is three searches in one: no
passage holds A, B and C, so the keyword leg's coverage of the whole question is low (which raises the vector
weight) and the question's one vector is a blend of three events. Two variants over a ``tune dump``:

* ``listcov-*``: the adaptive weight from each item's own keyword coverage (mean or least over the items), the
  ranking as the engine's otherwise;
* ``items-*``: each item searched by both legs on its own (its candidates cached in ``DIR/items.pkl`` by
  ``build``) and fused, then combined with the whole question's hybrid ranking: ``rr`` the items' first rows in
  turn then the whole ranking, ``rrf`` reciprocal rank fusion of all of them, ``max`` a row's best score over
  them, each ranking's scores divided by its first's.

::

    python -m benchmarks.research.decompose build DIR [DIR ...]      # the items' candidates, once per dump
    python -m benchmarks.research.decompose DIR [--questions]        # legs, hybrid and the variants by half
"""

from __future__ import annotations

import pickle
import sys
from pathlib import Path

import numpy as np

from benchmarks import quality
from benchmarks.research import legs
from benchmarks.research.tune_rules import POOL
from memsearch.engine.search import fusion
from memsearch.engine.search.order import rank_order
from memsearch.engine.search.query import listed_items

__all__ = ["items", "build", "VARIANTS", "main"]



def items(query: str, colon_only: bool = False) -> list[str] | None:
    """The things ``query`` lists (:func:`memsearch.engine.search.query.listed_items`), or None."""
    return listed_items(query, colon_only)


def _flat(tree: dict, vector: np.ndarray) -> list[dict]:
    scores = tree["matrix"] @ vector
    return [dict(tree["rows"][i], score=float(scores[i])) for i in np.argsort(-scores)[:POOL]]


def build(out: Path, locomo=None) -> Path:
    """Both legs' candidates of every listed item of every question of the dump in ``out``, in ``out/items.pkl``."""
    from benchmarks.common import bench_embedder
    from memsearch import MemoryIndex
    from memsearch.engine.storage.filter import Filter

    data = pickle.loads((out / "candidates.pkl").read_bytes())
    corpus = quality.dumped_corpus(out, locomo)
    embedder = bench_embedder()
    result = {}
    for key, root in corpus.trees.items():
        asked = [q for q in corpus.questions if q.tree == key and items(q.query)]
        if not asked:
            continue
        with MemoryIndex(root, db=out / "db" / (key or "_"), embedder=embedder) as index:
            for q in asked:
                parts = items(q.query)
                vectors = embedder.embed_queries(parts)
                result[q.qid] = [(p, index.searcher.keyword(p, POOL, Filter()),
                                  _flat(data["trees"][key], np.asarray(v, np.float32))) for p, v in zip(parts, vectors)]
    path = out / "items.pkl"
    path.write_bytes(pickle.dumps(result))
    return path


_ITEMS: dict = {}  # qid -> [(item, keyword rows, vector rows)] of the dump being analysed


def _listcov(agg, colon_only=False):
    def weight(query, multilingual=False, keyword=None):
        parts = items(query, colon_only)
        base = fusion.vector_weight(query, multilingual, None)
        if parts is None or keyword is None or base != fusion.VECTOR_WEIGHT:
            return fusion.vector_weight(query, multilingual, keyword)
        return fusion.coverage_weight(agg([fusion.keyword_coverage(p, keyword) for p in parts]))

    return lambda q, vec, kw: fusion.hybrid("convex", q.query, vec, kw, weight=weight)


def _combined(how: str, colon_only: bool = False, whole_weight: float = 1.0):
    def run(q, vec, kw):
        whole = fusion.hybrid("convex", q.query, vec, kw)
        got = _ITEMS.get(q.qid)
        if not got or (colon_only and not items(q.query, True)):
            return whole
        parts = [fusion.hybrid("convex", p, [dict(r) for r in v], [dict(r) for r in k], stages=()) for p, k, v in got]
        if how == "rr":
            seen: set = set()
            return [r for r in [p[0] for p in parts if p] + whole if not (r["id"] in seen or seen.add(r["id"]))]
        rrf = how.startswith("rrf")
        k = int(how[3:] or fusion.RRF_K) if rrf else 0
        score: dict = {}
        row: dict = {}
        for w, ranking in [(whole_weight, whole)] + [(1.0, p) for p in parts]:
            top = (ranking[0]["score"] or 1.0) if ranking else 1.0
            for n, r in enumerate(ranking[:100], 1):
                if rrf:
                    score[r["id"]] = score.get(r["id"], 0.0) + w / (k + n)
                else:
                    score[r["id"]] = max(score.get(r["id"], float("-inf")), w * r["score"] / top)
                row.setdefault(r["id"], r)
        return rank_order([dict(row[i], score=s) for i, s in score.items()])

    return run


def _mean(xs):
    return sum(xs) / len(xs)


#: The variants, by name (the ``*-colon`` ones only for a list after a colon; ``-w`` weighs the whole question).
VARIANTS = {"listcov-mean": _listcov(_mean), "listcov-min": _listcov(min),
            "listcov-colon-mean": _listcov(_mean, True), "listcov-colon-min": _listcov(min, True)}
VARIANTS |= {f"items-{h}": _combined(h) for h in ("rr", "rrf", "rrf60", "max")}
VARIANTS |= {f"items-{h}-colon": _combined(h, True) for h in ("rr", "rrf", "max")}
VARIANTS |= {"items-rrf-w2": _combined("rrf", whole_weight=2.0), "items-max-w0.9": _combined("max", whole_weight=0.9)}


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    locomo = None
    if "--locomo" in argv:
        at = argv.index("--locomo")
        locomo = argv[at + 1]
        del argv[at:at + 2]
    if argv[:1] == ["build"]:
        for d in argv[1:]:
            print(build(Path(d), locomo), file=sys.stderr)
        return 0
    show = "--questions" in argv
    legs.VARIANTS.update(VARIANTS)
    for d in (Path(a) for a in argv if not a.startswith("-")):
        _ITEMS.clear()
        if (d / "items.pkl").is_file():
            _ITEMS.update(pickle.loads((d / "items.pkl").read_bytes()))
        legs.analyse(d, show, names=list(VARIANTS), locomo=locomo)
    return 0


if __name__ == "__main__":
    sys.exit(main())
