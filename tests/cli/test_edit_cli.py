"""``memsearch edit``: one memory-tool command from the command line (arguments, or the tool call's JSON)."""

from __future__ import annotations

import io
import json

import pytest

from memsearch.cli.app import main

BASE = {"MEMORY.md": "# Memory\n\nRoot.\n", "notes/MEMORY.md": "# Notes\n\nDaily.\n", "notes/a.md": "# A\n\none\ntwo\n"}


@pytest.fixture
def root(make_tree):
    return make_tree(BASE)


def run(capsys, *argv, stdin: str | None = None, monkeypatch=None):
    if stdin is not None:
        monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    try:
        code = main(list(argv))
    except SystemExit as exc:  # typer's standalone mode exits after a command that succeeded
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def test_each_command_from_arguments(root, capsys):
    code, out, _ = run(capsys, "edit", str(root), "create", "/memories/trips/lisbon.md", "--text", "# Lisbon\n\ntram\n", "--no-sync")
    assert code == 0 and out.startswith("File created successfully at: /memories/trips/lisbon.md")
    assert (root / "trips/MEMORY.md").exists()
    code, out, _ = run(capsys, "edit", str(root), "str_replace", "trips/lisbon.md", "--old", "tram", "--new", "tram 28", "--no-sync")
    assert code == 0 and "tram 28" in out
    code, out, _ = run(capsys, "edit", str(root), "insert", "trips/lisbon.md", "--line", "0", "--text", "top", "--no-sync")
    assert code == 0 and (root / "trips/lisbon.md").read_text().startswith("top\n# Lisbon")
    code, out, _ = run(capsys, "edit", str(root), "view", "trips/lisbon.md", "--range", "2:3")
    assert code == 0 and out.splitlines()[1:] == ["     2\t# Lisbon", "     3\t"]
    code, out, _ = run(capsys, "edit", str(root), "rename", "trips", "travel", "--no-sync", "--json")
    assert code == 0 and json.loads(out)["changed"][-1] == "travel/lisbon.md"
    code, out, _ = run(capsys, "edit", str(root), "delete", "travel/lisbon.md", "--no-sync")
    assert code == 0 and out.strip() == "Successfully deleted travel/lisbon.md"
    code, out, _ = run(capsys, "edit", str(root), "view", "/memories")
    assert code == 0 and "/memories/notes/a.md" in out


def test_tool_call_json_from_stdin_and_text(root, capsys, monkeypatch):
    call = {"type": "tool_use", "id": "toolu_1", "name": "memory",
            "input": {"command": "create", "path": "/memories/notes/b.md", "file_text": "# B\n"}}
    code, out, _ = run(capsys, "edit", str(root), "--input", "-", "--no-sync", stdin=json.dumps(call), monkeypatch=monkeypatch)
    assert code == 0 and (root / "notes/b.md").read_text() == "# B\n"
    code, out, _ = run(capsys, "edit", str(root), "--input", '{"command": "view", "path": "notes/b.md"}')
    assert code == 0 and "     1\t# B" in out
    code, out, _ = run(capsys, "edit", str(root), "insert", "notes/b.md", "--line", "1", "--text", "-", "--no-sync",
                       stdin="from stdin\n", monkeypatch=monkeypatch)
    assert code == 0 and (root / "notes/b.md").read_text() == "# B\nfrom stdin\n"


@pytest.mark.parametrize("argv, words", [
    (["create", "notes/a.md", "--text", "x"], "already exists"),
    (["str_replace", "notes/a.md", "--old", "zzz"], "did not appear verbatim"),
    (["delete", "notes/MEMORY.md"], "needs its MEMORY.md"),
    (["delete", "/memories"], "root cannot be deleted"),
    (["view", "notes/a.md", "--range", "x:y"], "--range 'x:y' is not START:END"),
    (["view", "notes/a.md", "extra"], "only rename takes a second"),
    (["delete", "notes/a.md", "--text", "x"], "--text is the content of create"),
    (["--input", "{oops"], "--input is not JSON"),
    (["view", "notes/a.md", "--input", "{}"], "not both"),
    ([], "give a COMMAND"),
    (["undo", "notes/a.md"], "unknown memory command 'undo'"),
])
def test_errors_are_one_line_and_exit_2(root, capsys, argv, words):
    before = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
    code, out, err = run(capsys, "edit", str(root), *argv, "--no-sync")
    assert code == 2 and words in err and "Traceback" not in err and err.startswith("error:")
    assert {p: p.read_bytes() for p in root.rglob("*") if p.is_file()} == before


