"""Every tool result fits the token budget, the write tool's included: a huge insert, a huge replacement, a
create that makes many folders. Before, only ``view`` was cut (an insert of 100,000 lines returned 609k
tokens). Nothing written is lost to the cut: the file holds it all, and the note says how to read on."""

from __future__ import annotations

import json

import pytest

from memsearch.engine.embed.embedder import HashEmbedder
from memsearch.engine.index import MemoryIndex
from memsearch.harness.outputs import OUTPUT_SCHEMAS
from memsearch.tools import ToolBox
from tests.conftest import build

BASE = {"MEMORY.md": "# Memory\n\nRoot index.\n", "notes/MEMORY.md": "# Notes\n\nWorking notes.\n",
        "notes/atlas.md": "# Atlas\n\nShip the atlas search.\n"}


@pytest.fixture
def box(tmp_path):
    root = build(tmp_path / "memory", BASE)
    index = MemoryIndex(root, db=tmp_path / "db", embedder=HashEmbedder())
    index.sync()
    return ToolBox(root, index=index, writable=True, sync=False, budget=600)


def _check(box: ToolBox, result: dict) -> None:
    import jsonschema

    assert "error" not in result, result
    assert box.tokens(result) <= box.budget, box.tokens(result)
    jsonschema.validate(result, OUTPUT_SCHEMAS["memory"])  # still the declared shape after the cut


def test_an_insert_of_100000_lines_answers_within_the_budget(box):
    lines = "".join(f"line {i} of the long insert\n" for i in range(100_000))
    result = box.call("memory", {"command": "insert", "path": "/memories/notes/atlas.md", "insert_line": 1, "insert_text": lines})
    _check(box, result)
    assert result["truncated"] is True and "view_range [" in result["note"]
    assert (box.root / "notes/atlas.md").read_text().count("of the long insert") == 100_000  # the write is whole


def test_a_huge_replacement_answers_within_the_budget(box):
    new = "".join(f"replacement line {i}\n" for i in range(20_000))
    result = box.call("memory", {"command": "str_replace", "path": "/memories/notes/atlas.md", "old_str": "Ship", "new_str": new})
    _check(box, result)
    assert result["truncated"] is True and "view_range" in result["note"]
    assert (box.root / "notes/atlas.md").read_text().count("replacement line") == 20_000


def test_a_create_that_makes_many_folders_answers_within_the_budget(box, monkeypatch):
    monkeypatch.setenv("MEMSEARCH_MAX_NEW_DIRS", "12")  # past the default of 8 new folders per write
    deep = "/".join(f"folder-number-{i:02d}-of-a-deep-path" for i in range(12))
    result = box.call("memory", {"command": "create", "path": f"/memories/{deep}/note.md", "file_text": "# Deep\n"})
    _check(box, result)
    assert result["truncated"] is True
    assert (box.root / deep / "note.md").read_text() == "# Deep\n"


def test_a_result_that_fits_is_left_alone(box):
    result = box.call("memory", {"command": "create", "path": "/memories/notes/short.md", "file_text": "# Short\n"})
    _check(box, result)
    assert "truncated" not in result and "note" not in result
    assert json.loads(json.dumps(result)) == result
