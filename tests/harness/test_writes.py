"""Writes through the harness: the ``memory`` tool of a writable ToolBox, read-your-writes search, random
write sequences (hypothesis) against a clean rebuild, concurrent writers, and writes racing a daemon."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import memsearch
from memsearch.engine.embed.embedder import HashEmbedder
from memsearch.engine.index import MemoryIndex
from memsearch.engine.storage.store import Store
from memsearch.harness.memory_tool import NATIVE_MEMORY_TOOL
from memsearch.memory.validator import validate
from memsearch.tools import MEMORY_TOOL, TOOL_NAMES, ToolBox, anthropic_tools, openai_tools

REPO = Path(__file__).resolve().parents[2]
BASE = {
    "MEMORY.md": "# Memory\n\nRoot index.\n",
    "notes/MEMORY.md": "# Notes\n\nWorking notes.\n",
    "notes/atlas.md": "# Atlas\n\nShip the atlas search.\n",
}


def hash_index(root: Path, db: Path | None = None) -> MemoryIndex:
    return MemoryIndex(root, db=db, embedder=HashEmbedder())


def writable(root: Path, **options) -> ToolBox:
    index = hash_index(root)
    index.sync()  # indexed once; from then on only the writes sync (sync=False: searches never do)
    return ToolBox(root, index=index, writable=True, sync=False, **options)


def rows(db: Path) -> tuple[list, list]:
    store = Store(db)
    chunks = store.chunks()
    got = [] if chunks is None else chunks.to_arrow().select(["path", "start_line", "end_line", "text", "embed_hash"]).to_pylist()
    files = store.files()
    states = [] if files is None else files.to_arrow().select(["path", "file_hash", "size", "chunks"]).to_pylist()
    return sorted(got, key=lambda r: (r["path"], r["start_line"], r["embed_hash"])), sorted(states, key=lambda r: r["path"])


def found(toolbox: ToolBox, query: str) -> list[str]:
    return [h["path"] for h in toolbox.call("memory_search", {"query": query, "mode": "keyword", "k": 10})["hits"]]


# --- the tool and its exports ------------------------------------------------------------------
def test_default_toolbox_stays_read_only(make_tree):
    root = make_tree(BASE)
    box = ToolBox(root, index=hash_index(root))
    assert [t.name for t in box.specs] == list(TOOL_NAMES)
    error = box.dispatch("memory", {"command": "view", "path": "/memories"})["error"]
    assert error["type"] == "UnknownTool" and "writable=True" in error["message"]
    assert "memory" not in [t["name"] for t in anthropic_tools()]
    assert "memory" not in [t["function"]["name"] for t in openai_tools()]


def test_memory_tool_schema_matches_the_memory_tool_commands():
    props = MEMORY_TOOL.parameters["properties"]
    assert props["command"]["enum"] == ["view", "create", "str_replace", "insert", "delete", "rename"]
    assert set(props) == {"command", "path", "view_range", "file_text", "old_str", "new_str", "insert_line",
                          "insert_text", "old_path", "new_path"}
    assert props["view_range"]["type"] == "array" and props["insert_line"]["minimum"] == 0
    assert anthropic_tools(writable=True)[-1] == {"name": "memory", "description": MEMORY_TOOL.description,
                                                  "input_schema": MEMORY_TOOL.parameters}
    assert openai_tools("responses", writable=True)[-1]["name"] == "memory"
    assert openai_tools(writable=True)[-1]["function"]["parameters"] == MEMORY_TOOL.parameters
    assert NATIVE_MEMORY_TOOL == {"type": "memory_20250818", "name": "memory"}
    import jsonschema

    jsonschema.Draft202012Validator.check_schema(MEMORY_TOOL.parameters)


#: What the Anthropic API refuses at the top of a tool's ``input_schema`` (Claude Code 2.1.281 drops such a
#: tool, 2.0.56 dies with a 400): issue 33.
COMBINATORS = ("allOf", "oneOf", "anyOf", "not", "if", "then", "else")


def anthropic_acceptable(schema: dict) -> None:
    assert schema["type"] == "object" and isinstance(schema["properties"], dict), schema
    assert not set(COMBINATORS) & set(schema), sorted(set(COMBINATORS) & set(schema))


def test_every_exported_input_schema_is_one_the_anthropic_api_takes():
    schemas = [t["input_schema"] for t in anthropic_tools(writable=True)]
    schemas += [t["function"]["parameters"] for t in openai_tools(writable=True)]
    schemas += [t["parameters"] for t in openai_tools("responses", writable=True)]
    assert len(schemas) == 15
    for schema in schemas:
        anthropic_acceptable(schema)


def test_per_command_checks_stay_in_the_server_with_the_flat_schema(make_tree):
    import jsonschema

    # the flat schema a model sees lets through what only the server's per-command check refuses
    flat = jsonschema.Draft202012Validator(MEMORY_TOOL.parameters)
    for arguments, words in [({"command": "create", "path": "/memories/a/x.md"}, "create needs 'file_text'"),
                             ({"command": "view", "path": "/memories", "file_text": "x"}, "view takes path, view_range"),
                             ({"command": "rename", "old_path": "/memories/a"}, "rename needs 'new_path'")]:
        assert flat.is_valid(arguments)
        with pytest.raises(memsearch.errors.InvalidArgument, match=words):
            MEMORY_TOOL.validate(arguments)
    root = make_tree(BASE)
    result = writable(root).dispatch("memory", {"command": "create", "path": "/memories/a/x.md"})
    assert result["error"]["type"] == "BadToolCall" and "file_text" in result["error"]["message"]
    assert not (root / "a").exists()


def test_writes_are_searchable_when_they_return(make_tree):
    root = make_tree(BASE)
    box = writable(root)
    made = box.call("memory", {"command": "create", "path": "/memories/trips/lisbon.md",
                               "file_text": "# Lisbon\n\nThe tram to Belem leaves at nine.\n"})
    assert made["index"]["synced"] is True and made["index"]["via"] == "sync" and made["index"]["files"] == 2
    assert made["created"] == ["trips/MEMORY.md"]
    assert found(box, "tram Belem") == ["trips/lisbon.md"]
    box.call("memory", json.dumps({"command": "str_replace", "path": "/memories/trips/lisbon.md",
                                   "old_str": "nine", "new_str": "half past ten"}))  # JSON text, as OpenAI sends
    hits = box.call("memory_search", {"query": "half past ten", "mode": "keyword"})["hits"]
    assert hits[0]["path"] == "trips/lisbon.md" and "half past ten" in hits[0]["snippet"]
    box.call("memory", {"command": "insert", "path": "/memories/trips/lisbon.md", "insert_line": 3, "insert_text": "Pasteis at Belem."})
    assert "Pasteis" in box.call("memory_search", {"query": "pasteis", "mode": "keyword"})["hits"][0]["snippet"]
    box.call("memory", {"command": "rename", "old_path": "/memories/trips", "new_path": "/memories/travel/2026"})
    assert found(box, "tram Belem") == ["travel/2026/lisbon.md"]
    box.call("memory", {"command": "delete", "path": "/memories/travel"})
    assert found(box, "tram Belem") == []
    assert validate(root).valid


def test_core_writes_are_not_indexed_and_say_so(make_tree):
    root = make_tree(BASE)
    result = writable(root).call("memory", {"command": "create", "path": "/memories/user.md", "file_text": "# User\n\nLikes tea.\n"})
    assert result["index"]["via"] == "none" and "not indexed" in result["index"]["note"]
    assert "memory_search does not search it" in result["result"]
    assert "Core memory is now" in result["result"]


def test_dispatch_returns_typed_errors_and_writes_nothing(make_tree):
    root = make_tree(BASE)
    box = writable(root, core_budget=20)
    cases = [
        ({"command": "create", "path": "/memories/notes/atlas.md", "file_text": "x"}, "MemoryFileExists", "already exists"),
        ({"command": "str_replace", "path": "/memories/notes/atlas.md", "old_str": "zzz", "new_str": "y"}, "NoUniqueMatch", "verbatim"),
        ({"command": "delete", "path": "/memories/notes/MEMORY.md"}, "EditRefused", "needs its MEMORY.md"),
        ({"command": "create", "path": "/memories/big.md", "file_text": "word " * 50}, "CoreBudgetExceeded", "into a subdirectory"),
        ({"command": "create", "path": "/etc/x.md", "file_text": "x"}, "PathOutsideRoot", "/memories/"),
        ({"command": "create", "path": "/memories/.x.md", "file_text": "x"}, "NotMemoryFile", "hidden"),
        ({"command": "view", "path": "/memories", "file_text": "x"}, "BadToolCall", "view takes path, view_range"),
        ({"path": "/memories"}, "InvalidArgument", "missing 'command'"),
        ({"command": "undo_edit", "path": "/memories/x.md"}, "InvalidArgument", "choose one of view, create"),
        ("{not json", "InvalidArgument", "not valid JSON"),
    ]
    before = {p: p.read_bytes() for p in root.rglob("*") if p.is_file() and ".memsearch" not in p.parts}
    for arguments, kind, words in cases:
        result = box.dispatch("memory", arguments)
        assert result["error"]["type"] == kind, (arguments, result)
        assert words in result["error"]["message"], (arguments, result)
    after = {p: p.read_bytes() for p in root.rglob("*") if p.is_file() and ".memsearch" not in p.parts}
    assert after == before


def test_a_memory_path_without_its_leading_slash_is_refused_naming_the_path_meant(make_tree):
    """'memories/notes/atlas.md' (the slash left out) names '/memories/notes/atlas.md', not '/memories/memories/...'."""
    box = writable(make_tree(BASE))
    cases = [("memories/notes/atlas.md", "/memories/notes/atlas.md"), ("memories/", "/memories"),
             ("memories", "/memories"), ("./memories/notes", "/memories/notes"), ("notes/atlas.md", "/memories/notes/atlas.md")]
    for sent, meant in cases:
        error = box.dispatch("memory", {"command": "view", "path": sent})["error"]
        assert error["type"] == "PathOutsideRoot" and f"give {meant!r}" in error["message"], (sent, error)
        assert "error" not in box.dispatch("memory", {"command": "view", "path": meant}), meant  # the hint works


@pytest.mark.parametrize("sent", ["/etc/passwd", "~/notes.md", "/memoriesX/a.md"])
def test_a_path_outside_the_memory_is_told_only_what_the_memory_tool_takes(make_tree, sent):
    """The memory tool takes /memories paths only, so its error offers nothing else. Before: 'give /memories/... or a
    path relative to the memory root', and the relative path it offered was then refused ('must start with /memories')."""
    box = writable(make_tree(BASE))
    error = box.dispatch("memory", {"command": "view", "path": sent})["error"]
    assert error["type"] == "PathOutsideRoot" and "relative" not in error["message"], error
    example = error["message"].split("(e.g. ", 1)[1].split(")", 1)[0].strip("'")
    assert example.startswith("/memories/") and "error" not in box.dispatch(
        "memory", {"command": "create", "path": example, "file_text": "# Today\n"})  # what it offers is taken
    with pytest.raises(memsearch.errors.PathOutsideRoot, match="or a path relative to the memory root"):
        memsearch.edit(make_tree(BASE), "view", path=sent, sync=False)  # memsearch.edit() takes relative paths too


