"""Retrieval scoring with line-level relevance: pure functions, no I/O, no engine imports.

A question's relevance is a list of :class:`Item`: a file and, optionally, an inclusive
line span (an evidence turn of LoCoMo is a one-line span; a fixture answer may be a few
lines; ``lines=None`` means "anywhere in the file"). A ranked hit is anything with
``path``, ``start_line`` and ``end_line`` (a dict or a :class:`Span`), lines 1-based
and inclusive. A hit *covers* an item when it is in the same file and their lines meet.

Measures (each in [0, 1], per question; average them over questions):

* :func:`file_recall` - share of the relevant files among the first ``k`` distinct files
  of the ranking (Recall@k at file level);
* :func:`line_budget_recall` - read the hits in rank order, distinct lines only, until
  ``budget`` lines were read (the hit that crosses the budget is cut); share of the items
  with at least one line read. With one-line items this is LoCoMo's *turn recall*;
* :func:`token_budget_recall` - the same with a budget of tokens: each new line costs its
  token count; the first line that would go over the budget stops the reading;
* :func:`hits_recall` - share of the items covered by one of the first ``k`` hits (turn recall@k
  hits, blind to hit size: read it beside the budgeted measures);
* :func:`mrr` - 1 / rank of the first hit (among the first ``k``) that covers any item;
* :func:`index_above` - 1 when a ``MEMORY.md`` hit that covers no item ranks above the first hit
  that covers one (among the first ``k``; with no covering hit there, any ``MEMORY.md`` among
  them counts), else 0: a folder index or a generated stub standing in front of the answer;
* :func:`ndcg` - nDCG@k with novelty: a hit's gain is the number of items it covers that
  no earlier hit covered; the ideal ranking covers one new item per rank
  (IDCG = sum of 1/log2(r+1) for r = 1..min(k, items)); the ratio is capped at 1 (one hit
  may cover two items).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping, Sequence

__all__ = ["Item", "Span", "span", "covers", "distinct_files", "file_recall", "line_budget_recall",
           "token_budget_recall", "hits_recall", "mrr", "ndcg", "index_above", "mean", "summarize"]


@dataclass(frozen=True)
class Item:
    """One unit of relevance: ``path`` and an inclusive ``(first, last)`` line span, or None."""

    path: str
    lines: tuple[int, int] | None = None


@dataclass(frozen=True)
class Span:
    """A ranked hit reduced to what scoring needs."""

    path: str
    start_line: int
    end_line: int


def span(hit) -> Span:
    """A :class:`Span` from a dict, a :class:`memsearch.engine.index.Hit` or a Span."""
    if isinstance(hit, Span):
        return hit
    if isinstance(hit, Mapping):
        return Span(hit["path"], int(hit["start_line"]), int(hit["end_line"]))
    return Span(hit.path, int(hit.start_line), int(hit.end_line))


def covers(hit: Span, item: Item) -> bool:
    if hit.path != item.path:
        return False
    if item.lines is None:
        return True
    return hit.start_line <= item.lines[1] and item.lines[0] <= hit.end_line


def _line_in(path: str, line: int, item: Item) -> bool:
    return path == item.path and (item.lines is None or item.lines[0] <= line <= item.lines[1])


def distinct_files(hits: Iterable, k: int) -> list[str]:
    files: list[str] = []
    for hit in hits:
        path = span(hit).path
        if path not in files:
            files.append(path)
            if len(files) == k:
                break
    return files


def file_recall(hits: Sequence, items: Sequence[Item], k: int = 5) -> float:
    wanted = {i.path for i in items}
    if not wanted:
        return 0.0
    return len(wanted & set(distinct_files(hits, k))) / len(wanted)


def _read_lines(hits: Sequence, take: Callable[[str, int], bool]) -> set[tuple[str, int]]:
    """Lines read in rank order while ``take(path, line)`` allows (it sees new lines only)."""
    seen: set[tuple[str, int]] = set()
    for hit in hits:
        s = span(hit)
        for line in range(s.start_line, s.end_line + 1):
            if (s.path, line) in seen:
                continue
            if not take(s.path, line):
                return seen
            seen.add((s.path, line))
    return seen


def _items_found(seen: set[tuple[str, int]], items: Sequence[Item]) -> float:
    if not items:
        return 0.0
    return sum(1 for item in items if any(_line_in(p, n, item) for p, n in seen)) / len(items)


def line_budget_recall(hits: Sequence, items: Sequence[Item], budget: int = 60) -> float:
    count = [0]

    def take(path: str, line: int) -> bool:
        if count[0] >= budget:
            return False
        count[0] += 1
        return True

    return _items_found(_read_lines(hits, take), items)


def token_budget_recall(hits: Sequence, items: Sequence[Item], budget: int,
                        line_tokens: Callable[[str, int], int]) -> float:
    """``line_tokens(path, line)``: the token count of that line (0 for a blank line is fine)."""
    used = [0]

    def take(path: str, line: int) -> bool:
        cost = line_tokens(path, line)
        if used[0] + cost > budget:
            return False
        used[0] += cost
        return True

    return _items_found(_read_lines(hits, take), items)


def hits_recall(hits: Sequence, items: Sequence[Item], k: int = 10) -> float:
    """Share of the items covered by one of the first ``k`` hits, whatever their size."""
    if not items:
        return 0.0
    found = [span(h) for h in hits[:k]]
    return sum(any(covers(h, item) for h in found) for item in items) / len(items)


def mrr(hits: Sequence, items: Sequence[Item], k: int = 10) -> float:
    for rank, hit in enumerate(hits[:k], start=1):
        s = span(hit)
        if any(covers(s, item) for item in items):
            return 1.0 / rank
    return 0.0


def ndcg(hits: Sequence, items: Sequence[Item], k: int = 10) -> float:
    if not items or k <= 0:
        return 0.0
    found: set[int] = set()
    dcg = 0.0
    for rank, hit in enumerate(hits[:k], start=1):
        s = span(hit)
        new = {i for i, item in enumerate(items) if i not in found and covers(s, item)}
        if new:
            dcg += len(new) / math.log2(rank + 1)
            found |= new
    ideal = sum(1.0 / math.log2(r + 1) for r in range(1, min(k, len(items)) + 1))
    return min(1.0, dcg / ideal) if ideal else 0.0


def index_above(hits: Sequence, items: Sequence[Item], k: int = 10) -> float:
    """1.0 when a ``MEMORY.md`` hit covering no item comes before the first covering hit (first ``k``)."""
    for hit in map(span, hits[:k]):
        if any(covers(hit, item) for item in items):
            return 0.0
        if hit.path.rsplit("/", 1)[-1] == "MEMORY.md":
            return 1.0
    return 0.0


def mean(values: Iterable[float]) -> float:
    values = list(values)
    return sum(values) / len(values) if values else 0.0


def summarize(per_question: Sequence[Mapping[str, float]], categories: Sequence[str | None]) -> dict:
    """Mean of each measure overall (``all``) and per category: {cat: {"n", measure: mean}}."""
    groups: dict[str, list[Mapping[str, float]]] = {"all": list(per_question)}
    for scores, cat in zip(per_question, categories):
        if cat:
            groups.setdefault(str(cat), []).append(scores)
    out = {}
    for name, rows in groups.items():
        keys = list(rows[0]) if rows else []
        out[name] = {"n": len(rows)} | {key: round(mean(r[key] for r in rows), 4) for key in keys}
    return out
