"""The rules of agent memory's shape applied to a fused ranking, and the merging of overlapping hits of one file.

Generated ``MEMORY.md`` stubs count as no content, any other ``MEMORY.md`` yields to the notes of its folder that match
(unless the question asks where something is kept: there the folders' ``MEMORY.md`` files are the answers, and one
yields to those of its subfolders), and
"latest" questions get the newest dated note (:func:`reshape`, called by :func:`.fusion.hybrid`); their
measurements are in :mod:`.fusion`'s docstring (the third round). Rows are ranked dicts as in :mod:`.fusion`.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from functools import lru_cache

from ...memory.editor import index_text
from ...memory.tree import INDEX_NAME
from .order import lift, rank_key, rank_order
from .query import asks_for_folder, wants_latest

__all__ = [
    "STUB_WEIGHT",
    "YIELD_FLOOR",
    "FOLDER_GAIN",
    "FOLDER_NOTE_FLOOR",
    "LATEST_BOOST",
    "LATEST_FLOOR",
    "LATEST_DECAY",
    "is_stub",
    "memory_md_yield",
    "memory_md_rule",
    "latest_boost",
    "reshape",
    "merge_rows",
]

# --- the shape of agent memory (measured on benchmarks/agentmem.py: benchmarks/research/LOG.md) ------
#: A generated MEMORY.md stub (the text the memory tool writes into a new directory, "Memory about
#: acme: the notes filed in clients/acme/.") holds no memory: it names its folder, so a query naming
#: the folder matched it first, and every hit in that folder carries it anyway (``Hit.memory_md``).
#: Its score is multiplied by STUB_WEIGHT (0.5, 0.1 and 0.0 measured alike; 1.0 is worse).
STUB_WEIGHT = 0.1
#: A MEMORY.md that is not a stub (a folder index, a summary the agent wrote) shares the query's words
#: without holding the answer, which is in a note: it is placed just below every note of its folder and
#: below that also matches, i.e. scores at least YIELD_FLOOR of it (a hit carries its nearest MEMORY.md
#: anyway, ``Hit.memory_md``); one with no such note keeps its rank: that is how an agent finds a folder.
#: Earlier only an index that *named* the note yielded, and only to the best named one; measured on
#: benchmarks/agentmem.py (docs/benchmarks.md). 0.3 was best of 0.3-0.9 on its tuning folders. A question asking
#: which folder holds something (query.asks_for_folder) keeps every MEMORY.md at its rank: `codeagent`'s hit@1
#: 0.632 / 0.539 -> 0.658 / 0.579 (benchmarks/research/LOG.md, round thirteen).
YIELD_FLOOR = 0.3
#: In a question asking where something is kept (query.asks_for_folder), a folder's MEMORY.md is the answer: every one
#: that is not a stub gains FOLDER_GAIN x the best score, and yields (by YIELD_FLOOR) to the matching MEMORY.md of its
#: subfolders, the more specific folder. It yields to a note of its folder only when the note scores at least
#: FOLDER_NOTE_FLOOR of its raised score: "where did I write down the savings rate" asks for the note that holds it,
#: which its folder's summary names ("budget.md has the monthly budget and the savings rate").
#: Chosen on `codeagent`'s tuning projects' folder questions and on 12 questions of that note kind asked of the
#: `agentmem` tree (benchmarks/research/where_notes.py; LOG.md, round sixteen): gains 0.1 / 0.2 / 0.3 / 0.5 / 1.0 gave
#: folder file R@5 0.6 / 0.6 / 0.8 / 0.8 / 0.8 with no note floor, which put the note first for only 4 of the 12 (11
#: before the round); at gain 0.3, floors 0.9 / 0.8 / 0.7 / 0.6 / 0.5 gave 4 / 5 / 9 / 10 / 10 notes first at folder
#: file R@5 0.8 / 0.7 / 0.7 / 0.7 / 0.5; at floor 0.6, gains 0.2 / 0.5 gave 0.6 / 0.7 with 10 / 9 notes first.
FOLDER_GAIN = 0.3
FOLDER_NOTE_FLOOR = 0.6
#: A query asking for the newest state (query.wants_latest: "latest", "most recent", "last time",
#: "so far", "current", "now"; not "last week") raises the relevant dated rows (scoring at least
#: LATEST_FLOOR of the best) by recency: the newest date gains LATEST_BOOST x the best score, the
#: next LATEST_DECAY of that, and so on (boosts 0.15 .. 0.5, floors 0.3 .. 0.7 measured alike).
LATEST_BOOST = 0.3
LATEST_FLOOR = 0.5
LATEST_DECAY = 0.5


@lru_cache(maxsize=4096)
def _stub(directory: str) -> str:
    return index_text(directory).strip()


def _is_index(path: str) -> bool:
    """Whether ``path`` names a ``MEMORY.md`` (``endswith`` first: most rows are notes, and it is cheap)."""
    return path.endswith(INDEX_NAME) and path.rsplit("/", 1)[-1] == INDEX_NAME


def is_stub(row: dict) -> bool:
    """Whether ``row`` is a whole ``MEMORY.md`` exactly as the memory tool generated it."""
    return _is_index(row["path"]) and row.get("text", "").strip() == _stub(_dir(row))


def _dir(row: dict) -> str:
    return row.get("dir") or (row["path"].rsplit("/", 1)[0] if "/" in row["path"] else ".")


def memory_md_yield(ranked: list[dict], stub_weight: float = STUB_WEIGHT, floor: float = YIELD_FLOOR, *,
                    folder_floor: float | None = None) -> list[dict]:
    """Stubs cut to :data:`STUB_WEIGHT`; any other ``MEMORY.md`` placed just below every note of its folder
    and below that also matches (scores at least ``floor`` of it) and, given ``folder_floor``, every written
    ``MEMORY.md`` of its subfolders that scores at least ``folder_floor`` of it, as already placed (the deepest are
    placed first); one with no such row keeps its rank.
    ``ranked`` is best first in :func:`~.order.rank_order`'s order, as every stage leaves it."""
    places, notes = [], {}  # the MEMORY.md rows' places; note path -> its best chunk's score
    for n, r in enumerate(ranked):
        path, score = r["path"], r["score"]
        if path.endswith(INDEX_NAME) and _is_index(path):
            places.append(n)
        elif score > notes.get(path, -math.inf):
            notes[path] = score
    if not places:
        return ranked
    moved = {}  # place -> the row with its lowered score (only MEMORY.md rows change; the notes stay)
    placed: dict[str, float] = {}  # a written MEMORY.md's path -> the best score of its rows as placed
    in_folder: dict[str, list[float]] = {}  # folder prefix -> the best scores of the notes in it and below
    if folder_floor is not None:
        places.sort(key=lambda n: -ranked[n]["path"].count("/"))  # stable: one folder's rows keep their order
    for n in places:
        row = ranked[n]
        if is_stub(row):
            moved[n] = dict(row, score=row["score"] * stub_weight)
            continue
        prefix = "" if _dir(row) == "." else _dir(row) + "/"
        scores = in_folder.get(prefix)
        if scores is None:
            scores = in_folder[prefix] = [s for note, s in notes.items() if note.startswith(prefix)]
        score = row["score"]
        high = score + 1e-9
        matching = [x for x in scores if floor * score <= x < high]
        if folder_floor is not None:
            matching += [x for index, x in placed.items() if index.startswith(prefix) and index != row["path"]
                         and folder_floor * score <= x < high]
        if matching:
            row = moved[n] = dict(row, score=min(matching) * (1 - 1e-6))
        if folder_floor is not None and row["score"] > placed.get(row["path"], -math.inf):
            placed[row["path"]] = row["score"]
    if not moved:
        return ranked
    # only lowered rows move: the others keep their order, and each lowered row goes back in by bisection
    # (rank_order's order: its key, then its place), not a sort of them all: the rule 0.11 -> 0.09 ms a search of
    # examples/memory, whose 200 rows hold 13 MEMORY.md files
    kept = [(n, r) for n, r in enumerate(ranked) if n not in moved]  # (place, row), in rank order
    for entry in moved.items():
        kept.insert(bisect_left(kept, _placed_key(entry), key=_placed_key), entry)
    return [row for _, row in kept]