def test_a_write_leaving_an_index_invalid_is_refused_saying_what_to_do(make_tree):
    """memory.md beside MEMORY.md, or a MEMORY.md emptied, passed and left validate warning (misnamed-index,
    empty-index); now refused with the fix, and nothing is written."""
    root = make_tree(BASE)
    box = writable(root)
    before = {p: p.read_bytes() for p in root.rglob("*") if p.is_file() and ".memsearch" not in p.parts}
    misnamed = box.dispatch("memory", {"command": "create", "path": "/memories/newdir2/memory.md", "file_text": "# N\n"})
    assert misnamed["error"]["type"] == "EditRefused" and "create /memories/newdir2/MEMORY.md" in misnamed["error"]["message"]
    emptied = box.dispatch("memory", {"command": "str_replace", "path": "/memories/notes/MEMORY.md",
                                      "old_str": (root / "notes/MEMORY.md").read_text(), "new_str": ""})
    assert emptied["error"]["type"] == "EditRefused" and "empty" in emptied["error"]["message"]
    after = {p: p.read_bytes() for p in root.rglob("*") if p.is_file() and ".memsearch" not in p.parts}
    assert after == before and not (root / "newdir2").exists()
    report = validate(root)
    assert report.valid and not report.warnings, report.to_dict()


