"""Does hybrid lose to its own legs? Every question where keyword-only or vector-only beats hybrid (and back), replayed.

Over a ``tune dump`` (``python -m benchmarks.research.tune dump --corpus C --out DIR``), each question is ranked
by the keyword leg alone, the vector leg alone and the engine's hybrid (:func:`memsearch.engine.search.fusion.hybrid`),
plus hybrid with each of its parts taken out (the adaptive weight held at VECTOR_WEIGHT, each stage left out), so
a loss can be put down to the part that makes it::

    python -m benchmarks.research.legs DIR [DIR ...]            # per corpus and half: hit@1 / file R@5 of each
    python -m benchmarks.research.legs DIR --questions          # and every question where they disagree

A row of ``--questions`` gives the answer's rank (the first hit covering it, as hit@1 counts; ``-`` past 50)
and its file's rank (as file R@5 counts) under each ranking, the adaptive weight with the keyword coverage
behind it, and which stages fired. ``--variants NAME ...`` ranks with :data:`VARIANTS` instead (other
normalisations of the legs, the floor's depth, the "latest" words): its own, not ``tune eval``'s, as
some of them truncate the candidates. The findings are in benchmarks/research/LOG.md (round eight).
"""

from __future__ import annotations

import argparse
import pickle
import re
from pathlib import Path

from benchmarks import metrics, quality
from benchmarks.metrics import Span
from memsearch.engine.search import fusion, shape, speakers
from memsearch.engine.search.order import rank_order
from memsearch.engine.search.query import asks_advice, asks_own_words, query_dates, wants_latest
from memsearch.engine.search.timeline import spread_if_spanning

__all__ = ["RANKINGS", "VARIANTS", "rankings", "ranks", "analyse", "main"]


def _hybrid(weight=None, stages=None):
    def run(q, vec, kw):
        w = (lambda *a: fusion.VECTOR_WEIGHT) if weight == "fixed" else None
        return spread_if_spanning(fusion.hybrid("convex", q.query, vec, kw, weight=w, stages=stages), q.query)

    return run


_ALL = fusion.STAGES
#: The rankings compared, by name: the legs, hybrid, and hybrid without one of its parts.
RANKINGS = {
    "keyword": lambda q, vec, kw: kw,
    "vector": lambda q, vec, kw: vec,
    "hybrid": _hybrid(),
    "fixed-weight": _hybrid(weight="fixed"),
    "no-stages": _hybrid(stages=()),
    "no-dated": _hybrid(stages=tuple(s for s in _ALL if s is not fusion.dated)),
    "no-own": _hybrid(stages=tuple(s for s in _ALL if s is not speakers.own_words)),
    "no-request": _hybrid(stages=tuple(s for s in _ALL if s is not speakers.standing)),
    "no-shape": _hybrid(stages=tuple(s for s in _ALL if s is not shape.reshape)),
}


def rankings(q, d, names=None) -> dict[str, list[Span]]:
    """Each ranking of question ``q`` over its dumped candidates ``d``, as merged hits (as the engine returns them):
    ``names`` of :data:`RANKINGS` or :data:`VARIANTS` (default: every one of RANKINGS)."""
    out = {}
    for name in names or RANKINGS:
        run = RANKINGS.get(name) or VARIANTS[name]
        ranked = run(q, [dict(r) for r in d["vec"]], [dict(r) for r in d["keyword"]])
        out[name] = [Span(h["path"], h["start_line"], h["end_line"]) for h in shape.merge_rows(ranked, quality.K)]
    return out


def ranks(hits: list[Span], items) -> tuple[int | None, int | None]:
    """(rank of the first hit covering an item, rank of the first distinct file holding one), 1-based, or None."""
    hit = next((i for i, h in enumerate(hits, 1) if any(metrics.covers(h, it) for it in items)), None)
    files = metrics.distinct_files(hits, len(hits))
    wanted = {it.path for it in items}
    file = next((i for i, p in enumerate(files, 1) if p in wanted), None)
    return hit, file


def _r(x):
    return "-" if x is None else str(x)


