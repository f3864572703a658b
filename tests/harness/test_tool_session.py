"""What an agent that keeps its memory only through the ``memory`` tool gets back over a long session: each write
followed by the search, listing and read a model would make next (real files, a real LanceDB index)."""

from __future__ import annotations

import shutil
from pathlib import Path

from memsearch.engine.embed.embedder import HashEmbedder
from memsearch.engine.index import MemoryIndex
from memsearch.memory.validator import validate
from memsearch.tools import ToolBox
from tests.conftest import EXAMPLES

BASE = {"MEMORY.md": "# Memory\n\nRoot index.\n"}


def writable(root: Path) -> ToolBox:
    index = MemoryIndex(root, embedder=HashEmbedder())
    index.sync()
    return ToolBox(root, index=index, writable=True, sync=False)


def memory(box: ToolBox, **arguments) -> dict:
    return box.call("memory", arguments)


def test_a_renamed_folder_s_generated_memory_md_names_its_new_path(make_tree):
    root = make_tree(BASE)
    box = writable(root)
    memory(box, command="create", path="/memories/projects/atlas/decisions.md",
           file_text="# Atlas decisions\n\nWe chose narwhal tokens.\n")
    memory(box, command="create", path="/memories/projects/atlas/ops/runbook.md", file_text="# Runbook\n\nRestart.\n")
    memory(box, command="str_replace", path="/memories/projects/atlas/ops/MEMORY.md",
           old_str="Memory about ops: the notes filed in projects/atlas/ops/.", new_str="How we operate Atlas.")
    moved = memory(box, command="rename", old_path="/memories/projects/atlas", new_path="/memories/archive/atlas-2026")
    assert "Updated /memories/archive/atlas-2026/MEMORY.md" in moved["result"]
    assert (root / "archive/atlas-2026/MEMORY.md").read_text() == (
        "# Atlas 2026\n\nMemory about atlas 2026: the notes filed in archive/atlas-2026/.\n")
    assert (root / "archive/atlas-2026/ops/MEMORY.md").read_text() == "# Ops\n\nHow we operate Atlas.\n"  # the agent's words
    listed = box.call("memory_list", {"path": "archive"})["dirs"]
    assert [(d["path"], d["summary"]) for d in listed] == [
        ("archive/atlas-2026", "Memory about atlas 2026: the notes filed in archive/atlas-2026/.")]
    hit = box.call("memory_search", {"query": "narwhal", "mode": "keyword"})["hits"][0]
    assert hit["path"] == "archive/atlas-2026/decisions.md" and "archive/atlas-2026/" in hit["memory_md"]["summary"]
    memory(box, command="str_replace", path="/memories/archive/atlas-2026/MEMORY.md", old_str="# Atlas 2026",
           new_str="# Atlas, 2026")  # a retitled one keeps its title; its generated line still follows the folder
    memory(box, command="rename", old_path="/memories/archive", new_path="/memories/old")
    assert (root / "old/atlas-2026/MEMORY.md").read_text() == (
        "# Atlas, 2026\n\nMemory about atlas 2026: the notes filed in old/atlas-2026/.\n")
    assert validate(root).valid


def test_a_core_memory_already_over_budget_names_the_file_to_move_and_the_call(make_tree):
    root = make_tree(BASE | {"log.md": "# Log\n\n" + "a long running log line\n" * 40})
    index = MemoryIndex(root, embedder=HashEmbedder())
    box = ToolBox(root, index=index, writable=True, sync=False, core_budget=100)
    pointer = {"command": "str_replace", "path": "/memories/MEMORY.md", "old_str": "Root index.",
               "new_str": "Root index. Trips are in /memories/trips."}
    error = box.dispatch("memory", pointer)["error"]
    assert error["type"] == "CoreBudgetExceeded"
    assert "already over its budget, most of it in /memories/log.md" in error["message"]
    assert "rename /memories/log.md to /memories/notes/log.md" in error["message"]
    assert "notes/MEMORY.md" not in error["message"]  # before: 'e.g. create /memories/notes/MEMORY.md'
    memory(box, command="rename", old_path="/memories/log.md", new_path="/memories/notes/log.md")  # as the error says
    assert "Core memory is now" in memory(box, **pointer)["result"]
    grown = box.dispatch("memory", pointer | {"old_str": "Root index.", "new_str": "Root index. " + "word " * 200})
    assert "e.g. create /memories/notes/overview.md" in grown["error"]["message"]
    assert validate(root).valid