def test_text_holding_a_lone_surrogate_is_refused_and_nothing_is_written(make_tree):
    """JSON's unpaired '\\ud800' escape parses to a lone surrogate, which UTF-8 cannot hold: create, insert and
    str_replace refuse it as a bad argument. Before: a UnicodeEncodeError escaped dispatch (the MCP server called it
    a fault of memsearch and said to call again)."""
    root = make_tree(BASE)
    box = writable(root)
    calls = ['{"command": "create", "path": "/memories/notes/new.md", "file_text": "bad \\ud800 text"}',
             '{"command": "insert", "path": "/memories/notes/atlas.md", "insert_line": 1, "insert_text": "\\udfff"}',
             '{"command": "str_replace", "path": "/memories/notes/atlas.md", "old_str": "Ship", "new_str": "\\ud83d"}']
    before = {p: p.read_bytes() for p in root.rglob("*") if p.is_file() and ".memsearch" not in p.parts}
    for call in calls:
        error = box.dispatch("memory", call)["error"]
        assert error["type"] == "InvalidArgument" and "lone surrogate" in error["message"], (call, error)
    with pytest.raises(memsearch.errors.InvalidArgument, match="lone surrogate"):
        memsearch.edit(root, "create", path="notes/new.md", file_text="bad \ud800 text")
    assert {p: p.read_bytes() for p in root.rglob("*") if p.is_file() and ".memsearch" not in p.parts} == before