def analyse(out: Path, show: bool = False, by_category: bool = False, names=None, locomo=None) -> dict:
    """Print hit@1 / file R@5 of the legs, hybrid and ``names`` (default: hybrid's parts) by half, and with
    ``show`` every question where hybrid and the better leg differ; returns (half, ranking) -> per-question scores."""
    data = pickle.loads((out / "candidates.pkl").read_bytes())
    corpus = quality.dumped_corpus(out, locomo)
    table: dict = {}  # (split, name) -> [(hit@1, R@5)]
    lines = []
    for q in corpus.questions:
        d = data["questions"][q.qid]
        got = rankings(q, d, names and ["keyword", "vector", "hybrid", *names])
        shown = list(got)
        split = q.split or "all"
        scores = {}
        for name, hits in got.items():
            s = (metrics.mrr(hits, q.items, 1), metrics.file_recall(hits, q.items, 5))
            scores[name] = s
            table.setdefault((split, name), []).append(s)
            if q.category == "paraphrase" or by_category:
                table.setdefault((f"{split}:{q.category}", name), []).append(s)
        legs = max(scores["keyword"][0], scores["vector"][0]), max(scores["keyword"][1], scores["vector"][1])
        h = scores["hybrid"]
        if show and h != legs:
            mark = "LOSS" if h[0] < legs[0] or h[1] < legs[1] else "win"
            kw = [dict(r) for r in d["keyword"]]
            cov = fusion.keyword_coverage(q.query, kw)
            w = fusion.vector_weight(q.query, keyword=kw)
            fired = "".join(c for c, on in (("D", bool(query_dates(q.query))), ("O", asks_own_words(q.query)),
                                            ("A", asks_advice(q.query)), ("L", wants_latest(q.query))) if on)
            r = {n: ranks(got[n], q.items) for n in got}
            cells = " ".join(f"{n[:6]}={_r(a)}/{_r(b)}" for n, (a, b) in r.items())
            cells += "  R@5 " + "/".join(f"{scores[n][1]:.2f}" for n in ("keyword", "vector", "hybrid"))
            lines.append(f"{mark:4s} {split:4s} {q.category or '':12s} {q.qid:14s} w={w:.2f} cov={cov:.2f} "
                         f"[{fired}] {cells}\n      {q.query}")
    splits = sorted({k[0] for k in table}, key=lambda s: (":" in s, s != "tune", s))
    print(f"== {corpus.name} ({out}): hit@1 / file R@5 by half, n = "
          + ", ".join(f"{s} {len(table[(s, 'hybrid')])}" for s in splits))
    print(f"  {'':22s}" + "".join(f"{s:>18s}" for s in splits))
    for n in shown:
        print(f"  {n:22s}" + "".join(f"{metrics.mean(a for a, _ in table[(s, n)]):9.3f}/"
                                     f"{metrics.mean(b for _, b in table[(s, n)]):.3f}" for s in splits))
    if show:
        print("\n".join(lines))
    return table


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.research.legs")
    parser.add_argument("dirs", nargs="+", type=Path, help="tune dumps (benchmarks.research.tune dump --out DIR)")
    parser.add_argument("--questions", action="store_true", help="every question where hybrid and a leg disagree")
    parser.add_argument("--by-category", action="store_true", help="a row per half and question category")
    parser.add_argument("--variants", nargs="*", help="rank with these VARIANTS instead of the parts of hybrid")
    parser.add_argument("--locomo", help="locomo10.json, for a LoCoMo dump (default: $MEMSEARCH_LOCOMO or ../shared/data)")
    args = parser.parse_args(argv)
    for out in args.dirs:
        analyse(out, args.questions, args.by_category, args.variants, args.locomo)
    return 0



