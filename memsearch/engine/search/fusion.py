"""Fusion of the keyword and vector rankings, and merging of overlapping hits of one file.

Every constant here is named with the measurement behind it (benchmarks/README.md). The
hybrid ranking (:func:`hybrid`) is: convex fusion with a query-adaptive vector weight
(:func:`vector_weight`: lower for identifier lookups, for questions that list several things and, with an
English-only model, for CJK queries; higher when the keyword candidates share few of the query's words), then a boost
for memory dated in a range the query names (:func:`date_boost`), then, for a question about the
asker, a lean towards the user's turns of a chat (:func:`own_words`), for a request, a lean towards the user's
standing instructions and tastes (:func:`.speakers.standing`), then the row both retrievers rank
first put back first (:func:`agreed_first`), then the rules of the memory's shape (MEMORY.md files yield
to notes, "latest" questions get the newest dated note: :func:`reshape`).
Everything works on ranked row dicts (``id``, ``path``, ``start_line``, ``end_line``,
``score``, ``date``), whatever produced them.

The experiments behind every constant (what was measured, adopted and not adopted) are logged in
benchmarks/research/LOG.md; the figures of the adopted ranking are in docs/benchmarks.md.
"""

from __future__ import annotations

import heapq
from functools import lru_cache
from typing import Callable, Sequence

from .cjk import cjk_share
from .order import put_first, rank_key, rank_order
from .query import DateRange, has_identifier, listed_items, query_dates
from .shape import reshape
from .speakers import own_words, standing

__all__ = [
    "FUSIONS",
    "VECTOR_WEIGHT",
    "RRF_K",
    "KEYWORD_WEIGHT",
    "CANDIDATE_FACTOR",
    "MIN_CANDIDATES",
    "NORM_DEPTH",
    "CJK_VECTOR_WEIGHT",
    "CJK_QUERY_SHARE",
    "IDENTIFIER_VECTOR_WEIGHT",
    "LIST_VECTOR_WEIGHT",
    "DATE_BOOST",
    "DATE_SLACK_DAYS",
    "WEAK_KEYWORD_VECTOR_WEIGHT",
    "FULL_COVERAGE",
    "EVIDENCE_ROWS",
    "keyword_coverage",
    "coverage_weight",
    "vector_weight",
    "hybrid",
    "STAGES",
    "AGREED",
    "dated",
    "agreed_first",
    "date_boost",
    "convex",
    "rrf",
    "fuse",
]