def test_editing_a_file_that_is_not_utf8_names_the_fix_in_tool_calls(make_tree):
    """A Markdown file holding a byte that is not UTF-8 cannot be edited; the model is told what it can do with its
    tools (memory_read shows the text; delete, then create). Before: 're-save it as UTF-8 first', which no tool does."""
    root = make_tree(BASE)
    (root / "notes" / "bad.md").write_bytes(b"# Bad \xff byte\n")
    box = writable(root)
    error = box.dispatch("memory", {"command": "str_replace", "path": "/memories/notes/bad.md", "old_str": "Bad",
                                    "new_str": "Good"})["error"]
    assert error["type"] == "EditRefused" and "re-save" not in error["message"], error
    assert "memory_read(path='notes/bad.md')" in error["message"] and "delete it and create it again" in error["message"]
    assert box.dispatch("memory_read", {"path": "notes/bad.md"})["text"] == "# Bad \ufffd byte\n"  # the hint works
    assert (root / "notes" / "bad.md").read_bytes() == b"# Bad \xff byte\n"


def test_a_path_under_a_missing_folder_names_the_nearest_folder_that_exists(make_tree):
    """A path not found names the nearest folder above it that exists, so the call it suggests works. Before: its
    parent, missing too ('memories/notes/MEMORY.md' -> memory_list(path='memories/notes') -> ... -> '.')."""
    import re

    box = writable(make_tree(BASE))
    calls = [("memory_read", {"path": "memories/notes/MEMORY.md"}, "memory_list(path='.')"),
             ("memory_read", {"path": "notes/old/2025/a.md"}, "memory_list(path='notes')"),
             ("memory_list", {"path": "memories/notes"}, "memory_list(path='.')"),
             ("memory_list", {"path": "notes/old/2025"}, "memory_list(path='notes')"),
             ("memory", {"command": "view", "path": "/memories/notes/old/2025/a.md"}, "view /memories/notes to"),
             ("memory", {"command": "delete", "path": "/memories/old/a.md"}, "view /memories to")]
    for name, args, hint in calls:
        error = box.dispatch(name, args)["error"]
        assert error["type"] == "MemoryFileNotFound" and hint in error["message"], (args, error)
        if name == "memory":
            folder = re.search(r"view (\S+) to", error["message"]).group(1)
            assert "error" not in box.dispatch("memory", {"command": "view", "path": folder})
        else:
            folder = re.search(r"memory_list\(path='([^']*)'\)", error["message"]).group(1)
            assert "error" not in box.dispatch("memory_list", {"path": folder})