# --- variants measured for the losses (round eight) -------------------------------------------------------------
def _norm(scores: list[float], how: str) -> list[float]:
    """Scores of one leg's candidate list (best first) normalised: ``max`` (s / best), ``minmax`` (over the
    list), ``minmax100`` (the floor at the 100th row, as a k <= 25 search's pool), ``dbsf`` (mean +- 3 sd, clipped)."""
    import statistics

    if not scores:
        return []
    hi = scores[0]
    if how == "max":
        return [s / (hi or 1.0) for s in scores]
    if how == "dbsf":
        mu, sd = statistics.fmean(scores), statistics.pstdev(scores) or 1.0
        lo, hi = mu - 3 * sd, mu + 3 * sd
    else:
        depth = int(how.removeprefix("minmax") or len(scores))  # "minmax100": the floor at the 100th row
        lo = scores[min(len(scores), depth) - 1]
    return [min(1.0, max(0.0, (s - lo) / ((hi - lo) or 1.0))) for s in scores]


def normalised(kw_norm="max", vec_norm="minmax", pool=None, base=fusion.VECTOR_WEIGHT, stages=None):
    """Hybrid with each leg's scores normalised as :func:`_norm` says, over the first ``pool`` candidates
    (None: all dumped), the adaptive weight rising from ``base``; then the engine's stages."""

    def run(q, vec, kw, ctx=None):
        vec, kw = vec[:pool], kw[:pool]
        w = fusion.vector_weight(q.query, keyword=kw)
        if w >= fusion.VECTOR_WEIGHT:  # the adaptive rise, from ``base`` to WEAK_KEYWORD_VECTOR_WEIGHT
            share = (w - fusion.VECTOR_WEIGHT) / (fusion.WEAK_KEYWORD_VECTOR_WEIGHT - fusion.VECTOR_WEIGHT)
            w = base + (fusion.WEAK_KEYWORD_VECTOR_WEIGHT - base) * share
        v = dict(zip((r["id"] for r in vec), _norm([r["score"] for r in vec], vec_norm)))
        b = dict(zip((r["id"] for r in kw), _norm([r["score"] for r in kw], kw_norm)))
        rows = {r["id"]: r for r in vec + kw}
        ranked = [dict(r, score=w * v.get(i, 0.0) + (1 - w) * b.get(i, 0.0)) for i, r in rows.items()]
        ranked = fusion._mark_agreed(rank_order(ranked), vec, kw)  # as hybrid() does, for the agreement stage
        for stage in fusion.STAGES if stages is None else stages:
            ranked = stage(ranked, q.query)
        return ranked

    return run


VARIANTS = {"hybrid": lambda q, vec, kw, ctx=None: RANKINGS["hybrid"](q, vec, kw),
            "norm-max-minmax": normalised()}
VARIANTS |= {f"pool-{p}": normalised(pool=p) for p in (50, 100)}
VARIANTS |= {f"norm-{k}-{v}": normalised(k, v) for k, v in (("minmax", "minmax"), ("max", "minmax100"),
                                                            ("dbsf", "dbsf"), ("max", "dbsf"), ("minmax", "max"),
                                                            ("dbsf", "minmax"))}
VARIANTS |= {f"depth-{d}": normalised(vec_norm=f"minmax{d}") for d in (30, 50, 75, 100, 150, 200)}
VARIANTS |= {f"base-{b}": normalised(base=b) for b in (0.3, 0.5)}



def latest_words(extra: str, present_own: bool = False):
    """Hybrid whose "latest" stage also fires on the phrases ``extra`` (a regex alternation) and, with
    ``present_own``, on a present-tense question about the asker ("how many hours of sun does my plot get")."""
    import re

    from memsearch.engine.search import query as query_mod

    cue = re.compile(rf"\b(?:{extra})\b", re.I) if extra else None
    present = re.compile(r"\b(?:do|does|am|are|is|have|has)\b", re.I)

    def wants(text: str) -> bool:
        if query_mod.wants_latest(text) or (cue is not None and cue.search(text)):
            return True
        return present_own and asks_own_words(text) and bool(present.search(text)) and not re.search(
            r"\b(?:did|was|were|had|when|suggest\w*|instruct\w*|prefer\w*|rule|summar\w*|order)\b", text, re.I)

    def run(q, vec, kw, ctx=None):
        ranked = fusion.hybrid("convex", q.query, vec, kw, stages=(fusion.dated, speakers.own_words))
        if wants(q.query):
            ranked = shape.latest_boost(ranked, "latest")
        return shape.memory_md_rule(ranked, q.query)

    return run


