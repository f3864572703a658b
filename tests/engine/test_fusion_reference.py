"""The fused ranking's fast paths (convex fusion in one pass per leg, MEMORY.md rows put back by bisection) give
exactly what the plain rules give: every score to the last bit and every place, ties included."""

from __future__ import annotations

import math
import random

from memsearch.engine.search import fusion, shape
from memsearch.engine.search.order import rank_order
from memsearch.memory.editor import index_text


def plain_convex(vector, keyword, weight, depth=fusion.NORM_DEPTH):
    """The rule as written: min-max cosine over its first ``depth`` scores, BM25 over its best, summed, sorted."""
    rows = {}
    for row in vector + keyword:
        rows.setdefault(row["id"], row)
    v = {r["id"]: r["score"] for r in vector}
    b = {r["id"]: r["score"] for r in keyword}
    v_lo = (min(v.values()) if len(v) <= depth else sorted(v.values(), reverse=True)[depth - 1]) if v else 0.0
    v_hi = max(v.values()) if v else 1.0
    b_hi = max(b.values(), default=0.0) or 1.0
    span = (v_hi - v_lo) or 1.0

    def score(i):
        return weight * max(0.0, (v[i] - v_lo) / span if i in v else 0.0) + (1 - weight) * (b.get(i, 0.0) / b_hi)

    return rank_order([dict(row, score=score(i)) for i, row in rows.items()])


def plain_yield(ranked, stub_weight=shape.STUB_WEIGHT, floor=shape.YIELD_FLOOR, folder_floor=None):
    """Every MEMORY.md row rescored by the rule (the deepest first, when they yield to each other), then the whole
    ranking sorted again."""
    notes = {}
    for r in ranked:
        if r["path"].rsplit("/", 1)[-1] != "MEMORY.md":
            notes[r["path"]] = max(notes.get(r["path"], -math.inf), r["score"])
    rescored, placed = {}, {}
    order = [n for n, r in enumerate(ranked) if r["path"].rsplit("/", 1)[-1] == "MEMORY.md"]
    if folder_floor is not None:
        order.sort(key=lambda n: -ranked[n]["path"].count("/"))
    for n in order:
        r = ranked[n]
        if shape.is_stub(r):
            rescored[n] = dict(r, score=r["score"] * stub_weight)
            continue
        prefix = "" if r["dir"] == "." else r["dir"] + "/"
        top = r["score"] + 1e-9
        matching = [s for p, s in notes.items() if p.startswith(prefix) and floor * r["score"] <= s < top]
        if folder_floor is not None:
            matching += [s for p, s in placed.items() if p.startswith(prefix) and p != r["path"]
                         and folder_floor * r["score"] <= s < top]
        rescored[n] = dict(r, score=min(matching) * (1 - 1e-6)) if matching else r
        if folder_floor is not None:
            placed[r["path"]] = max(placed.get(r["path"], -math.inf), rescored[n]["score"])
    return rank_order([rescored.get(n, r) for n, r in enumerate(ranked)])


def random_rows(rng, n, prefix):
    folders = [".", "a", "a/b", "c"]
    rows = []
    for i in range(n):
        folder = rng.choice(folders)
        name = "MEMORY.md" if rng.random() < 0.15 else f"note{rng.randrange(8)}.md"
        path = name if folder == "." else f"{folder}/{name}"
        text = index_text(folder).strip() if name == "MEMORY.md" and rng.random() < 0.3 else f"text {i}"
        # a few scores repeat, so that ties are broken by path and line as rank_order breaks them
        score = round(rng.random(), 1) if rng.random() < 0.3 else rng.random()
        rows.append({"id": f"{prefix}{rng.randrange(3 * n)}", "path": path, "dir": folder, "start_line": 1 + 10 * i,
                     "end_line": 5 + 10 * i, "text": text, "score": score, "date": None, "heading": ""})
    seen, unique = set(), []
    for r in sorted(rows, key=lambda r: -r["score"]):
        if r["id"] not in seen:
            seen.add(r["id"])
            unique.append(r)
    return unique


def same(a, b):
    return [(r["id"], r["score"]) for r in a] == [(r["id"], r["score"]) for r in b]


def test_convex_equals_the_plain_rule_to_the_last_bit():
    rng = random.Random(7)
    for trial in range(300):
        vector = random_rows(rng, rng.randrange(0, 60), "")
        keyword = random_rows(rng, rng.randrange(0, 60), "")  # ids shared with the vector leg's in part
        weight = rng.choice([0.2, 0.4, 0.8])
        depth = rng.choice([5, 30, fusion.NORM_DEPTH])
        assert same(fusion.convex(vector, keyword, weight, depth), plain_convex(vector, keyword, weight, depth)), trial


def test_memory_md_yield_equals_the_plain_rule_and_a_full_sort():
    rng = random.Random(11)
    moved = 0
    for trial in range(400):
        ranked = rank_order(random_rows(rng, rng.randrange(1, 50), "r"))
        # odd trials: a question about where something is kept (MEMORY.md yields to MEMORY.md, to notes only by more)
        floors = {"floor": shape.FOLDER_NOTE_FLOOR, "folder_floor": shape.YIELD_FLOOR} if trial % 2 else {}
        got, want = shape.memory_md_yield(ranked, **floors), plain_yield(ranked, **floors)
        assert same(got, want), trial
        moved += got != ranked
    assert moved > 100  # the rule fired, the bisection was exercised
