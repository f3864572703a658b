"""Round six's variants: each leg alone (does hybrid lose to its own legs?), and mode "timeline" (the best
passages of each session touching the topic, oldest first) for the questions that span memory, as round seven
left it (a budget of characters: the ``timeline-*`` rows).

Registered in ``tune.VARIANTS``; the figures and the choice are in benchmarks/research/LOG.md (rounds six and seven).
"""

from __future__ import annotations

from benchmarks.research.tune_rules import baseline
from memsearch.engine.search import fusion, shape, timeline

__all__ = ["SPREAD_KINDS", "VARIANTS"]

#: The question kinds the memory_search description sends to mode "timeline" (summaries, the order of
#: events, standing instructions and preferences): what an agent following it does, read off the benchmark's category.
SPREAD_KINDS = ("summary", "order", "everything", "instruction", "preference")


def keyword_only(q, vec, kw, ctx):
    return kw


def vector_only(q, vec, kw, ctx):
    return vec


def timeline_of(k=5, passages=timeline.TIMELINE_PASSAGES, head=timeline.TIMELINE_HEAD, chars=None, own=True,
                kinds=SPREAD_KINDS, candidates=timeline.TIMELINE_CANDIDATES, rows=None,
                directive=timeline.DIRECTIVE_WEIGHT):
    """Mode "timeline" at ``k`` (a budget of k x TIMELINE_CHARS_PER_HIT characters, or ``chars``), ``head`` of it
    by rank alone, then ``passages`` rows a session, over the first ``candidates`` rows of each leg (at most the
    dump's POOL), for the questions of ``kinds`` (None: all); ``own=False``: without the user's-own-turns rule."""

    def run(q, vec, kw, ctx):
        if kinds is not None and q.category not in kinds:
            return baseline(q, vec, kw, ctx)
        ranked = baseline(q, vec[:candidates], kw[:candidates], ctx)
        return timeline.timeline(ranked, q.query if own else "", k, chars=chars, passages=passages, head=head,
                                 rows=rows, directive=directive)

    return run


VARIANTS = {"keyword-only": keyword_only, "vector-only": vector_only}
# round seven: the budget of characters, the head by rank alone, passages a session (round six's k sessions x
# p passages are in LOG.md; that code is gone)
VARIANTS |= {f"timeline-h{h}-p{p}": timeline_of(head=h, passages=p) for h in (0.0, 0.25, 0.5, 0.75) for p in (1, 2, 3)}
VARIANTS |= {f"timeline-c{c}": timeline_of(chars=c) for c in (4000, 5000, 8000)}
VARIANTS |= {f"timeline-n{n}": timeline_of(candidates=n) for n in (100, 200)}
VARIANTS |= {f"timeline-r{r}": timeline_of(rows=r) for r in (15, 20, 25, 30, 1000)}
VARIANTS |= {f"timeline-d{d}": timeline_of(directive=d) for d in (1.0, 1.1, 1.2, 1.3, 1.5, 2.0)}
VARIANTS |= {"timeline-not-own": timeline_of(own=False), "timeline-all": timeline_of(kinds=None)}


# --- the keyword leg's evidence weighted by idf (measured, not adopted: LOG.md round six) ----------------
_IDF: dict[int, tuple] = {}


def _idf(tree):
    """(analyzer, term -> idf over ``tree``'s chunk texts, the idf of a term in none), cached per tree."""
    import math
    from collections import Counter

    from memsearch.engine.search.bm25 import Analyzer

    if id(tree) not in _IDF:
        an, rows = Analyzer(), tree["rows"]
        df = Counter(t for r in rows for t in {an.term(w) for w in an.words(r["text"])} if t)
        n = len(rows)
        idf = {t: math.log((n - d + 0.5) / (d + 0.5) + 1.0) for t, d in df.items()}
        _IDF[id(tree)] = (an, idf, math.log((n + 0.5) / 0.5 + 1.0))
    return _IDF[id(tree)]