VARIANTS |= {"latest-same": latest_words(""),
             "latest-at-the-moment": latest_words(r"at\s+the\s+moment|right\s+now|at\s+present|presently|nowadays"),
             "latest-present-own": latest_words("", present_own=True)}



def latest_unless(contrast: str):
    """Hybrid whose "latest" stage stays off when the question also names the other end (``contrast``, a regex
    alternation: "which was earliest and which was latest" asks for an order, not the newest state)."""
    import re

    other = re.compile(rf"\b(?:{contrast})\b", re.I)

    def run(q, vec, kw, ctx=None):
        ranked = fusion.hybrid("convex", q.query, vec, kw, stages=(fusion.dated, speakers.own_words))
        if not other.search(q.query):
            ranked = shape.latest_boost(ranked, q.query)
        return shape.memory_md_rule(ranked, q.query)

    return run


VARIANTS |= {"latest-unless-earliest": latest_unless(r"earliest|oldest"),
             "latest-unless-first": latest_unless(r"earliest|oldest|first")}



# --- variants measured for the losses (round nine: position 1 from the legs' winners) ----------------------------
def _promote(ranked: list[dict], row_id) -> list[dict]:
    """``ranked`` with row ``row_id`` moved first (the rest in order)."""
    n = next((i for i, r in enumerate(ranked) if r["id"] == row_id), 0)
    return [ranked[n], *ranked[:n], *ranked[n + 1:]] if n else ranked


def legs_top(m: int):
    """Hybrid whose first row must be one of either leg's first ``m`` rows (the best of them by the hybrid order)."""

    def run(q, vec, kw, ctx=None):
        allowed = {r["id"] for r in kw[:m]} | {r["id"] for r in vec[:m]}
        ranked = fusion.hybrid("convex", q.query, vec, kw)
        first = next((r for r in ranked if r["id"] in allowed), None)
        return _promote(ranked, first["id"]) if first else ranked

    return run


def legs_pre(m: int):
    """As :func:`legs_top`, but in the fused ranking before the stages (the promoted row takes the first's score), so
    the date boost, the lean to the asker's turns, agreement and the shape rules still apply after it (round ten)."""

    def run(q, vec, kw, ctx=None):
        ranked = fusion._mark_agreed(fusion.fuse("convex", vec, kw, fusion.vector_weight(q.query, False, kw)), vec, kw)
        allowed = {r["id"] for r in kw[:m]} | {r["id"] for r in vec[:m]}
        n = next((i for i, r in enumerate(ranked) if r["id"] in allowed), 0)
        if n:
            ranked = [dict(ranked[n], score=ranked[0]["score"] + 1e-9), *ranked[:n], *ranked[n + 1:]]
        for stage in fusion.STAGES:
            ranked = stage(ranked, q.query)
        return ranked

    return run


def keyword_margin(ratio: float):
    """Hybrid with keyword's first row put first when its BM25 score is at least ``ratio`` x keyword's second."""

    def run(q, vec, kw, ctx=None):
        ranked = fusion.hybrid("convex", q.query, vec, kw)
        sure = len(kw) > 1 and kw[1]["score"] > 0 and kw[0]["score"] >= ratio * kw[1]["score"]
        return _promote(ranked, kw[0]["id"]) if sure else ranked

    return run


def vector_margin(gap: float):
    """Hybrid with the vector leg's first row put first when its min-max normalised cosine (the engine's floor)
    stands ``gap`` above its second."""

    def run(q, vec, kw, ctx=None):
        ranked = fusion.hybrid("convex", q.query, vec, kw)
        if len(vec) > 2:
            lo = fusion._floor([r["score"] for r in vec], fusion.NORM_DEPTH)
            if (vec[0]["score"] - vec[1]["score"]) / ((vec[0]["score"] - lo) or 1.0) >= gap:
                ranked = _promote(ranked, vec[0]["id"])
        return ranked

    return run


