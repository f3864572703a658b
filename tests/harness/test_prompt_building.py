"""The Claude Code prompt hook says when the root's first build is still under way and the prompt recalls nothing
(it said nothing, so the model took "no context" for "no memory"): one line of context saying memory is still being
indexed (E of N files), from the search's own ``indexing`` (the one the CLI's "no hits yet" and memory_search's note
come from); once built, no word of it. Real LanceDB, a real Server on a Unix socket,
the hash embedder; the end-to-end run with the real service and model is tests/e2e/test_first_build_note.py."""

from __future__ import annotations

from memsearch.engine.index import MemoryIndex
from memsearch.harness import hooks
from memsearch.service.server import Server
from tests.reliability.test_text_first import FILES, embedder, tree

NOWHERE = "xylophone quasar"  # in no file


def test_the_prompt_hook_says_memory_is_still_being_indexed_when_it_recalls_nothing(tmp_path):
    root = tree(tmp_path)
    index = MemoryIndex(root, db=tmp_path / "db", embedder=embedder())
    index.sync(defer=True)  # a first build's text rows: every file searchable by its words only, none embedded
    server = Server(index).start()
    try:
        building = hooks.prompt_context(root, NOWHERE, db=str(tmp_path / "db"), budget=5)
        assert building == hooks.BUILDING_LINE.format(embedded=0, files=FILES + 2)
        assert "still being indexed (0 of 26 files)" in building and "incomplete" in building
        out = hooks.run("prompt", root, {"prompt": NOWHERE}, db=str(tmp_path / "db"))
        assert out["hookSpecificOutput"] == {"hookEventName": "UserPromptSubmit", "additionalContext": building}
        found = hooks.prompt_context(root, "otter tag7", db=str(tmp_path / "db"), budget=5)
        assert "notes/n07.md" in found and "[partial]" in found  # hits: the partial note, as before
        index.sync()  # embedded (the vector leg finds something now): no word of indexing
        assert "still being indexed" not in hooks.prompt_context(root, NOWHERE, db=str(tmp_path / "db"), budget=5)
    finally:
        server.close()


def test_prompts_that_only_steer_the_conversation_recall_nothing():
    for prompt in ("yes", "Continue.", "ok, go ahead!", "thanks!", "try again", "let's go on", "👍", "1"):
        assert hooks.is_chatter(prompt), prompt
    for prompt in ("no, use postgres instead", "run the tests", "which warehouse for Atlas", "continue with Atlas",
                   "yes please continue with the migration", "ERR503 again"):
        assert not hooks.is_chatter(prompt), prompt