def idf_coverage(full=fusion.FULL_COVERAGE, weak=fusion.WEAK_KEYWORD_VECTOR_WEIGHT, rows=fusion.EVIDENCE_ROWS):
    """The adaptive weight with the keyword evidence as the best share of the query's idf mass found in one of
    the first ``rows`` keyword rows (a topic word found in many notes counts little), FULL_COVERAGE ``full``."""
    from memsearch.engine.search.query import query_dates
    from memsearch.engine.search.shape import reshape
    from memsearch.engine.search.speakers import own_words

    def run(q, vec, kw, ctx):
        an, idf, unseen = _idf(ctx["tree"])
        terms = {t for t in (an.term(w) for w in an.words(q.query)) if t}
        weight = fusion.vector_weight(q.query)
        if terms and weight == fusion.VECTOR_WEIGHT:
            mass = {t: idf.get(t, unseen) for t in terms}
            cov = max((sum(m for t, m in mass.items() if t in {an.term(w) for w in an.words(r["text"])})
                       / sum(mass.values()) for r in kw[:rows]), default=0.0)
            weight = fusion.coverage_weight(cov, weak, full)
        ranked = fusion.convex(vec, kw, weight)
        return reshape(own_words(fusion.date_boost(ranked, query_dates(q.query)), q.query), q.query)

    return run


VARIANTS |= {f"idf-cov-{f}": idf_coverage(full=f) for f in (0.5, 0.6, 0.7, 0.8)}


# --- the pointer after the note (item 3) ------------------------------------------------------------
def folder_yield(floor=shape.YIELD_FLOOR):
    """The engine's MEMORY.md rule (below every note of its folder and below scoring at least ``floor`` x its
    score) at another floor. Before round six only an index naming a note yielded, to the best one it named:
    agentmem index_above@10 tune 0.044 / held-out 0.000, 0.000 / 0.000 after (hit@1 unchanged)."""
    from memsearch.engine.search.query import query_dates
    from memsearch.engine.search.speakers import own_words

    def run(q, vec, kw, ctx):
        ranked = fusion.convex(vec, kw, fusion.vector_weight(q.query, keyword=kw))
        ranked = shape.latest_boost(own_words(fusion.date_boost(ranked, query_dates(q.query)), q.query), q.query)
        return shape.memory_md_yield(ranked, floor=floor)

    return run


VARIANTS |= {f"folder-yield-{f}": folder_yield(f) for f in (0.0, 0.3, 0.5, 0.6, 0.7, 0.9)}


def old_yield(q, vec, kw, ctx):
    """The MEMORY.md rule before round six: only an index naming a note yields, below the best note it names."""
    import math
    import re

    from memsearch.engine.search.query import query_dates
    from memsearch.engine.search.speakers import own_words

    ranked = fusion.convex(vec, kw, fusion.vector_weight(q.query, keyword=kw))
    ranked = shape.latest_boost(own_words(fusion.date_boost(ranked, query_dates(q.query)), q.query), q.query)
    out = []
    for row in ranked:
        if not row["path"].endswith("MEMORY.md") or shape.is_stub(row):
            out.append(dict(row, score=row["score"] * shape.STUB_WEIGHT) if shape.is_stub(row) else row)
            continue
        d = row["path"].rsplit("/", 1)[0] + "/" if "/" in row["path"] else ""
        best = {}
        for r in ranked:
            if not r["path"].endswith("MEMORY.md") and r["path"].startswith(d):
                name = r["path"][len(d):].split("/", 1)[0]
                best[name] = max(best.get(name, -math.inf), r["score"])
        text = row.get("text", "").lower()
        named = [s for n, s in best.items() if re.search(r"(?<![\w-])" + r"[-_\s]".join(
            map(re.escape, [w for w in re.split(r"[-_.\s]+", n.removesuffix(".md").lower()) if w]))
            + r"(?:\.md|/)?(?![\w-])", text)]
        top = max(named, default=0.0)
        ok = named and top >= shape.YIELD_FLOOR * row["score"] and top < row["score"] + 1e-9
        out.append(dict(row, score=top * (1 - 1e-6)) if ok else row)
    return sorted(out, key=lambda r: (-r["score"], r["path"], r["start_line"]))


VARIANTS |= {"old-yield": old_yield}
