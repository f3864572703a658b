"""The ranking variants that ``python -m benchmarks.research.tune eval`` replays: query-side rules over the dumped candidates.

A variant is a function ``(question, vector rows, keyword rows, context) -> ranked rows`` of the BM25 and
cosine candidate lists that ``tune dump`` saved (top :data:`POOL` each); :data:`VARIANTS` names every one,
and ``benchmarks.research.tune`` adds the first-stage variants of :mod:`benchmarks.research.tune_vectors` to them. Every
variant is a technique measured for hybrid ranking (shipped or not); the results and why each was or was
not adopted are in ``memsearch/engine/search/fusion.py``'s docstring.
"""

from __future__ import annotations

import re

import numpy as np

from benchmarks import quality
from memsearch.engine.search import fusion, shape, speakers
from memsearch.engine.search.order import rank_order
from memsearch.engine.search.timeline import spread_if_spanning

__all__ = ["POOL", "EXPAND_TERMS", "VARIANTS", "baseline"]

#: Candidates kept per retriever: the engine fetches max(k * CANDIDATE_FACTOR, MIN_CANDIDATES).
POOL = max(quality.K * fusion.CANDIDATE_FACTOR, fusion.MIN_CANDIDATES)
#: How many expansion terms ``tune expand`` adds to a query (the ``rm3-*`` variants read both lists).
EXPAND_TERMS = (3, 8)

def baseline(q, vec, kw, ctx):
    """The engine's hybrid ranking (with the spread of a question that spans memory)."""
    return spread_if_spanning(fusion.hybrid("convex", q.query, vec, kw), q.query)


def _rank(rows):
    return rank_order(rows)


def neighbours(share, how="max"):
    """A chunk gains ``share`` of its adjacent chunks' fused scores (same file, lines touching)."""
    def run(q, vec, kw, ctx):
        ranked = baseline(q, vec, kw, ctx)
        by_file = {}
        for r in ranked:
            by_file.setdefault(r["path"], []).append(r)
        out = []
        for r in ranked:
            near = [o["score"] for o in by_file[r["path"]] if o is not r
                    and o["start_line"] <= r["end_line"] + 1 and r["start_line"] <= o["end_line"] + 1]
            bonus = (max(near) if how == "max" else sum(near)) if near else 0.0
            out.append(dict(r, score=r["score"] + share * bonus))
        return _rank(out)
    return run


def file_second(share, top=2):
    """A chunk gains ``share`` of the mean of its file's next best chunks (file-level evidence)."""
    def run(q, vec, kw, ctx):
        ranked = baseline(q, vec, kw, ctx)
        by_file = {}
        for r in ranked:
            by_file.setdefault(r["path"], []).append(r["score"])
        out = []
        for r in ranked:
            others = sorted(by_file[r["path"]], reverse=True)
            others.remove(r["score"])
            bonus = sum(others[:top - 1]) / (top - 1) if others else 0.0
            out.append(dict(r, score=r["score"] + share * bonus))
        return _rank(out)
    return run


def rocchio(beta, m, pool="fused"):
    """Query vector + beta * mean of the top-m hits' vectors; cosine re-run over the tree."""
    def run(q, vec, kw, ctx):
        first = baseline(q, vec, kw, ctx) if pool == "fused" else (kw if pool == "keyword" else vec)
        tree = ctx["tree"]
        ids = {r["id"]: i for i, r in enumerate(tree["rows"])}
        top = [ids[r["id"]] for r in first[:m] if r["id"] in ids]
        qv = ctx["vector"] / np.linalg.norm(ctx["vector"])
        new = qv + beta * tree["matrix"][top].mean(axis=0)
        new /= np.linalg.norm(new)
        scores = tree["matrix"] @ new
        order = np.argsort(-scores)[:POOL]
        vec2 = [dict(tree["rows"][i], score=float(scores[i])) for i in order]
        return fusion.hybrid("convex", q.query, vec2, kw)
    return run


def weight(w):
    def run(q, vec, kw, ctx):
        return fusion.date_boost(fusion.convex(vec, kw, w), fusion.query_dates(q.query))
    return run


def line_vectors(mix):
    """Vector score of a chunk: (1 - mix) * its own cosine + mix * the best cosine of one of its
    lines embedded alone (needs ``lines.pkl``: every turn embedded on its own)."""
    def run(q, vec, kw, ctx):
        tree, lines = ctx["tree"], ctx["lines"]
        qv = ctx["vector"] / np.linalg.norm(ctx["vector"])
        line_cos = dict(zip(lines["keys"], (lines["matrix"] @ qv).tolist()))
        chunk_cos = tree["matrix"] @ qv
        rows = []
        for i, r in enumerate(tree["rows"]):
            lines = range(r["end_line"] - r["start_line"] + 1)
            best = max((line_cos.get((r["path"], r["start_line"] + j), -1.0) for j in lines), default=-1.0)
            best = best if best > -1 else float(chunk_cos[i])
            rows.append(dict(r, score=(1 - mix) * float(chunk_cos[i]) + mix * best))
        rows.sort(key=lambda r: -r["score"])
        return fusion.hybrid("convex", q.query, rows[:POOL], kw)

    return run


