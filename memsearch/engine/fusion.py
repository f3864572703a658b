"""Fusion of the keyword and vector rankings, and merging of overlapping hits of one file.

Every constant here is named with the measurement behind it (benchmarks/README.md).
"""

from __future__ import annotations

import re

from .cjk import cjk_share

__all__ = ["DEFAULT_FUSION", "FUSIONS", "VECTOR_WEIGHT", "RRF_K", "KEYWORD_WEIGHT", "CANDIDATE_FACTOR",
           "MIN_CANDIDATES", "CJK_VECTOR_WEIGHT", "CJK_QUERY_SHARE", "IDENTIFIER_VECTOR_WEIGHT",
           "vector_weight", "convex", "rrf", "fuse", "merge_rows"]

#: Default fusion of the keyword and vector rankings in hybrid mode: "convex" or "rrf".
#: Measured on LoCoMo (benchmarks/README.md): convex beat the best RRF setting on both
#: file recall and turn recall, and both beat either retriever alone.
DEFAULT_FUSION = "convex"
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
    return VECTOR_WEIGHT


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