# The default fusion of the keyword and vector rankings in hybrid mode (the ``fusion`` setting) is
# "convex". Measured on LoCoMo (benchmarks/README.md): convex beat the best RRF setting on both
# file recall and turn recall, and both beat either retriever alone.
#: Convex fusion: score = VECTOR_WEIGHT * v + (1 - VECTOR_WEIGHT) * b, where v is the cosine
#: similarity min-max normalised over the vector candidates and b the BM25 score divided by
#: the best BM25 score of the query. A candidate one retriever did not return gets 0 there.
#: 0.4 was best of 0.2-0.5 on LoCoMo (BM25 alone is the stronger retriever on chat logs).
VECTOR_WEIGHT = 0.4
#: Vector weight for a query written mostly in CJK (at least CJK_QUERY_SHARE of its word
#: characters) when the model is not multilingual (``multilingual`` in models.toml): the
#: bundled all-MiniLM-L6-v2 was trained on English, and its vectors for Chinese, Japanese or
#: Korean text are close to noise. On benchmarks/corpora/cjk, hybrid hit@1 was 0.90 at 0.4
#: and 0.92 at 0.2, 0.1 and 0.0 (keyword alone 0.92); 0.2 keeps some of the model's help for
#: the Latin words (names, product terms) such queries often carry.
CJK_VECTOR_WEIGHT = 0.2
CJK_QUERY_SHARE = 0.5
#: Vector weight for a query holding an identifier (memsearch.engine.search.query.is_identifier:
#: "atlas-00042", snake_case, camelCase, "v2"): its exact spelling is what matters, and a small
#: embedding model maps "atlas-00042" and "atlas-00043" to nearly the same vector. On the
#: synthetic corpus (200 lookups of planted codes, 1,000 chunks) file R@5 / MRR@10 were
#: 0.96 / 0.87 at 0.4, 1.00 / 0.965 at 0.3, 1.00 / 0.985 at 0.2, 1.00 / 0.975 at 0.1 (BM25 alone
#: 1.00 / 0.94). LoCoMo is unchanged (10 of 1,536 questions hold such a token: "YouTube", "CS:GO").
IDENTIFIER_VECTOR_WEIGHT = 0.2
#: Vector weight for a question that lists several things (query.listed_items: "in which order did these
#: happen: A, B, C?"): no passage holds them all, so its one vector is a blend that matches none of them
#: well, and the keyword coverage of the whole question is low, which would raise the vector weight
#: instead; each item's own words are what find it. 0.0 / 0.1 / 0.2 gave the same hit@1 on the tuning
#: halves of the long-chat corpora, 0.3 less, 0.5 none of the gain (benchmarks/research/LOG.md, round eleven).
LIST_VECTOR_WEIGHT = 0.2
#: A hybrid hit whose file date (front matter ``date:`` or an ISO date in the file name)
#: falls in a date range the query names ("on 9 November, 2022", "in March 2024", "in June")
#: gains DATE_BOOST x the best fused score, so memory written then comes first. Tuned on
#: LoCoMo conversations 0-4 (197 of 1,536 questions name a date), boosts of 0.1/0.2/0.3/0.5
#: added an absolute 0.1 to 0.3 to the convex score; 0.3 was best on the tuning split:
#: file R@5 0.894 -> 0.897, turn recall@60 0.865 -> 0.869, MRR@10 0.744 -> 0.752 (held-out
#: conversations 5-9: 0.869 -> 0.880, 0.833 -> 0.841, 0.710 -> 0.717).
DATE_BOOST = 0.3
#: Memory is often written a little after the day it tells of (a weekly note, a chat about
#: last Saturday): a file dated up to this many days after the named range still counts.
#: 7 was best of 0/7/14/31 on the tuning split.
DATE_SLACK_DAYS = 7
#: Query-adaptive fusion: when the keyword candidates hold few of the query's words (a paraphrase:
#: "how do I undo a bad release" for a note on `make rollback`), BM25 ranks noise and its fixed
#: weight drowns the vectors. The keyword evidence is the best share of the query's terms (BM25's
#: own analysis: stemmed, stop words dropped) found in one of the first EVIDENCE_ROWS keyword
#: candidates; below FULL_COVERAGE the vector weight rises linearly towards
#: WEAK_KEYWORD_VECTOR_WEIGHT at no shared term. Measured: see the module docstring.
WEAK_KEYWORD_VECTOR_WEIGHT = 0.8
FULL_COVERAGE = 0.6
EVIDENCE_ROWS = 10
#: Reciprocal rank fusion: score = sum over rankings of weight / (RRF_K + rank). The
#: classic constant is 60 (Cormack et al. 2009); 10 was best of 10/30/60 on LoCoMo.
RRF_K = 10
#: Weight of the BM25 ranking in RRF; the vector ranking has weight 1.
KEYWORD_WEIGHT = 2.0
#: Convex fusion's floor for the cosine scores: the min-max normalisation of the vector leg runs from
#: the score of its NORM_DEPTH-th candidate (or its last, when fewer) to its best, and a row below the
#: floor counts as not returned. A fixed depth keeps the fused order the same whatever ``k`` asks for:
#: with the floor at the last candidate fetched, a search for 5 hits (100 candidates) ranked differently
#: from the first 5 of a search for 50 (200 candidates), the depth every quality figure was measured at
#: (benchmarks/research/LOG.md, round eight: LoCoMo tuning hit@1 0.638 at k = 5 against 0.649 at k = 50).
#: 200 was best of 30 / 50 / 75 / 100 / 150 / 200 on LoCoMo's tuning conversations and kept every
#: published figure; the smaller corpora split both ways by a question or two.
NORM_DEPTH = 200
#: Candidates fetched from each retriever: max(k * CANDIDATE_FACTOR, MIN_CANDIDATES) (mode "timeline" fetches
#: its own depth, timeline.TIMELINE_CANDIDATES, instead). Convex fusion normalises over them, so the pool must
#: be deep enough to hold the tails and at least NORM_DEPTH.
CANDIDATE_FACTOR = 4
MIN_CANDIDATES = NORM_DEPTH
FUSIONS = ("convex", "rrf")