def bm25_power(p):
    """BM25 scores raised to ``p`` before fusion (p < 1 flattens, p > 1 sharpens the keyword side)."""

    def run(q, vec, kw, ctx):
        return fusion.hybrid("convex", q.query, vec, [dict(r, score=r["score"] ** p) for r in kw])

    return run


def speaker(gain):
    """A chunk gains ``gain`` x its share of lines spoken by a name the query holds ("Nate: ...")."""

    def run(q, vec, kw, ctx):
        names = set(re.findall(r"\b([A-Z][a-z]+)(?:'s)?\b", q.query))
        ranked = baseline(q, vec, kw, ctx)
        if not names or not ranked:
            return ranked
        top = ranked[0]["score"]
        out = []
        for r in ranked:
            lines = [x for x in r["text"].split("\n") if x.strip() and not x.startswith("#")]
            share = sum(x.split(":", 1)[0] in names for x in lines) / max(len(lines), 1)
            out.append(dict(r, score=r["score"] + gain * top * share))
        return _rank(out)

    return run


def length_weight(short_w, long_w, words=6):
    """Vector weight by query length: BM25 leans on few exact words, the model on longer phrasing."""

    def run(q, vec, kw, ctx):
        w = short_w if len(re.findall(r"\w+", q.query)) <= words else long_w
        return fusion.date_boost(fusion.convex(vec, kw, w), fusion.query_dates(q.query))

    return run


def _cap(ranked, cap, depth):
    """At most ``cap`` rows of one file among the first ``depth``; the rest move just below them."""
    head, tail, count = [], [], {}
    for r in ranked:
        count[r["path"]] = count.get(r["path"], 0) + 1
        (head if count[r["path"]] <= cap and len(head) < depth else tail).append(r)
    return head + tail


def file_cap(cap, depth=10):
    """At most ``cap`` chunks of one file among the first ``depth``; the rest move just below them."""

    def run(q, vec, kw, ctx):
        return _cap(baseline(q, vec, kw, ctx), cap, depth)

    return run


def rm3(terms, share):
    """BM25 side: max-normalised score of the query + ``share`` x that of the expanded query."""

    def run(q, vec, kw, ctx):
        more = ctx["expanded"][q.qid][terms]
        top, top2 = (max((r["score"] for r in x), default=0.0) or 1.0 for x in (kw, more))
        scores = {r["id"]: r["score"] / top for r in kw}
        rows = {r["id"]: r for r in kw}
        for r in more:
            scores[r["id"]] = scores.get(r["id"], 0.0) + share * r["score"] / top2
            rows.setdefault(r["id"], r)
        keyword = _rank([dict(rows[i], score=v) for i, v in scores.items()])
        return fusion.hybrid("convex", q.query, vec, keyword)

    return run


def before(q, vec, kw, ctx):
    """The hybrid ranking before the agent-memory rules: fixed weight, date boost only."""
    return fusion.date_boost(fusion.convex(vec, kw, fusion.vector_weight(q.query)), fusion.query_dates(q.query))


def shaped(
    stub=shape.STUB_WEIGHT,
    floor=shape.YIELD_FLOOR,
    latest=shape.LATEST_BOOST,
    latest_floor=shape.LATEST_FLOOR,
    weak=fusion.WEAK_KEYWORD_VECTOR_WEIGHT,
    full=fusion.FULL_COVERAGE,
):
    """The agent-memory rules with other constants: stub weight, yield floor, latest boost, adaptive weight."""

    def run(q, vec, kw, ctx):
        ranked = fusion.convex(vec, kw, fusion.vector_weight(q.query, keyword=kw, weak=weak, full=full))
        ranked = fusion.date_boost(ranked, fusion.query_dates(q.query))
        ranked = shape.latest_boost(ranked, q.query, boost=latest, floor=latest_floor)
        return shape.memory_md_yield(ranked, stub_weight=stub, floor=floor)

    return run