def newest_near(delta: float):
    """Hybrid with the newest dated row among those scoring within ``delta`` (relative) of the best put first."""

    def run(q, vec, kw, ctx=None):
        ranked = fusion.hybrid("convex", q.query, vec, kw)
        near = [r for r in ranked[:10] if ranked and r["score"] >= ranked[0]["score"] * (1 - delta) and r.get("date")]
        if len(near) < 2:
            return ranked
        return _promote(ranked, max(near, key=lambda r: (r["date"], r["start_line"]))["id"])

    return run


def superseded(n: int, ratio: float):
    """Hybrid whose first row yields to a newer one of the first ``n`` that holds every query term it holds and
    scores at least ``ratio`` x it (a later statement of the same thing: an updated value)."""

    def run(q, vec, kw, ctx=None):
        ranked = fusion.hybrid("convex", q.query, vec, kw)
        if not ranked or not ranked[0].get("date"):
            return ranked
        terms, first = fusion._terms(q.query), ranked[0]
        held, best = terms & fusion._terms(first.get("text", "")), None
        for r in ranked[1:n]:
            newer = r.get("date") and r["date"] > (best or first)["date"] and r["score"] >= ratio * first["score"]
            if held and newer and terms & fusion._terms(r.get("text", "")) >= held:
                best = r
        return _promote(ranked, best["id"]) if best else ranked

    return run


#: A sentence stating a change ("the plot gets about nine hours of sun now", "no longer", "actually"), for :func:`changed`.
_CHANGE = re.compile(r"\b(?:now|anymore|any\s+more|no\s+longer|changed|update[ds]?|instead|actually|these\s+days)\b", re.I)


def changed(n: int, ratio: float):
    """:func:`superseded` for a newer row that states a change (:data:`_CHANGE`): the first such of the first ``n``."""

    def run(q, vec, kw, ctx=None):
        ranked = fusion.hybrid("convex", q.query, vec, kw)
        if not ranked or not ranked[0].get("date"):
            return ranked
        terms, first = fusion._terms(q.query), ranked[0]
        held = terms & fusion._terms(first.get("text", ""))
        for r in ranked[1:n]:
            if (held and r.get("date") and r["date"] > first["date"] and r["score"] >= ratio * first["score"]
                    and _CHANGE.search(r.get("text", "")) and terms & fusion._terms(r.get("text", "")) >= held):
                return _promote(ranked, r["id"])
        return ranked

    return run


def agreement(after_shape: bool = False, notes_only: bool = False):
    """Hybrid without the agreement stage (``before``), or with the row both legs rank first put first after every
    stage (``after_shape``; ``notes_only``: not a MEMORY.md, not for a "latest" question)."""
    before = tuple(s for s in fusion.STAGES if s is not fusion.agreed_first)

    def run(q, vec, kw, ctx=None):
        ranked = fusion.hybrid("convex", q.query, vec, kw, stages=before)
        if not after_shape or not vec or not kw or vec[0]["id"] != kw[0]["id"]:
            return ranked
        if notes_only and (wants_latest(q.query) or shape._is_index(kw[0]["path"])):
            return ranked
        return _promote(ranked, kw[0]["id"])

    return run


VARIANTS |= {f"legs-top-{m}": legs_top(m) for m in (1, 2, 3)}
VARIANTS |= {f"legs-pre-{m}": legs_pre(m) for m in (1, 2, 3)}
VARIANTS |= {f"keyword-margin-{r}": keyword_margin(r) for r in (1.2, 1.5, 2.0, 3.0)}
VARIANTS |= {f"vector-margin-{g}": vector_margin(g) for g in (0.1, 0.2, 0.3)}
VARIANTS |= {f"newest-near-{d}": newest_near(d) for d in (0.005, 0.01, 0.02, 0.05, 0.1)}
VARIANTS |= {f"superseded-{n}-{r}": superseded(n, r) for n in (3, 5) for r in (0.5, 0.7, 0.9)}
VARIANTS |= {f"changed-{n}-{r}": changed(n, r) for n in (2, 3, 5) for r in (0.5, 0.7)}
VARIANTS |= {"no-agreement": agreement(), "agreement-last": agreement(after_shape=True),
             "agreement-last-notes": agreement(after_shape=True, notes_only=True)}


if __name__ == "__main__":
    raise SystemExit(main())