def vector_weight(
    query: str,
    multilingual: bool = False,
    keyword: list[dict] | None = None,
    weak: float = WEAK_KEYWORD_VECTOR_WEIGHT,
    full: float = FULL_COVERAGE,
) -> float:
    """The convex fusion's vector weight for ``query``: lower where the model cannot read it, higher
    where the keyword candidates (``keyword``, when given) share few of its words."""
    if not multilingual and cjk_share(query) >= CJK_QUERY_SHARE:
        return CJK_VECTOR_WEIGHT
    if has_identifier(query):
        return IDENTIFIER_VECTOR_WEIGHT
    if listed_items(query):
        return LIST_VECTOR_WEIGHT
    if keyword is None:
        return VECTOR_WEIGHT
    return coverage_weight(keyword_coverage(query, keyword), weak, full)


def coverage_weight(coverage: float, weak: float = WEAK_KEYWORD_VECTOR_WEIGHT, full: float = FULL_COVERAGE) -> float:
    """The vector weight for a keyword ``coverage`` (:func:`keyword_coverage`): VECTOR_WEIGHT from ``full`` up,
    rising linearly to ``weak`` at none."""
    if coverage >= full:
        return VECTOR_WEIGHT
    return VECTOR_WEIGHT + (weak - VECTOR_WEIGHT) * (full - coverage) / full


@lru_cache(maxsize=1)
def _analyzer():
    from .bm25 import Analyzer

    return Analyzer()


@lru_cache(maxsize=16384)
def _terms(text: str) -> frozenset[int]:
    """The ids of ``text``'s BM25 terms (each distinct word analysed once per process; chunk texts recur)."""
    analyzer = _analyzer()
    return frozenset(t for t in map(analyzer.word_id, analyzer.words(text)) if t >= 0)


def keyword_coverage(query: str, keyword: list[dict], rows: int = EVIDENCE_ROWS) -> float:
    """The best share of ``query``'s terms found in one of the first ``rows`` keyword rows (0 when it has none)."""
    terms = _terms(query)
    if not terms:
        return 0.0
    return max((len(terms & _terms(r.get("text", ""))) / len(terms) for r in keyword[:rows]), default=0.0)


def dated(ranked: list[dict], query: str) -> list[dict]:
    """The date stage: :func:`date_boost` for the date ranges ``query`` names."""
    return date_boost(ranked, query_dates(query))


#: The key :func:`hybrid` sets (to True) on the fused row that both retrievers rank first, for :func:`agreed_first`.
AGREED = "agreed"


def agreed_first(ranked: list[dict], query: str) -> list[dict]:
    """The agreement stage: the row both retrievers rank first (marked :data:`AGREED`) is put back first.

    The date boost and the lean to the asker's own turns are tie-breakers between rows the retrievers rank
    close; when the keyword and the vector retriever put the same row first, that agreement is the strongest
    evidence a search has, and no lean moves another row above it (hybrid never loses to its own legs there:
    the lean had put a user's question about an interview above the advice both legs ranked first, and
    hybrid's hit@1 on ``longchat-alt``'s tuning half below the vector leg's; benchmarks/research/LOG.md,
    round nine). The memory's shape (:func:`reshape`) still comes after it: a MEMORY.md both legs rank first
    yields to the notes of its folder (both legs match a folder index on the words it names), and a
    "latest" question still gets the newest note (both legs rank an older statement of a fact first as
    readily as the newer one)."""
    if not ranked or AGREED in ranked[0]:
        return ranked
    place = next((n for n, r in enumerate(ranked) if AGREED in r), None)
    if place is None:
        return ranked
    return put_first(ranked, place)


#: The stages after fusion, in order, each ``(ranked rows, query) -> ranked rows``: the date boost, the
#: lean to the asker's own turns (:func:`own_words`), the lean of a request to the user's standing instructions and
#: tastes (:func:`.speakers.standing`), the row both retrievers rank first put back first
#: (:func:`agreed_first`), the memory's shape (:func:`reshape`).
STAGES: tuple[Callable[[list[dict], str], list[dict]], ...] = (dated, own_words, standing, agreed_first, reshape)


def hybrid(fusion: str, query: str, vector: list[dict], keyword: list[dict], multilingual: bool = False, *,
           weight: Callable[..., float] | None = None,
           stages: Sequence[Callable[[list[dict], str], list[dict]]] | None = None) -> list[dict]:
    """The hybrid ranking of ``query``: fused with a query-adaptive weight (``weight(query, multilingual,
    keyword)``, default :func:`vector_weight`), then each of ``stages`` in turn (default :data:`STAGES`:
    date-aware, leaning to the user's turns of a chat for a question about the asker, the row both legs rank
    first put back first, shaped by the memory's layout). A variant replaces one stage or the weight and keeps the rest."""
    ranked = _mark_agreed(fuse(fusion, vector, keyword, (weight or vector_weight)(query, multilingual, keyword)),
                          vector, keyword)
    for stage in STAGES if stages is None else stages:
        ranked = stage(ranked, query)
    return ranked


