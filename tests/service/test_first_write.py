"""The first write's ``index`` report while the server's start-up sync still runs.

Before: the write waited on the toolbox's sync lock for the whole start-up sync (339 s on a 320-file tree
at load 12 through ``memsearch serve --writable``), past its 30 s wait, then reported ``synced: true``
with ``chunks_embedded: 0`` (the start-up sync had done the work). Now it returns once its wait is over,
while the start-up sync still runs, and says so (``synced: false``, ``via: "busy"``); the next search
indexes the write and finds it, as the note promises.
"""

from __future__ import annotations

import threading

from memsearch.engine.embed.embedder import HashEmbedder
from memsearch.engine.index import MemoryIndex
from memsearch.tools import ToolBox
from tests.conftest import build


class GatedEmbedder(HashEmbedder):
    """A hash embedder whose document batches wait for ``gate``: a start-up sync that runs until released."""

    def __init__(self) -> None:
        super().__init__()
        self.started, self.gate = threading.Event(), threading.Event()

    def embed_documents(self, texts):
        self.started.set()
        assert self.gate.wait(120), "the test never released the start-up sync"
        return super().embed_documents(texts)


def test_a_write_during_the_start_up_sync_reports_busy_and_the_next_search_finds_it(tmp_path):
    files = {"MEMORY.md": "# Root\n", "notes/MEMORY.md": "# Notes\n"} | {
        f"notes/n{i}.md": f"# Note {i}\n\nplain fact number {i}\n" for i in range(20)
    }
    root = build(tmp_path / "memory", files)
    embedder = GatedEmbedder()
    box = ToolBox(root, index=MemoryIndex(root, db=tmp_path / "db", embedder=embedder), writable=True)
    box.editor.on_change.timeout = 0.5  # the wait of a write for the index (30 s by default)
    warm = threading.Thread(target=box.warm)
    warm.start()
    try:
        assert embedder.started.wait(60)
        result = box.call(
            "memory",
            {
                "command": "create",
                "path": "/memories/trips/lisbon.md",
                "file_text": "# Lisbon\n\nThe tram to Belem leaves at nine.\n",
            },
        )
        assert warm.is_alive()  # answered while the start-up sync still runs
    finally:
        embedder.gate.set()
        warm.join(120)
    index = result["index"]
    assert index["synced"] is False and index["via"] == "busy" and index["files"] == 2
    assert "start-up sync" in index["note"] and "memory_read" in index["note"]
    assert (root / "trips/lisbon.md").exists()
    hits = box.call("memory_search", {"query": "tram Belem", "mode": "keyword"})["hits"]
    assert hits and hits[0]["path"] == "trips/lisbon.md"