def _placed_key(entry: tuple[int, dict]) -> tuple:
    """rank_order's key of a (place, row) pair: :func:`~.order.rank_key`, then the place."""
    return (*rank_key(entry[1]), entry[0])


def latest_boost(
    ranked: list[dict],
    query: str,
    boost: float = LATEST_BOOST,
    floor: float = LATEST_FLOOR,
    decay: float = LATEST_DECAY,
) -> list[dict]:
    """For a "latest" query (:func:`wants_latest`), relevant dated rows gain by recency."""
    if not ranked or not boost or not wants_latest(query):
        return ranked
    top = max(r["score"] for r in ranked)
    dates = sorted({r["date"] for r in ranked if r.get("date") and r["score"] >= floor * top}, reverse=True)
    if not dates:
        return ranked
    gain = {d: boost * top * decay**i for i, d in enumerate(dates)}
    return _sorted(
        [
            dict(r, score=r["score"] + gain[r["date"]]) if r["score"] >= floor * top and r.get("date") in gain else r
            for r in ranked
        ]
    )


def memory_md_rule(ranked: list[dict], query: str, gain: float = FOLDER_GAIN) -> list[dict]:
    """:func:`memory_md_yield` for ``query``. A question that asks where something is kept
    (:func:`.query.asks_for_folder`) has a folder's ``MEMORY.md`` as its answer: there every one that is not a stub
    gains ``gain`` x the best score, and yields only to a note that matches nearly as well (:data:`FOLDER_NOTE_FLOOR`)
    and to the ``MEMORY.md`` files of its subfolders that match (stubs are still cut)."""
    if not ranked or not asks_for_folder(query):
        return memory_md_yield(ranked)
    return memory_md_yield(lift(ranked, _is_answer, gain), floor=FOLDER_NOTE_FLOOR, folder_floor=YIELD_FLOOR)