def test_long_view_is_cut_to_the_budget(make_tree):
    root = make_tree(dict(BASE, **{"notes/long.md": "".join(f"line {i} of a long note\n" for i in range(1, 400))}))
    result = writable(root, budget=300).call("memory", {"command": "view", "path": "/memories/notes/long.md"})
    assert result["truncated"] and "view_range [" in result["note"]
    last = int(result["result"].splitlines()[-1].split("\t")[0])
    assert f"view_range [{last + 1}, -1]" in result["note"]


def test_a_view_whose_first_line_is_over_the_budget_shows_its_start_and_reads_on(make_tree):
    """A file whose first line alone passes the budget shows that line cut, the note naming the view_range that reads
    on. Before: no line at all, and the note of a directory listing ('view a subdirectory to see the rest')."""
    root = make_tree(dict(BASE, **{"notes/wide.md": "word " * 2000 + "\nthe second line\n"}))
    box = writable(root, budget=300)
    result = box.dispatch("memory", {"command": "view", "path": "/memories/notes/wide.md"})
    assert result["result"].split("\n")[1].startswith("     1\tword word") and box.tokens(result) <= 300
    assert result["note"] == ("line 1 alone is longer than the 300-token budget and was cut; call view with "
                              "view_range [2, -1] for the lines after it")
    rest = box.dispatch("memory", {"command": "view", "path": "/memories/notes/wide.md", "view_range": [2, -1]})
    assert "     2\tthe second line" in rest["result"] and "note" not in rest
    alone = box.dispatch("memory", {"command": "view", "path": "/memories/notes/wide.md", "view_range": [1, 1]})
    assert alone["note"].endswith("it is the last line asked for") and "     1\tword" in alone["result"]


def test_library_edit_and_system_prompt(make_tree):
    root = make_tree(BASE)
    result = memsearch.edit(root, "create", path="notes/berlin.md", file_text="# Berlin\n\nThe U2 line.\n",
                            index=hash_index(root))
    assert isinstance(result, memsearch.EditResult) and result.index["synced"]
    assert memsearch.edit(root, "view", path="notes/berlin.md").output.endswith("     3\tThe U2 line.\n     4\t")
    assert "write memory with the memory tool" in writable(root).system_prompt()
    assert "write memory" not in ToolBox(root).system_prompt()


# --- random write sequences --------------------------------------------------------------------
NAMES = ["MEMORY.md", "a.md", "b.md"]
DIRS = ["/memories", "/memories/x", "/memories/x/y", "/memories/z"]
PATHS = [f"{d}/{n}" for d in DIRS for n in NAMES]
WORDS = st.sampled_from(["alpha", "beta", "gamma", "delta", "tea", "kayak", "\n", "# Head\n"])
TEXT = st.lists(WORDS, min_size=0, max_size=12).map(" ".join)
OPS = st.one_of(
    st.builds(lambda p, t: {"command": "create", "path": p, "file_text": t}, st.sampled_from(PATHS), TEXT),
    st.builds(lambda p, o, n: {"command": "str_replace", "path": p, "old_str": o, "new_str": n},
              st.sampled_from(PATHS), WORDS.filter(lambda w: w.strip()), TEXT),
    st.builds(lambda p, i, t: {"command": "insert", "path": p, "insert_line": i, "insert_text": t},
              st.sampled_from(PATHS), st.integers(0, 4), TEXT),
    st.builds(lambda p: {"command": "delete", "path": p}, st.sampled_from(PATHS + DIRS[1:])),
    st.builds(lambda a, b: {"command": "rename", "old_path": a, "new_path": b},
              st.sampled_from(PATHS + DIRS[1:]), st.sampled_from(PATHS + DIRS[1:] + ["/memories/w", "/memories/w/v"])),
)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(st.lists(OPS, min_size=1, max_size=10))
@example([{"command": "create", "path": "/memories/z/MEMORY.md", "file_text": ""},
          {"command": "rename", "old_path": "/memories/z", "new_path": "/memories/x/MEMORY.md"}])  # a directory named like the index