#: A question whose answer is spread over time rather than held by one passage: it asks for a summary
#: or overview (summarise, recap, overview, rundown, timeline, history of, walk me through, catch me up,
#: progress, milestones), for a span (so far, up to now, over time, over the past weeks, across our
#: chats/sessions/notes, everything that happened, every time) or for an order of events (in which
#: order, chronological, sequence, which came first, earliest, before or after). The vocabulary is
#: English's words for "many events" and "their order", not one benchmark's template.
_BROAD_COVERAGE = re.compile(
    r"\b(?:summar(?:y|i[sz]e\w*)|recap|overview|run-?down|round-?up|timeline|history\s+of|walk\s+me\s+through|"
    r"catch\s+me\s+up|progress|milestones?|so\s+far|up\s+to\s+now|over\s+time|"
    r"over\s+the\s+(?:past|last)\s+(?:few\s+)?(?:days|weeks|months|years)|"
    r"across\s+(?:(?:our|the|all|my|these|those)\s+)*(?:chats|sessions|conversations|notes|talks|meetings)|"
    r"every\s?thing\s+(?:that\s+)?(?:happened|I|we)|every\s+time|all\s+the\s+times|"
    r"(?:in\s+)?(?:which|what)\s+order|chronolog\w*|sequence|(?:came|happened|was)\s+first|earliest|"
    r"before\s+or\s+after|after\s+or\s+before)\b",
    re.I,
)
#: Questions answered yes or no open with an auxiliary verb ("Does James live in Connecticut?").
_YES_NO = re.compile(
    r"^\W*(?:is|are|was|were|am|do|does|did|has|have|had|can|could|will|would|should|shall|may|might|must)"
    r"(?:n't)?\b(?!\s+you\b)",  # "can you summarise ...", "would you list ...": a request, not yes/no
    re.I,
)


def spread(cap, depth=10):
    """For a coverage question (:data:`_BROAD_COVERAGE`'s broad vocabulary) at most ``cap`` chunks of a file in
    the first ``depth``; the rest follow."""
    capped = file_cap(cap, depth)

    def run(q, vec, kw, ctx):
        return capped(q, vec, kw, ctx) if _BROAD_COVERAGE.search(q.query) else baseline(q, vec, kw, ctx)

    return run


def lean(gain):
    """The hybrid ranking with :func:`speakers.own_words` at ``gain`` (0: without it)."""

    def run(q, vec, kw, ctx):
        ranked = fusion.convex(vec, kw, fusion.vector_weight(q.query, keyword=kw))
        ranked = speakers.own_words(fusion.date_boost(ranked, fusion.query_dates(q.query)), q.query, gain)
        return shape.reshape(ranked, q.query)

    return run


def own_weight(gain=speakers.OWN_WORDS_GAIN, weak=fusion.WEAK_KEYWORD_VECTOR_WEIGHT):
    """:func:`lean`, with the adaptive vector weight read from the user's turns: for a question about the
    asker, the keyword evidence is the query terms' best share among the user-marked keyword rows."""

    def run(q, vec, kw, ctx):
        own = [r for r in kw if speakers.is_user_turn(r)] if speakers.asks_own_words(q.query) else []
        w = fusion.vector_weight(q.query, keyword=own if own else kw, weak=weak)
        ranked = fusion.convex(vec, kw, w)
        ranked = speakers.own_words(fusion.date_boost(ranked, fusion.query_dates(q.query)), q.query, gain)
        return shape.reshape(ranked, q.query)

    return run


def so_far_span(q, vec, kw, ctx):
    """"so far" read as a span (everything up to now), not as the newest state: no latest boost for it alone."""
    from memsearch.engine.search.query import wants_latest

    if not wants_latest(q.query) or wants_latest(re.sub(r"(?i)\bso\s+far\b", " ", q.query)):
        return baseline(q, vec, kw, ctx)
    ranked = fusion.convex(vec, kw, fusion.vector_weight(q.query, keyword=kw))
    ranked = speakers.own_words(fusion.date_boost(ranked, fusion.query_dates(q.query)), q.query)
    return shape.memory_md_yield(ranked)


def answer_share(share, gain=speakers.OWN_WORDS_GAIN):
    """For a question about the asker, a user turn also gains ``share`` x the best fused score of its answer
    (the rows of its file after it and before the next user turn, among the candidates): an assistant's
    reply restates what the user brought up, so a reply that matches is evidence for the turn it answers."""

    def run(q, vec, kw, ctx):
        ranked = fusion.convex(vec, kw, fusion.vector_weight(q.query, keyword=kw))
        ranked = fusion.date_boost(ranked, fusion.query_dates(q.query))
        if speakers.asks_own_words(q.query):
            by_file = {}
            for r in ranked:
                by_file.setdefault(r["path"], []).append(r)
            gains = {}
            for rows in by_file.values():
                rows = sorted(rows, key=lambda r: r["start_line"])
                turn = None
                for r in rows:
                    if speakers.is_user_turn(r):
                        turn = r
                    elif turn is not None:
                        gains[turn["id"]] = max(gains.get(turn["id"], 0.0), r["score"])
            if gains:
                ranked = _rank([dict(r, score=r["score"] + share * gains[r["id"]]) if r["id"] in gains else r
                                for r in ranked])
        ranked = speakers.own_words(ranked, q.query, gain)
        return shape.reshape(ranked, q.query)

    return run