def _is_answer(row: dict) -> bool:
    """Whether ``row`` is a ``MEMORY.md`` that can answer a question about a folder (one that is not a stub)."""
    return _is_index(row["path"]) and not is_stub(row)


def reshape(ranked: list[dict], query: str) -> list[dict]:
    """Both rules, newest state first, then ``MEMORY.md`` yielding to the notes (:func:`memory_md_rule`)."""
    return memory_md_rule(latest_boost(ranked, query), query)


def _sorted(rows: list[dict]) -> list[dict]:
    return rank_order(rows)


def merge_rows(ranked: list[dict], k: int) -> list[dict]:
    """Merge overlapping rows of one file (best score wins), keep the first ``k``.

    Each merged row carries ``_lines``: line number -> text, the union of its parts.
    """
    merged: list[dict] = []
    of_file: dict[str, list[dict]] = {}  # path -> its hits in ``merged``, in the same order (only they overlap)
    for row in ranked:
        same = of_file.get(row["path"], ())
        target = next((m for m in same if _overlaps(m, row)), None) if same else None
        if target is None:
            if len(merged) < k:
                hit = dict(row, _lines=_line_map(row))
                merged.append(hit)
                of_file.setdefault(row["path"], []).append(hit)
            continue
        _absorb(target, row)
        # the grown hit may now reach a lower-ranked hit of the same file: fold it in
        for other in [m for m in same if m is not target and _overlaps(m, target)]:
            _absorb(target, other)
            merged.remove(other)
            same.remove(other)
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
