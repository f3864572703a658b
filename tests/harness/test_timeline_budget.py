"""memory_search in mode "timeline" at the tool's default k: a timeline of many short turns fits the tool's
token budget whole (no snippet cut, no session dropped), oldest first."""

from __future__ import annotations

import pytest

from memsearch.engine.embed.embedder import HashEmbedder
from memsearch.engine.index import MemoryIndex
from memsearch.engine.search.timeline import TIMELINE_ROWS_PER_HIT
from memsearch.tools import ToolBox
from tests.conftest import build


def _chats(days: int) -> dict[str, str]:
    files = {"MEMORY.md": "# Memory\n\nSaved chats, one file a day, in chats/.\n",
             "chats/MEMORY.md": "# Chats\n\nOne saved chat a day with the assistant.\n"}
    for d in range(days):
        day = f"2026-{1 + d // 28:02}-{1 + d % 28:02}"
        files[f"chats/{day}.md"] = (f"# Chat {day}\n\n**User:** Garden note {d}: I watered the tomatoes and "
                                    "turned the compost.\n\n**Assistant:** Noted.\n")
    return files


@pytest.mark.parametrize("k", [None, 3])
def test_a_timeline_of_short_turns_fits_the_tool_budget_whole(tmp_path, k):
    root = build(tmp_path / "memory", _chats(40))
    with MemoryIndex(root, db=tmp_path / "db", embedder=HashEmbedder()) as index:
        index.sync()
        toolbox = ToolBox(root, index=index, sync=False)
        args = {"query": "what did I do about the garden tomatoes", "mode": "timeline"} | ({"k": k} if k else {})
        result = toolbox.dispatch("memory_search", args)
        hits = result["hits"]
        assert "note" not in result and not any(h.get("cut") for h in hits)  # nothing cut to fit
        assert len(hits) == (k or 5) * TIMELINE_ROWS_PER_HIT  # 40 sessions match: the cap of rows holds
        assert toolbox.tokens(result) <= toolbox.budget
        dates = [h["path"] for h in hits]
        assert dates == sorted(dates)  # oldest first


def test_a_timeline_over_the_budget_drops_its_least_relevant_passages_not_its_newest(tmp_path):
    """A timeline reads oldest first, so the last hit is the newest session, not the lowest-ranked: what a cut
    drops is the lowest-scored passage, and the newest stays."""
    root = build(tmp_path / "memory", {"MEMORY.md": "# Memory\n\nNotes.\n"})
    toolbox = ToolBox(root, sync=False, budget=600)
    hits = [{"path": f"chats/2026-01-{d:02}.md", "start_line": 1, "end_line": 3, "heading": None,
             "date": f"2026-01-{d:02}", "score": score, "snippet": f"Garden note {d}: " + "tomatoes " * 40,
             "memory_md": None, "stale": False, "partial": False}
            for d, score in zip(range(1, 9), (0.9, 0.2, 0.8, 0.1, 0.7, 0.3, 0.6, 0.95))]
    result = toolbox.cut.search({"query": "garden", "hits": [dict(h) for h in hits]}, by_date=True)
    kept = [h["path"] for h in result["hits"]]
    assert toolbox.tokens(result) <= 600 and 1 < len(kept) < len(hits)
    assert kept == sorted(kept) and kept[-1] == "chats/2026-01-08.md"  # date order kept, the newest too
    scores = {h["path"]: h["score"] for h in hits}
    assert min(scores[p] for p in kept) >= max(scores[h["path"]] for h in hits if h["path"] not in kept)
    assert "lower-ranked" in result["note"]


def test_a_ranking_over_the_budget_still_drops_from_its_end(tmp_path):
    root = build(tmp_path / "memory", {"MEMORY.md": "# Memory\n\nNotes.\n"})
    toolbox = ToolBox(root, sync=False, budget=600)
    hits = [{"path": f"notes/n{i}.md", "start_line": 1, "end_line": 3, "heading": None, "date": None,
             "score": 0.5, "snippet": f"note {i}: " + "tomatoes " * 40, "memory_md": None, "stale": False,
             "partial": False} for i in range(8)]  # equal scores: the order is the ranking
    result = toolbox.cut.search({"query": "garden", "hits": hits})
    kept = [h["path"] for h in result["hits"]]
    assert 1 < len(kept) < 8 and kept == [f"notes/n{i}.md" for i in range(len(kept))]


def test_a_spread_ranking_over_the_budget_keeps_its_spread(tmp_path):
    """A search for a question that spans memory opens with the best rows of other sessions (timeline.spread),
    which score below rows it ranks after them: a cut drops from the ranking's end, not those rows."""
    root = build(tmp_path / "memory", {"MEMORY.md": "# Memory\n\nNotes.\n"})
    toolbox = ToolBox(root, sync=False, budget=600)
    scores = (0.9, 0.3, 0.2, 0.85, 0.8, 0.75, 0.7, 0.65)  # places 2 and 3: the spread's other sessions
    hits = [{"path": f"chats/s{i}.md", "start_line": 1, "end_line": 3, "heading": None, "date": None,
             "score": score, "snippet": f"session {i}: " + "garden " * 40, "memory_md": None, "stale": False,
             "partial": False} for i, score in enumerate(scores)]
    result = toolbox.cut.search({"query": "summarise the garden", "hits": hits})
    kept = [h["path"] for h in result["hits"]]
    assert 3 <= len(kept) < 8 and kept == [f"chats/s{i}.md" for i in range(len(kept))]