@pytest.mark.slow
def test_random_writes_keep_memory_valid_and_the_index_equal_to_a_rebuild(tmp_path_factory, ops):
    root = tmp_path_factory.mktemp("memory")
    (root / "MEMORY.md").write_text("# Memory\n\nroot\n")
    box = writable(root, core_budget=60)
    for op in ops:
        result = box.dispatch("memory", op)
        assert validate(root).valid, (op, result, validate(root).to_dict())
        if "error" not in result and "index" in result:
            assert result["index"]["synced"], result
    clean = tmp_path_factory.mktemp("clean")
    hash_index(root, db=clean).sync()
    assert rows(root / ".memsearch") == rows(clean)


# --- concurrent writers ------------------------------------------------------------------------
@pytest.mark.slow
def test_two_toolboxes_in_threads_lose_no_update(make_tree):
    root = make_tree(dict(BASE, **{"notes/log.md": "# Log\n"}))
    boxes = [writable(root), writable(root)]  # two harnesses: each its own index handle on the same db
    errors: list = []

    def writer(box: ToolBox, name: str) -> None:
        for i in range(8):
            out = box.dispatch("memory", {"command": "insert", "path": "/memories/notes/log.md", "insert_line": 1,
                                          "insert_text": f"entry {name}{i}"})
            text = f"# {name} {i}\n\nword{name}{i}\n"
            box.dispatch("memory", {"command": "create", "path": f"/memories/notes/{name}/{i}.md", "file_text": text})
            if "error" in out:
                errors.append(out)

    threads = [threading.Thread(target=writer, args=(box, name)) for box, name in zip(boxes, "pq")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    log = (root / "notes/log.md").read_text().splitlines()
    assert sorted(log[1:]) == sorted(f"entry {n}{i}" for n in "pq" for i in range(8))
    assert validate(root).valid
    clean = root.parent / "clean-threads"
    hash_index(root, db=clean).sync()
    assert rows(root / ".memsearch") == rows(clean)
    assert found(boxes[0], "wordp7") == ["notes/p/7.md"] and found(boxes[1], "wordq0") == ["notes/q/0.md"]


WRITER = textwrap.dedent("""
    import sys
    from memsearch.engine.embed.embedder import HashEmbedder
    from memsearch.engine.index import MemoryIndex
    from memsearch.tools import ToolBox
    root, name = sys.argv[1], sys.argv[2]
    box = ToolBox(root, index=MemoryIndex(root, embedder=HashEmbedder()), writable=True, sync=False)
    for i in range(10):
        args = {"command": "insert", "path": "/memories/notes/log.md", "insert_line": 1, "insert_text": f"entry {name}{i}"}
        out = box.dispatch("memory", args)
        assert "error" not in out and out["index"]["synced"], out
""")


@pytest.mark.slow
def test_two_processes_lose_no_update(make_tree):
    root = make_tree(dict(BASE, **{"notes/log.md": "# Log\n"}))
    hash_index(root).sync()
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(root), name], stderr=subprocess.PIPE, text=True)
        for name in "pq"
    ]
    for proc in procs:
        assert proc.wait(120) == 0, proc.stderr.read()
    log = (root / "notes/log.md").read_text().splitlines()
    assert sorted(log[1:]) == sorted(f"entry {n}{i}" for n in "pq" for i in range(10))
    clean = root.parent / "clean-procs"
    hash_index(root, db=clean).sync()
    assert rows(root / ".memsearch") == rows(clean)
