"""An empty search while a root's first index is still being built says so (issue: "no hits: try other words"
during the first build): the service's answer and an in-process one carry ``indexing`` (files recorded, files
embedded), the CLI prints "no hits yet: ROOT is still being indexed (E of N files)", the tools' note says the same
in a model's terms; once built, an empty answer is a plain "no hits". The end-to-end run with the real service
and model is tests/e2e/test_first_build_note.py."""

from __future__ import annotations

from memsearch.engine.index import MemoryIndex
from memsearch.harness.tools import ToolBox
from memsearch.service.answers import Answers
from memsearch.service.firstbuild import Hits
from tests.reliability.test_text_first import FILES, embedder, tree

NOWHERE = "xylophone quasar"  # in no file


def _first_build(tmp_path):
    root = tree(tmp_path)
    index = MemoryIndex(root, db=tmp_path / "db", embedder=embedder())
    index.sync(defer=True)  # a first build's text rows: every file searchable by its words only
    return root, index


def test_an_empty_answer_during_a_first_build_carries_its_progress_then_none(tmp_path):
    root, index = _first_build(tmp_path)
    answers = Answers(index)
    empty = answers.answer("search", {"query": NOWHERE})
    assert empty["hits"] == [] and empty["indexing"] == {"files": FILES + 2, "embedded": 0}
    found = answers.answer("search", {"query": "otter tag7", "k": 3})
    assert all(h["partial"] for h in found["hits"]) and "indexing" not in found  # the hits say partial
    index.sync()  # embedded: nothing under way
    assert "indexing" not in answers.answer("search", {"query": NOWHERE})
    assert "indexing" not in answers.answer("search", {"query": "otter tag7", "k": 3})


def test_the_tools_note_of_an_empty_search_during_a_first_build_says_it_is_being_indexed(tmp_path):
    root, index = _first_build(tmp_path)
    box = ToolBox(root, index=index, sync=False)
    result = box.call("memory_search", {"query": NOWHERE})
    assert result["hits"] == []
    assert result["note"].startswith(f"no hits yet: the memory is still being indexed (0 of {FILES + 2} files")
    assert "memory_search again in a few seconds" in result["note"]
    index.sync()  # embedded (the vector leg finds something now): no word of indexing
    assert "still being indexed" not in box.call("memory_search", {"query": NOWHERE}).get("note", "")


def test_the_cli_prints_no_hits_yet_with_the_progress(capsys):
    from memsearch.cli.render import print_hits, search_json

    print_hits(Hits([], {"files": 30, "embedded": 12}), "/m/mem")
    out = capsys.readouterr().out
    assert "no hits yet: /m/mem is still being indexed (12 of 30 files); search again in a few seconds" in out
    print_hits(Hits([]), "/m/mem")
    assert capsys.readouterr().out.strip() == "no hits"
    assert search_json("q", Hits([], {"files": 30, "embedded": 12}))["indexing"] == {"files": 30, "embedded": 12}
    assert search_json("q", []) == {"query": "q", "hits": []}