def test_a_hit_s_lines_are_the_lines_view_and_insert_number(make_tree):
    """Text pasted from elsewhere holds characters str.splitlines breaks at (U+2028, a form feed, NEL, ...); the
    memory tool, as Claude's, splits at newlines only. Before, a hit and memory_read counted those too: the hit
    below said lines 11-13 of a file that view shows with 8 lines."""
    root = make_tree(BASE)
    box = writable(root)
    text = "# Pasted\n\nfirst\u2028second\x0cthird\x85fourth\x1cfifth\x0bsixth\u2029seventh\n\n## Later\n\nthe bonobo text\n"
    memory(box, command="create", path="/memories/web/pasted.md", file_text=text)
    hit = box.call("memory_search", {"query": "bonobo", "mode": "keyword"})["hits"][0]
    assert (hit["path"], hit["start_line"], hit["end_line"]) == ("web/pasted.md", 5, 7)
    shown = memory(box, command="view", path="/memories/web/pasted.md", view_range=[hit["start_line"], hit["end_line"]])
    assert shown["result"].endswith("     5\t## Later\n     6\t\n     7\tthe bonobo text")
    read = box.call("memory_read", {"path": hit["path"], "start_line": hit["start_line"], "end_line": hit["end_line"]})
    assert read["text"] == "## Later\n\nthe bonobo text\n" and read["total_lines"] == 7
    memory(box, command="insert", path="/memories/web/pasted.md", insert_line=hit["end_line"], insert_text="and a quokka")
    hit = box.call("memory_search", {"query": "quokka", "mode": "keyword"})["hits"][0]
    assert (hit["start_line"], hit["end_line"]) == (5, 8)
    assert box.call("memory_read", {"path": hit["path"], "start_line": 8, "end_line": 8})["text"] == "and a quokka\n"


def test_a_delete_or_rename_names_the_memory_md_lines_that_still_point_to_the_old_path(tmp_path):
    root = tmp_path / "memory"
    shutil.copytree(EXAMPLES, root, ignore=shutil.ignore_patterns(".memsearch"))
    box = writable(root)
    moved = memory(box, command="rename", old_path="/memories/people/priya-raman.md", new_path="/memories/team/priya.md")
    assert ("/memories/people/MEMORY.md (line 9) still names /memories/people/priya-raman.md, now /memories/team/priya.md: "
            "update what it says") in moved["result"]
    gone = memory(box, command="delete", path="/memories/notes/2026-09-25.md")["result"]
    assert "/memories/notes/MEMORY.md (line 19) still names /memories/notes/2026-09-25.md, which is gone" in gone
    gone = memory(box, command="delete", path="/memories/projects/atlas")["result"]
    assert ("/memories/projects/MEMORY.md (line 21) and /memories/MEMORY.md (line 19) still name "
            "/memories/projects/atlas/, which is gone") in gone
    assert memory(box, command="delete", path="/memories/notes/2026-11-06.md")["result"].endswith(
        "still names /memories/notes/2026-11-06.md, which is gone: update what it says (view it, then str_replace), so "
        "that it points to what exists.")
    memory(box, command="create", path="/memories/notes/scratch.md", file_text="# Scratch\n")
    assert memory(box, command="delete", path="/memories/notes/scratch.md")["result"] == (
        "Successfully deleted /memories/notes/scratch.md")  # nothing names it: nothing more is said
    assert validate(root).valid


