"""The cheap tuning loop for ranking: dump every LoCoMo question's candidates once, replay rankings offline.

``dump`` indexes the LoCoMo trees (one per conversation) with the engine as it is and saves,
for every question, the BM25 and the cosine candidate lists (top :data:`POOL`, the rows the
engine's hybrid search would see) with the query vector, plus each tree's chunk vectors; a
ranking variant (:data:`VARIANTS`) is then a function of those lists, scored on the tuning
split (conversations 0-4), the held-out test split (5-9) and all ten in a second or two::

    python -m benchmarks.tune dump --out /tmp/tune          # minutes: embeds ~2.3k chunks
    python -m benchmarks.tune lines --out /tmp/tune         # for the lines-* rows: embeds ~5.9k turns alone
    python -m benchmarks.tune expand --out /tmp/tune        # for the rm3-* rows: a second BM25 query each
    python -m benchmarks.tune eval --out /tmp/tune [NAME ...]

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

from benchmarks import quality, tune_vectors
from benchmarks.metrics import Span
from memsearch.engine.search import fusion, shape, speakers

__all__ = ["POOL", "VARIANTS", "dump", "embed_lines", "expand", "evaluate", "main"]

#: Candidates kept per retriever: the engine fetches max(k * CANDIDATE_FACTOR, MIN_CANDIDATES).
POOL = max(quality.K * fusion.CANDIDATE_FACTOR, fusion.MIN_CANDIDATES)


#: The row columns the engine's searches return (memsearch.engine.index reads the same).
COLUMNS = ["id", "path", "dir", "heading", "start_line", "end_line", "text", "date"]


#: What ``eval`` prints per corpus: LoCoMo's four measures, and for the agent-written tree the
#: right note first (hit@1), in the top 3, MRR and the share of questions where a MEMORY.md
#: ranks above the answer.
MEASURES = {"locomo": ("file_recall@5", "file_recall@10", f"turn_recall@{quality.LINE_BUDGET}lines", "mrr@10"),
            "agentmem": ("hit@1", "file_recall@3", "mrr@10", "index_above@10"),
            "longchat": ("file_recall@5", "turn_recall@10hits", "turn_recall@6000chars", "mrr@10")}
MEASURES["longchat-alt"] = MEASURES["longchat"]
MEASURES["longchat-hard"] = MEASURES["longchat"]


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
EXPAND_TERMS = (3, 8)


def _words(text: str) -> list[str]:
    import re

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


# --- variants: (query, vector rows, keyword rows, context) -> ranked rows --------------------
def baseline(q, vec, kw, ctx):
    return fusion.hybrid("convex", q.query, vec, kw)


def _rank(rows):
    return sorted(rows, key=lambda r: (-r["score"], r["path"], r["start_line"]))


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
    import re

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
    import re

    def run(q, vec, kw, ctx):
        w = short_w if len(re.findall(r"\w+", q.query)) <= words else long_w
        return fusion.date_boost(fusion.convex(vec, kw, w), fusion.query_dates(q.query))

    return run


def file_cap(cap, depth=10):
    """At most ``cap`` chunks of one file among the first ``depth``; the rest move just below them."""

    def run(q, vec, kw, ctx):
        ranked = baseline(q, vec, kw, ctx)
        head, tail, count = [], [], {}
        for r in ranked:
            count[r["path"]] = count.get(r["path"], 0) + 1
            (head if count[r["path"]] <= cap and len(head) < depth else tail).append(r)
        return head + tail

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
        keyword = sorted(
            (dict(rows[i], score=v) for i, v in scores.items()), key=lambda r: (-r["score"], r["path"], r["start_line"])
        )
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


_COVERAGE = None


def wants_coverage(query: str) -> bool:
    """A question whose answer is spread over sessions: "summarise ... across", "in which order"."""
    import re

    global _COVERAGE
    if _COVERAGE is None:
        _BROAD_COVERAGE = re.compile(
            r"\b(?:summari[sz]e|summary|recap|in (?:which|what) order|what order|across (?:our|the|all|my|"
            r"these)?\s*(?:chats|sessions|conversations|notes)|over (?:time|the (?:weeks|months)))\b",
            re.I,
        )
    return bool(_COVERAGE.search(query))


def coverage(cap, depth=10):
    """For a coverage question (:func:`wants_coverage`) at most ``cap`` chunks of a file in the first ``depth``."""
    capped = file_cap(cap, depth)

    def run(q, vec, kw, ctx):
        return capped(q, vec, kw, ctx) if wants_coverage(q.query) else baseline(q, vec, kw, ctx)

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
        ranked = file_second(share)(q, vec, kw, ctx)
        head, tail, count = [], [], {}
        for r in ranked:
            count[r["path"]] = count.get(r["path"], 0) + 1
            (head if count[r["path"]] <= cap and len(head) < depth else tail).append(r)
        return head + tail

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
VARIANTS |= tune_vectors.VARIANTS


def evaluate(out: Path, names=None, locomo=None, by_category: bool = False) -> dict:
    unknown = [n for n in names or () if n not in VARIANTS]
    if unknown:
        raise SystemExit(f"unknown variant {', '.join(unknown)}: choose from {', '.join(VARIANTS)}")
    if not (out / "candidates.pkl").is_file():
        raise SystemExit(f"no candidates in {out}: run `python -m benchmarks.tune dump --out {out}` first")
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
    parser = argparse.ArgumentParser(prog="python -m benchmarks.tune")
    parser.add_argument("what", choices=("dump", "lines", "expand", "eval"))
    parser.add_argument("names", nargs="*")
    parser.add_argument("--out", type=Path, default=Path("bench-results/tune"))
    parser.add_argument("--locomo")
    parser.add_argument("--corpus", default="locomo", help="dump: the corpus (locomo, agentmem, longchat, longchat-hard)")
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
