"""Convex fusion ranks the same whatever ``k`` asks for: the vector leg's floor is at a fixed depth (NORM_DEPTH)."""

from __future__ import annotations

import random

import pytest

from memsearch.engine.embed.embedder import HashEmbedder
from memsearch.engine.index import MemoryIndex
from memsearch.engine.search.fusion import CANDIDATE_FACTOR, MIN_CANDIDATES, NORM_DEPTH, convex

WORDS = ("garden tomatoes soil blight compost seeds budget kitchen worktops carpenter marathon taper pace "
         "interview salary notice wedding guests caterer photographer spanish podcast verbs").split()


def _rows(n: int, seed: int = 7) -> list[dict]:
    rng = random.Random(seed)
    scores = sorted((rng.uniform(0.05, 0.9) for _ in range(n)), reverse=True)
    return [{"id": f"r{i}", "path": f"f{i % 40}.md", "start_line": i, "end_line": i, "score": s}
            for i, s in enumerate(scores)]


def test_the_fused_order_does_not_depend_on_how_deep_the_vector_leg_was_fetched():
    vector = _rows(NORM_DEPTH + 150)
    keyword = [dict(r, score=10.0 / (1 + i)) for i, r in enumerate(random.Random(3).sample(vector, 60))]
    deep, shallow = convex(vector, keyword), convex(vector[:NORM_DEPTH], keyword)
    assert [r["id"] for r in deep[:50]] == [r["id"] for r in shallow[:50]]
    assert [r["score"] for r in deep[:50]] == pytest.approx([r["score"] for r in shallow[:50]])
    # a row below the floor counts as not returned by the vector leg: its score is its keyword share alone
    below = vector[-1]
    fused = next(r for r in deep if r["id"] == below["id"])
    assert fused["score"] == pytest.approx(0.6 * dict((r["id"], r["score"] / 10.0) for r in keyword).get(below["id"], 0.0))


def test_a_short_vector_list_still_spans_its_own_scores():
    vector = _rows(12)
    fused = convex(vector, [], weight=1.0)
    assert fused[0]["score"] == pytest.approx(1.0) and fused[-1]["score"] == pytest.approx(0.0)


def test_every_search_fetches_at_least_the_normalisation_depth():
    assert MIN_CANDIDATES >= NORM_DEPTH
    assert max(5 * CANDIDATE_FACTOR, MIN_CANDIDATES) == max(50 * CANDIDATE_FACTOR, MIN_CANDIDATES)


def _tree(rng: random.Random, files: int, sections: int) -> dict[str, str]:
    tree = {}
    for f in range(files):
        body = [f"# Notes {f}"]
        for s in range(sections):
            words = " ".join(rng.choice(WORDS) for _ in range(12))
            body.append(f"\n## Day {s}\n\nUser: {words}.\nAssistant: {' '.join(rng.choice(WORDS) for _ in range(20))}.\n")
        tree[f"chats/2026-0{1 + f % 9}-{10 + f % 18:02d}-{f}.md"] = "\n".join(body)
    return tree


def _same_first_hits(index, queries, k=5, deep=60):
    index.sync()
    for query in queries:
        few, many = index.search(query, k=k), index.search(query, k=deep)
        assert [(h.path, h.start_line, h.end_line) for h in few] == [(h.path, h.start_line, h.end_line) for h in many[:k]], query
        assert [h.score for h in few] == pytest.approx([h.score for h in many[:k]]), query


def test_a_search_for_5_hits_returns_the_first_5_of_a_search_for_60(make_tree, tmp_path):
    rng = random.Random(11)
    root = make_tree(_tree(rng, files=60, sections=6))
    index = MemoryIndex(root, db=tmp_path / "db", embedder=HashEmbedder())
    assert index.sync().chunks_total > 4 * 60  # deeper than both pools (a k of 60 fetches 240)
    _same_first_hits(index, ["how did the tomatoes do after the blight", "wedding guests and caterer budget",
                             "marathon taper pace", "what salary did I ask for"])


@pytest.mark.slow
def test_real_model_a_search_for_5_hits_returns_the_first_5_of_a_search_for_60(make_tree, tmp_path, real_embedder):
    rng = random.Random(5)
    root = make_tree(_tree(rng, files=45, sections=6))
    index = MemoryIndex(root, db=tmp_path / "db", embedder=real_embedder)
    _same_first_hits(index, ["how did my tomatoes cope with the blight", "how many guests are we planning for",
                             "how should I taper before the marathon"])