def test_core_budget_option(root, capsys):
    code, _, err = run(capsys, "edit", str(root), "create", "big.md", "--text", "word " * 50, "--core-budget", "20", "--no-sync")
    assert code == 2 and "over its budget of 20" in err and not (root / "big.md").exists()


@pytest.mark.parametrize("argv, said", [
    (["create", "notes/new.md"], "create needs --text: `memsearch edit {root} create PATH --text TEXT`"),
    (["view"], "view needs PATH: `memsearch edit {root} view PATH [--range START:END]`"),
    (["str_replace", "notes/a.md", "--new", "x"],
     "str_replace needs --old: `memsearch edit {root} str_replace PATH --old TEXT [--new TEXT]`"),
    (["insert", "notes/a.md", "--text", "x"], "insert needs --line: `memsearch edit {root} insert PATH --line N --text TEXT`"),
    (["rename", "notes/a.md"], "rename needs NEW_PATH: `memsearch edit {root} rename PATH NEW_PATH`"),
    (["view", "notes/a.md", "--old", "x", "--line", "2"],
     "view does not take --line or --old: leave them out (`memsearch edit {root} view PATH [--range START:END]`)"),
])
def test_a_missing_or_extra_argument_is_named_as_the_command_line_spells_it(root, capsys, argv, said):
    """The refusals named the memory tool's fields (``create needs 'file_text': call it with path, file_text``)."""
    code, out, err = run(capsys, "edit", str(root), *argv, "--no-sync")
    assert code == 2 and err.strip() == "error: " + said.format(root=root), err
    code, out, err = run(capsys, "edit", str(root), "--input", '{"command": "create", "path": "x.md"}', "--no-sync")
    assert code == 2 and "create needs 'file_text'" in err  # a tool call given as JSON keeps the tool's words


@pytest.mark.parametrize("path", ["MEMORY.md", "/memories/MEMORY.md"])
def test_the_root_memory_md_refused_deletion_names_no_directory_to_delete(root, capsys, path):
    """It ended ``... or delete the whole directory .``: the root cannot be deleted, so editing is the one way."""
    code, out, err = run(capsys, "edit", str(root), "delete", path, "--no-sync")
    assert code == 2 and err.strip().endswith("needs its MEMORY.md. Edit it instead (str_replace or insert)"), err
    code, out, err = run(capsys, "edit", str(root), "delete", "notes/MEMORY.md", "--no-sync")
    assert code == 2 and err.strip().endswith("or delete the whole directory notes"), err


@pytest.mark.parametrize("argv, call, said, tool_said", [
    (["str_replace", "notes/a.md", "--old", "zzz", "--new", "x"], {"old_str": "zzz", "new_str": "x"},
     "No replacement was performed: --old did not appear verbatim in notes/a.md.", "old_str did not appear verbatim"),
    (["str_replace", "notes/a.md", "--old", ""], {"old_str": "", "new_str": ""}, "str_replace: --old is empty",
     "'old_str' is empty"),
    (["insert", "notes/a.md", "--line", "99", "--text", "x"], {"insert_line": 99, "insert_text": "x"},
     "insert: --line 99 is out of range: notes/a.md has 4 lines", "insert_line 99 is out of range"),
    (["view", "notes", "--range", "1:2"], {"view_range": [1, 2]}, "--range applies to files, and notes is a directory",
     "view_range applies to files"),
    (["view", "notes/nope.md"], {}, "notes/nope.md does not exist: run `memsearch edit {root} view notes` to see",
     "does not exist: view notes to see"),
])
def test_the_editor_s_refusals_name_the_command_line_s_options(root, capsys, argv, call, said, tool_said):
    """They named the memory tool's parameters (``old_str did not appear verbatim``, ``insert_line 99 is out of
    range``) to a shell user, who gave --old and --line; a call given as JSON (a model's) keeps the tool's words."""
    code, out, err = run(capsys, "edit", str(root), *argv, "--no-sync")
    assert code == 2 and said.format(root=root) in err and tool_said not in err, err
    call = {"command": argv[0], "path": argv[1]} | call
    code, out, err = run(capsys, "edit", str(root), "--input", json.dumps(call), "--no-sync")
    assert code == 2 and tool_said in err, err
