"""Fusion of the keyword and vector rankings, and merging of overlapping hits of one file.

Every constant here is named with the measurement behind it (benchmarks/README.md). The
hybrid ranking (:func:`hybrid`) is: convex fusion with a query-adaptive vector weight
(:func:`vector_weight`: lower for identifier lookups and, with an English-only model, for
CJK queries), then a boost for memory dated in a range the query names (:func:`date_boost`).
Everything works on ranked row dicts (``id``, ``path``, ``start_line``, ``end_line``,
``score``, ``date``), whatever produced them.

Tuned on LoCoMo conversations 0-4 only (offline, over dumped candidate lists of every
question: top 200 by BM25 and by cosine); measured and *not* adopted, each on the tuning
split (file R@5 / turn recall@60 lines / MRR@10, baseline 0.894 / 0.865 / 0.744):

* per-file diversification (each further chunk of a file already ranked pays x0.9 .. x0.5
  or -0.05 .. -0.2): file R@k cannot change (a file ranks by its best chunk), and turn
  recall fell (0.847 .. 0.796): the second chunk of a relevant file is often relevant too;
* file-level aggregation (a chunk's score mixed with its file's top-2/3 chunk mean,
  0.2 .. 0.6): at best 0.892 / 0.870 / 0.745, held-out 0.869 -> 0.872 / 0.833 -> 0.852 / 0.711;
  mixed on the splits and within noise, so left out;
* other normalisations (z-score for both, min-max for both, max for both) and vector weights
  0.2 .. 0.6: none beat min-max cosine + max-normalised BM25 at 0.4 on the tuning split;
* pseudo-relevance feedback on the query vector (Rocchio, beta 0.3 .. 1.0 over the top 3 .. 10
  fused chunks): 0.891 .. 0.896 / 0.857 .. 0.862 / 0.738 .. 0.742, no gain;
* embedding chunks without their context header (title, heading path, date): vector alone
  0.753 -> 0.739 file R@5, hybrid 0.890 / 0.863 / 0.743; BM25 without the header: alone
  0.871 -> 0.870 / 0.836 -> 0.825 / 0.713 -> 0.696, hybrid 0.890 / 0.850 / 0.736. Both keep it.

A second round, with the date boost in (``python -m benchmarks.tune``, which replays every
question's dumped candidates; tuning split baseline 0.897 / 0.947 / 0.869 / 0.752 as file R@5 /
R@10 / turn recall@60 lines / MRR@10), adopted nothing: every row was within +-0.008 of the
baseline on the tuning split and none gained on all four measures there. Tried: a chunk gaining
a share (0.1 .. 0.5) of its adjacent chunks' scores (best: 0.890 / 0.945 / 0.872 / 0.756, file R@5
down); its file's second-best or top-3 mean score (0.1 .. 0.3: file R@5 0.888 .. 0.895); at most
1 / 2 / 3 chunks of a file in the top 10 (turn recall 0.777 / 0.848 / 0.865); Rocchio over the top
3 / 5 fused or BM25 hits (beta 0.3 / 0.6: 0.890 .. 0.898 / 0.861 .. 0.867); BM25 scores to the power
0.5 / 0.75 / 1.5 before fusion (MRR 0.737 .. 0.746); a query-length-dependent vector weight; a boost
for lines spoken by a name the query holds (0.05 .. 0.2: 0.897 / 0.867 / 0.751); and each turn
embedded on its own, a chunk's cosine mixed with its best line's (0.3 .. 1.0: 0.884 .. 0.893 file
R@5, turn recall 0.847 .. 0.864); RM3-style expansion of the BM25 query with the 3 / 8 best terms
of the top 3 hybrid hits, its BM25 list added at 0.2 .. 1.0 (turn recall up to 0.879 but MRR down to
0.733, held-out 0.887 / 0.931 / 0.853 / 0.716; the best balance, 8 terms at 0.2, 0.898 / 0.945 /
0.871 / 0.752, is noise for a second full-text query the latency budget has no room for). The misses left are mostly multi-hop and open-domain questions
(file R@5 0.65 / 0.63 on the tuning split) whose evidence turns share few words with the question
and sit far down both candidate lists (BM25 and cosine ranks 20 .. 150): re-ranking the same two
lists cannot lift them, a better first-stage representation would.
"""

from __future__ import annotations

from .cjk import cjk_share
from .query import DateRange, has_identifier, query_dates

__all__ = ["FUSIONS", "VECTOR_WEIGHT", "RRF_K", "KEYWORD_WEIGHT", "CANDIDATE_FACTOR",
           "MIN_CANDIDATES", "CJK_VECTOR_WEIGHT", "CJK_QUERY_SHARE", "IDENTIFIER_VECTOR_WEIGHT", "DATE_BOOST",
           "DATE_SLACK_DAYS", "vector_weight", "hybrid", "date_boost", "convex", "rrf", "fuse", "merge_rows"]

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
#: Reciprocal rank fusion: score = sum over rankings of weight / (RRF_K + rank). The
#: classic constant is 60 (Cormack et al. 2009); 10 was best of 10/30/60 on LoCoMo.
RRF_K = 10
#: Weight of the BM25 ranking in RRF; the vector ranking has weight 1.
KEYWORD_WEIGHT = 2.0
#: Candidates fetched from each retriever: max(k * CANDIDATE_FACTOR, MIN_CANDIDATES).
#: Convex fusion normalises over these, so the pool must be deep enough to hold the tails.
CANDIDATE_FACTOR = 4
MIN_CANDIDATES = 100
FUSIONS = ("convex", "rrf")