def test_text_written_into_or_above_a_front_matter_is_told_where_search_loses_it(make_tree):
    note = "---\ntitle: Harbor call\ndate: 2026-09-18\n---\n\n# Call\n\nThey want flood data.\n"
    root = make_tree(BASE | {"projects/MEMORY.md": "# Projects\n\nOne file each.\n", "projects/harbor.md": note})
    box = writable(root)
    inside = memory(box, command="insert", path="/memories/projects/harbor.md", insert_line=2,
                    insert_text="Follow-up: the wombat postmortem is Friday.")
    assert box.call("memory_search", {"query": "wombat", "mode": "keyword"})["hits"] == []  # front matter is metadata
    assert ("the text is inside the front matter of /memories/projects/harbor.md (lines 1-5), which is metadata: "
            "memory_search never finds it there. To make it searchable, put it after line 5 instead.") in inside["result"]
    memory(box, command="str_replace", path="/memories/projects/harbor.md",
           old_str="Follow-up: the wombat postmortem is Friday.\n", new_str="")
    edited = memory(box, command="str_replace", path="/memories/projects/harbor.md", old_str="2026-09-18", new_str="2026-09-19")
    assert "Note:" not in edited["result"]  # editing a field is what front matter is for
    assert box.call("memory_search", {"query": "flood data", "since": "2026-09-19", "mode": "keyword"})["hits"]
    above = memory(box, command="insert", path="/memories/projects/harbor.md", insert_line=0, insert_text="Update: signed.")
    assert ("/memories/projects/harbor.md began with front matter (title, date), which after this write no longer "
            "starts the file") in above["result"]
    assert box.call("memory_search", {"query": "flood data", "since": "2026-09-19", "mode": "keyword"})["hits"] == []


def test_renaming_a_note_dated_by_its_name_to_an_undated_name_says_dated_searches_lose_it(make_tree):
    root = make_tree(BASE | {"notes/MEMORY.md": "# Notes\n\nDaily notes.\n",
                             "notes/2026-12-01.md": "# Deploy\n\nThe marmoset deploy went fine.\n"})
    box = writable(root)
    dated = {"query": "marmoset", "mode": "keyword", "since": "2026-12-01", "until": "2026-12-01"}
    assert box.call("memory_search", dated)["hits"]
    moved = memory(box, command="rename", old_path="/memories/notes/2026-12-01.md", new_path="/memories/notes/deploy.md")
    assert box.call("memory_search", dated)["hits"] == []
    assert ("the note's date (2026-12-01) came from its old name, and /memories/notes/deploy.md has none, so "
            "memory_search's since/until and timeline no longer place it. To keep it dated, put the date in the name "
            "(e.g. /memories/notes/2026-12-01-deploy.md) or add a 'date: 2026-12-01' front matter.") in moved["result"]
    memory(box, command="rename", old_path="/memories/notes/deploy.md", new_path="/memories/notes/2026-12-01-deploy.md")
    assert box.call("memory_search", dated)["hits"][0]["path"] == "notes/2026-12-01-deploy.md"  # as the note says
    memory(box, command="insert", path="/memories/notes/2026-12-01-deploy.md", insert_line=0,
           insert_text="---\ndate: 2026-12-01\n---")
    kept = memory(box, command="rename", old_path="/memories/notes/2026-12-01-deploy.md", new_path="/memories/notes/x.md")
    assert "Note:" not in kept["result"]  # its front matter dates it


def test_a_memory_md_written_without_a_heading_is_titled_by_its_folder_not_memory(make_tree):
    root = make_tree(BASE)
    box = writable(root)
    memory(box, command="create", path="/memories/birds/owl.md", file_text="# Owl\n\nThe barn owl nests in the loft.\n")
    memory(box, command="str_replace", path="/memories/birds/MEMORY.md",
           old_str="# Birds\n\nMemory about birds: the notes filed in birds/.", new_str="- owl.md: the barn owl")
    listed = box.call("memory_list", {"path": "."})["dirs"]
    assert [(d["title"], d["summary"]) for d in listed] == [("birds", "- owl.md: the barn owl")]  # before: "MEMORY"
    hit = box.call("memory_search", {"query": "barn owl loft", "mode": "keyword"})["hits"][0]
    assert hit["memory_md"]["title"] == "birds"
    assert "- birds/ (birds/MEMORY.md): birds. - owl.md" in box.system_prompt()