def yes_no(weak=None):
    """Yes/no questions (:data:`_YES_NO`) keep the fixed vector weight (or rise only to ``weak``)."""

    def run(q, vec, kw, ctx):
        if not _YES_NO.search(q.query):
            return baseline(q, vec, kw, ctx)
        w = fusion.vector_weight(q.query, keyword=kw, weak=weak) if weak else fusion.vector_weight(q.query)
        return shape.reshape(speakers.own_words(fusion.date_boost(fusion.convex(vec, kw, w),
                                                                  fusion.query_dates(q.query)), q.query), q.query)

    return run


def files_spread(share, cap=1, depth=10):
    """For a coverage question, :func:`file_second` (file-level evidence) then the per-file cap."""

    def run(q, vec, kw, ctx):
        if not _BROAD_COVERAGE.search(q.query):
            return baseline(q, vec, kw, ctx)
        return _cap(file_second(share)(q, vec, kw, ctx), cap, depth)

    return run


VARIANTS = {"baseline": baseline, "before": before}
VARIANTS |= {f"spread-{c}-{d}": spread(c, d) for c in (1, 2) for d in (5, 10, 20)}
VARIANTS |= {f"own-{g}": lean(g) for g in (0.0, 0.05, 0.1, 0.2, 0.3, 0.5)}
VARIANTS |= {"so-far-span": so_far_span}
VARIANTS |= {f"answer-{a}": answer_share(a) for a in (0.1, 0.2, 0.3, 0.5)}
VARIANTS |= {f"own-weight-{w}": own_weight(weak=w) for w in (0.6, 0.8)}
VARIANTS |= {f"files-{a}+spread-1": files_spread(a) for a in (0.1, 0.2, 0.3)}
VARIANTS |= {"yes-no": yes_no()} | {f"yes-no-{w}": yes_no(w) for w in (0.5, 0.6, 0.7)}
VARIANTS |= {f"stub-{w}": shaped(stub=w) for w in (1.0, 0.5, 0.0)}
VARIANTS |= {f"yield-{f}": shaped(floor=f) for f in (0.0, 0.5, 99.0)}
VARIANTS |= {
    f"latest-{b}-{f}": shaped(latest=b, latest_floor=f) for b in (0.0, 0.15, 0.3, 0.5) for f in (0.3, 0.5, 0.7)
}
VARIANTS |= {
    f"adaptive-{w}-{f}": shaped(weak=w, full=f) for w in (0.4, 0.6, 0.7, 0.8, 0.9) for f in (0.4, 0.5, 0.6, 0.8, 1.0)
}
VARIANTS |= {f"rm3-{t}-{a}": rm3(t, a) for t in EXPAND_TERMS for a in (0.2, 0.5, 1.0)}
VARIANTS |= {f"file-cap-{c}": file_cap(c) for c in (1, 2, 3)}
VARIANTS |= {f"bm25-power-{p}": bm25_power(p) for p in (0.5, 0.75, 1.5)}
VARIANTS |= {f"speaker-{g}": speaker(g) for g in (0.05, 0.1, 0.2)}
VARIANTS |= {f"length-weight-{a}-{b}": length_weight(a, b) for a, b in ((0.3, 0.5), (0.4, 0.5), (0.3, 0.4))}
VARIANTS |= {f"lines-{m}": line_vectors(m) for m in (0.3, 0.5, 0.7, 1.0)}
VARIANTS |= {f"neighbours-max-{a}": neighbours(a) for a in (0.1, 0.2, 0.3, 0.5)}
VARIANTS |= {f"neighbours-sum-{a}": neighbours(a, "sum") for a in (0.1, 0.2)}
VARIANTS |= {f"file2-{a}": file_second(a) for a in (0.1, 0.2, 0.3)}
VARIANTS |= {f"file3-{a}": file_second(a, 3) for a in (0.1, 0.2, 0.3)}
VARIANTS |= {f"rocchio-{p}-{b}-{m}": rocchio(b, m, p) for p in ("fused", "keyword") for b in (0.3, 0.6) for m in (3, 5)}
VARIANTS |= {f"weight-{w}": weight(w) for w in (0.3, 0.5)}
