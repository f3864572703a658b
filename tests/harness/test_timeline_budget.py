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