def vector_weight(query: str, multilingual: bool = False) -> float:
    """The convex fusion's vector weight for ``query``: lower where the model cannot read it."""
    if not multilingual and cjk_share(query) >= CJK_QUERY_SHARE:
        return CJK_VECTOR_WEIGHT
    if has_identifier(query):
        return IDENTIFIER_VECTOR_WEIGHT
    return VECTOR_WEIGHT


def hybrid(fusion: str, query: str, vector: list[dict], keyword: list[dict], multilingual: bool = False) -> list[dict]:
    """The hybrid ranking of ``query``: fused with a query-adaptive weight, then date-aware."""
    ranked = fuse(fusion, vector, keyword, vector_weight(query, multilingual))
    return date_boost(ranked, query_dates(query))


def date_boost(ranked: list[dict], ranges: tuple[DateRange, ...] | list[DateRange]) -> list[dict]:
    """Rows dated in one of ``ranges`` (see :data:`DATE_BOOST`) gain, and the ranking is re-sorted."""
    if not ranges or not ranked:
        return ranked
    bonus = DATE_BOOST * max(r["score"] for r in ranked)
    boosted = [dict(r, score=r["score"] + bonus) if any(d.contains(r.get("date"), DATE_SLACK_DAYS) for d in ranges) else r
               for r in ranked]
    return sorted(boosted, key=lambda r: (-r["score"], r["path"], r["start_line"]))


def fuse(fusion: str, vector: list[dict], keyword: list[dict], weight: float | None = None) -> list[dict]:
    """One ranking from the two: ``fusion`` is one of :data:`FUSIONS`; ``weight`` is the
    convex fusion's vector weight (default :data:`VECTOR_WEIGHT`; see :func:`vector_weight`)."""
    if fusion == "rrf":
        return rrf([(1.0, vector), (KEYWORD_WEIGHT, keyword)])
    return convex(vector, keyword, VECTOR_WEIGHT if weight is None else weight)


def merge_rows(ranked: list[dict], k: int) -> list[dict]:
    """Merge overlapping rows of one file (best score wins), keep the first ``k``.

    Each merged row carries ``_lines``: line number -> text, the union of its parts.
    """
    merged: list[dict] = []
    for row in ranked:
        target = next((m for m in merged if _overlaps(m, row)), None)
        if target is None:
            if len(merged) < k:
                merged.append(dict(row, _lines=_line_map(row)))
            continue
        _absorb(target, row)
        # the grown hit may now reach a lower-ranked hit of the same file: fold it in
        for other in [m for m in merged if m is not target and _overlaps(m, target)]:
            _absorb(target, other)
            merged.remove(other)
    return merged


def _overlaps(a: dict, b: dict) -> bool:
    return a["path"] == b["path"] and b["start_line"] <= a["end_line"] and a["start_line"] <= b["end_line"]


def _line_map(row: dict) -> dict[int, str]:
    return {row["start_line"] + i: line for i, line in enumerate(row["text"].split("\n"))}


def _absorb(target: dict, row: dict) -> None:
    lines = row.get("_lines") or _line_map(row)
    target["start_line"] = min(target["start_line"], row["start_line"])
    target["end_line"] = max(target["end_line"], row["end_line"])
    for number, line in lines.items():
        if len(line) > len(target["_lines"].get(number, "")):
            target["_lines"][number] = line


def convex(vector: list[dict], keyword: list[dict], weight: float = VECTOR_WEIGHT) -> list[dict]:
    """Convex combination of min-max normalised cosine and max-normalised BM25 scores."""
    rows: dict[str, dict] = {}
    for row in vector + keyword:
        rows.setdefault(row["id"], row)
    v = {r["id"]: r["score"] for r in vector}
    b = {r["id"]: r["score"] for r in keyword}
    v_lo, v_hi = (min(v.values()), max(v.values())) if v else (0.0, 1.0)
    b_hi = max(b.values(), default=0.0) or 1.0
    scores = {
        i: weight * ((v[i] - v_lo) / ((v_hi - v_lo) or 1.0) if i in v else 0.0)
        + (1 - weight) * (b.get(i, 0.0) / b_hi)
        for i in rows
    }
    order = sorted(scores, key=lambda i: (-scores[i], rows[i]["path"], rows[i]["start_line"]))
    return [dict(rows[i], score=scores[i]) for i in order]


def rrf(rankings: list[tuple[float, list[dict]]]) -> list[dict]:
    """Reciprocal rank fusion of several rankings of rows keyed by ``id``."""
    scores: dict[str, float] = {}
    rows: dict[str, dict] = {}
    for weight, ranking in rankings:
        for rank, row in enumerate(ranking, start=1):
            scores[row["id"]] = scores.get(row["id"], 0.0) + weight / (RRF_K + rank)
            rows.setdefault(row["id"], row)
    order = sorted(scores, key=lambda i: (-scores[i], rows[i]["path"], rows[i]["start_line"]))
    return [dict(rows[i], score=scores[i]) for i in order]