def _mark_agreed(ranked: list[dict], vector: list[dict], keyword: list[dict]) -> list[dict]:
    """``ranked`` with the row that both ``vector`` and ``keyword`` rank first marked :data:`AGREED` (none: as it is)."""
    if not vector or not keyword or vector[0]["id"] != keyword[0]["id"]:
        return ranked
    first = vector[0]["id"]
    place = next((n for n, r in enumerate(ranked) if r["id"] == first), None)
    if place is None:
        return ranked
    out = list(ranked)
    out[place] = dict(out[place], **{AGREED: True})
    return out


def date_boost(ranked: list[dict], ranges: tuple[DateRange, ...] | list[DateRange]) -> list[dict]:
    """Rows dated in one of ``ranges`` (see :data:`DATE_BOOST`) gain, and the ranking is re-sorted."""
    if not ranges or not ranked:
        return ranked
    bonus = DATE_BOOST * max(r["score"] for r in ranked)
    boosted = [
        dict(r, score=r["score"] + bonus) if any(d.contains(r.get("date"), DATE_SLACK_DAYS) for d in ranges) else r
        for r in ranked
    ]
    return rank_order(boosted)


def fuse(fusion: str, vector: list[dict], keyword: list[dict], weight: float | None = None) -> list[dict]:
    """One ranking from the two: ``fusion`` is one of :data:`FUSIONS`; ``weight`` is the
    convex fusion's vector weight (default :data:`VECTOR_WEIGHT`; see :func:`vector_weight`)."""
    if fusion == "rrf":
        return rrf([(1.0, vector), (KEYWORD_WEIGHT, keyword)])
    return convex(vector, keyword, VECTOR_WEIGHT if weight is None else weight)


def convex(vector: list[dict], keyword: list[dict], weight: float = VECTOR_WEIGHT, depth: int = NORM_DEPTH) -> list[dict]:
    """Convex combination of min-max normalised cosine (floor at the ``depth``-th best, :data:`NORM_DEPTH`)
    and max-normalised BM25 scores."""
    vs, bs = [r["score"] for r in vector], [r["score"] for r in keyword]
    v_lo, v_hi = (_floor(vs, depth), max(vs)) if vs else (0.0, 1.0)
    b_hi = max(bs, default=0.0) or 1.0
    span, rest = (v_hi - v_lo) or 1.0, 1 - weight
    # each row once, the vector leg's dict where it has one (then the keyword-only rows, in their order), with
    # each leg's part (below the vector floor: as not returned; a row missing from a leg gets that leg's part
    # of 0); the parts summed in the same order for every row (the same floats). One pass per leg and one
    # sort of tuples keyed as rank_key's, the row's place last (a stable sort's ties): 0.145 -> 0.10 ms a
    # search of examples/memory (200 rows), the largest part of an answer's CPU.
    v_none, b_none = weight * 0.0, rest * (0.0 / b_hi)
    parts = {r["id"]: [weight * ((s - v_lo) / span if s > v_lo else 0.0), b_none, r] for r, s in zip(vector, vs)}
    for row, s in zip(keyword, bs):
        entry = parts.get(row["id"])
        if entry is None:
            parts[row["id"]] = [v_none, rest * (s / b_hi), row]
        else:
            entry[1] = rest * (s / b_hi)
    keyed = [(-(score := v + b), row["path"], row["start_line"], place, score, row)
             for place, (v, b, row) in enumerate(parts.values())]
    keyed.sort()
    return [dict(key[5], score=key[4]) for key in keyed]


def _floor(scores: list[float], depth: int) -> float:
    """The ``depth``-th best of ``scores`` (the lowest when there are fewer)."""
    return min(scores) if len(scores) <= depth else heapq.nlargest(depth, scores)[-1]


def rrf(rankings: list[tuple[float, list[dict]]]) -> list[dict]:
    """Reciprocal rank fusion of several rankings of rows keyed by ``id``."""
    scores: dict[str, float] = {}
    rows: dict[str, dict] = {}
    for weight, ranking in rankings:
        for rank, row in enumerate(ranking, start=1):
            scores[row["id"]] = scores.get(row["id"], 0.0) + weight / (RRF_K + rank)
            rows.setdefault(row["id"], row)
    order = sorted(scores, key=lambda i: rank_key(rows[i], scores[i]))
    return [dict(rows[i], score=scores[i]) for i in order]
