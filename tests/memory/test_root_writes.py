"""A note written at the root is core memory: the tool's result says plainly where it went and when it is seen
(next session; memory_core now), since memory_search does not search core memory; a note in a folder is
searchable as soon as the write returns. With an index built ``--include-core`` the root note is searchable and
the result does not say otherwise."""

from __future__ import annotations

import json

import pytest

from memsearch.engine.embed.embedder import HashEmbedder
from memsearch.engine.index import MemoryIndex
from memsearch.tools import MEMORY_TOOL, ToolBox
from tests.conftest import build

FILES = {"MEMORY.md": "# Memory\n\nCore.\n", "notes/MEMORY.md": "# Notes\n\nWork notes.\n"}
ROOT_NOTE = {"command": "create", "path": "/memories/progress.md", "file_text": "# Progress\n\nMigrated the billing cron.\n"}
FOLDER_NOTE = {"command": "create", "path": "/memories/projects/billing/progress.md",
               "file_text": "# Billing progress\n\nMigrated the billing cron to the new scheduler.\n"}


def paths(box: ToolBox, query: str) -> list[str]:
    return [hit["path"] for hit in box.call("memory_search", {"query": query, "k": 5})["hits"]]


def test_the_description_sends_detail_to_folders_and_says_what_is_searchable():
    text = MEMORY_TOOL.description
    assert "Put notes in folders" in text and "searchable with memory_search as soon as they return" in text
    assert "not searched by memory_search" in text


def test_a_root_write_says_where_it_went_and_when_it_is_seen(tmp_path):
    root = build(tmp_path / "memory", FILES)
    index = MemoryIndex(root, embedder=HashEmbedder())
    box = ToolBox(root, index=index, writable=True, sync=False)
    result = box.call("memory", ROOT_NOTE)["result"]
    assert result.startswith("File created successfully at: /memories/progress.md")
    assert ("This is core memory (/memories/progress.md): it is in your context from the next session on "
            "(memory_core shows it now), and memory_search does not search it") in result
    assert "e.g. /memories/notes/progress.md" in result
    assert "Migrated the billing cron" in json.dumps(box.call("memory_core", {}))
    folder = box.call("memory", FOLDER_NOTE)["result"]
    assert "core memory" not in folder and "progress.md" in folder


def test_with_core_indexed_a_root_write_is_searchable_and_the_result_does_not_say_otherwise(tmp_path):
    root = build(tmp_path / "memory", FILES)
    box = ToolBox(root, index=MemoryIndex(root, embedder=HashEmbedder(), include_core=True), writable=True, sync=False)
    result = box.call("memory", ROOT_NOTE)
    assert result["index"]["core_indexed"] and "does not search it" not in result["result"]
    assert "progress.md" in paths(box, "billing cron")


@pytest.mark.slow
def test_root_and_folder_writes_end_to_end_with_the_real_model(tmp_path):
    """The real model and LanceDB behind a writable ToolBox, as an agent uses it: the folder note is found by the
    very next search, the root note is not searched but memory_core returns it, and the result said so."""
    root = build(tmp_path / "memory", FILES)
    box = ToolBox(root, writable=True, daemon=False)
    said = box.call("memory", ROOT_NOTE)["result"]
    assert "memory_search does not search it" in said
    box.call("memory", FOLDER_NOTE)
    found = paths(box, "where are we with the billing cron migration")
    assert found[0] == "projects/billing/progress.md"
    assert "progress.md" not in found
    assert "Migrated the billing cron." in json.dumps(box.call("memory_core", {}))
