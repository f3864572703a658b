"""The write path (memory/editor.py): every memory-tool command, every refusal and its message, the invariants."""

from __future__ import annotations

import os

import pytest

from memsearch.errors import (
    CoreBudgetExceeded,
    EditRefused,
    InvalidArgument,
    MemoryFileExists,
    MemoryFileNotFound,
    NotMemoryFile,
    NoUniqueMatch,
    PathOutsideRoot,
)
from memsearch.memory.editor import Editor, index_text
from memsearch.memory.placement import to_relative
from memsearch.memory.validator import validate

BASE = {
    "MEMORY.md": "# Memory\n\nWho I work with and on what.\n",
    "persona.md": "# Persona\n\nTerse.\n",
    "projects/MEMORY.md": "# Projects\n\nOne folder per project.\n",
    "projects/atlas.md": "# Atlas\n\nalpha\nbeta\nalpha\n",
    "notes/MEMORY.md": "# Notes\n\nDaily notes.\n",
    "notes/2026-08-12.md": "# Standup\n\nShipped the importer.\n",
    "skills/deploy/SKILL.md": "# Deploy skill\n",
}


@pytest.fixture
def tree(make_tree):
    return make_tree(BASE)


@pytest.fixture
def editor(tree):
    return Editor(tree)


def valid(root) -> bool:
    report = validate(root)
    return report.valid


# --- paths -------------------------------------------------------------------------------------
@pytest.mark.parametrize("given, rel, shown", [
    ("/memories", ".", "/memories"),
    ("/memories/", ".", "/memories"),
    ("/memories/notes/a.md", "notes/a.md", "/memories/notes/a.md"),
    ("/memories//notes/./a.md", "notes/a.md", "/memories/notes/a.md"),
    ("notes/a.md", "notes/a.md", "notes/a.md"),
    ("./notes/a.md", "notes/a.md", "notes/a.md"),
    ("", ".", "."),
])
def test_paths_map_memories_and_relative(given, rel, shown):
    assert to_relative(given) == (rel, shown)


@pytest.mark.parametrize("given, words", [
    ("/etc/passwd", "outside the memory"),
    ("/memoriesX/a.md", "outside the memory"),
    ("~/a.md", "outside the memory"),
    ("/memories/../a.md", "'..' is not allowed"),
    ("notes/../../a.md", "'..' is not allowed"),
    ("a\x00.md", "NUL"),
])
def test_paths_outside_are_refused(editor, given, words):
    with pytest.raises(PathOutsideRoot, match=words.replace("(", r"\(")):
        editor.run("create", path=given, file_text="x")


def test_backslash_path_is_refused(editor):
    with pytest.raises(InvalidArgument, match="separate directories with '/'"):
        editor.run("view", path="notes\\a.md")


# --- view --------------------------------------------------------------------------------------
def test_view_directory_two_levels_with_sizes_hiding_non_memory(tree, editor):
    """Hidden entries, foreign directories and directories holding no file are left out; a plain file that is
    not Markdown (already in the tree) is listed, as Claude's memory tool lists it, so view and delete can reach it."""
    (tree / ".memsearch").mkdir()
    (tree / ".memsearch" / "x.md").write_text("index")
    (tree / "projects" / "atlas").mkdir()
    (tree / "projects" / "atlas" / "deep").mkdir()
    (tree / "projects" / "atlas" / "deep" / "x.md").write_text("deep\n")
    (tree / "projects" / "atlas" / "MEMORY.md").write_text("# A\n")
    (tree / "notes" / "image.png").write_bytes(b"\x89PNG")
    (tree / "empty").mkdir()
    out = editor.run("view", path="/memories").output
    lines = out.splitlines()
    assert lines[0] == "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items:"
    size = sum((tree / p).stat().st_size for p in BASE if not p.startswith("skills")) + 4 + 5 + 4
    assert lines[1].split("\t") == [f"{size / 1024:.1f}K" if size >= 1024 else f"{size}B", "/memories"]
    paths = [line.split("\t")[1] for line in lines[2:]]
    assert "/memories/projects/" in paths and "/memories/projects/atlas.md" in paths and "/memories/projects/atlas/" in paths
    assert "/memories/projects/atlas/MEMORY.md" not in paths  # third level
    assert "/memories/notes/image.png" in paths
    for hidden in (".memsearch", "skills", "empty"):
        assert not any(hidden in p for p in paths), hidden
    row = dict(reversed(line.split("\t")) for line in lines[2:])
    assert row["/memories/persona.md"] == f"{len(BASE['persona.md'])}B"


def test_view_file_numbers_lines_and_ranges(editor):
    out = editor.run("view", path="/memories/projects/atlas.md").output
    assert out.splitlines()[0] == "Here's the content of /memories/projects/atlas.md with line numbers:"
    # the final newline shows as an empty line 6, as Claude's memory tool shows it
    assert out.split("\n")[1:] == ["     1\t# Atlas", "     2\t", "     3\talpha", "     4\tbeta", "     5\talpha", "     6\t"]
    assert editor.run("view", path="projects/atlas.md", view_range=[4, -1]).output.split("\n")[1:] == [
        "     4\tbeta", "     5\talpha", "     6\t"]
    assert editor.run("view", path="projects/atlas.md", view_range=[2, 3]).output.splitlines()[1:] == ["     2\t", "     3\talpha"]


@pytest.mark.parametrize("view_range, shown", [
    ([5, 99], ["     5\talpha", "     6\t"]),  # an end past the file: clamped
    ([0, 2], ["     1\t# Atlas", "     2\t"]),  # a start before line 1: clamped
    ([-3, 1], ["     1\t# Atlas"]),
    ([9, -1], ["(no lines in view_range [9, -1]: /memories/projects/atlas.md has lines 1 to 6)"]),
    ([4, 2], ["(no lines in view_range [4, 2]: /memories/projects/atlas.md has lines 1 to 6)"]),
])
def test_view_range_is_clamped_to_the_file(editor, view_range, shown):
    assert editor.run("view", path="/memories/projects/atlas.md", view_range=view_range).output.split("\n")[1:] == shown


def test_view_shows_an_empty_file_as_one_empty_line(tree, editor):
    (tree / "notes/empty.md").write_text("")
    assert editor.run("view", path="/memories/notes/empty.md").output.split("\n")[1:] == ["     1\t"]


@pytest.mark.parametrize("view_range, words", [
    ([1], "two line numbers"),
    ("1:3", "two line numbers"),
    ([1, True], "two line numbers"),
])
def test_view_range_errors(editor, view_range, words):
    with pytest.raises(InvalidArgument, match=words):
        editor.run("view", path="projects/atlas.md", view_range=view_range)


def test_view_errors(editor):
    with pytest.raises(MemoryFileNotFound, match="does not exist: view /memories/notes to see its files"):
        editor.run("view", path="/memories/notes/nope.md")
    with pytest.raises(InvalidArgument, match="view_range applies to files"):
        editor.run("view", path="/memories/notes", view_range=[1, 2])
    with pytest.raises(NotMemoryFile, match="governed by another format"):
        editor.run("view", path="/memories/skills/deploy/SKILL.md")


# --- create ------------------------------------------------------------------------------------
def test_create_in_new_directories_makes_their_memory_md(tree, editor):
    result = editor.run("create", path="/memories/clients/acme/2026-08-13.md", file_text="# Call\n\nBudget approved.\n")
    assert result.output.startswith("File created successfully at: /memories/clients/acme/2026-08-13.md")
    assert result.created == ("clients/MEMORY.md", "clients/acme/MEMORY.md")
    assert "Created /memories/clients/MEMORY.md, /memories/clients/acme/MEMORY.md" in result.output
    assert set(result.changed) == {"clients/MEMORY.md", "clients/acme/MEMORY.md", "clients/acme/2026-08-13.md"}
    assert (tree / "clients/acme/2026-08-13.md").read_text() == "# Call\n\nBudget approved.\n"
    assert (tree / "clients/acme/MEMORY.md").read_text() == index_text("clients/acme")
    assert index_text("clients/acme").startswith("# Acme\n\n") and "clients/acme/" in index_text("clients/acme")
    assert valid(tree)


def test_create_memory_md_itself_and_root_index(make_tree):
    root = make_tree({"persona.md": "# P\n"})  # an invalid root: no MEMORY.md
    result = Editor(root).run("create", path="team/MEMORY.md", file_text="# Team\n\nPeople.\n")
    assert result.created == ("MEMORY.md",)  # the root's; team/MEMORY.md is the file itself
    assert (root / "team/MEMORY.md").read_text() == "# Team\n\nPeople.\n"
    assert valid(root)


def test_index_text_titles():
    assert index_text("a/project_atlas-2").splitlines()[0] == "# Project atlas 2"
    assert index_text(".").startswith("# Memory\n")


def test_create_errors(tree, editor):
    with pytest.raises(MemoryFileExists, match="already exists \\(a file\\): create makes new files only"):
        editor.run("create", path="/memories/persona.md", file_text="x")
    with pytest.raises(NotMemoryFile, match="e.g. '/memories/notes.md'"):
        editor.run("create", path="/memories/notes", file_text="x")
    (tree / "notes" / "dir.md").mkdir()
    with pytest.raises(MemoryFileExists, match="already exists \\(a directory\\)"):
        editor.run("create", path="/memories/notes/dir.md", file_text="x")
    with pytest.raises(NotMemoryFile, match="not a Markdown file: memory files end in '.md', e.g. '/memories/notes/a.md'"):
        editor.run("create", path="/memories/notes/a.txt", file_text="x")
    with pytest.raises(NotMemoryFile, match="hidden"):
        editor.run("create", path="/memories/.secret/a.md", file_text="x")
    with pytest.raises(NotMemoryFile, match="another format"):
        editor.run("create", path="/memories/skills/new.md", file_text="x")
    with pytest.raises(NotMemoryFile, match="needs 'persona.md' to be a directory"):
        editor.run("create", path="/memories/persona.md/x.md", file_text="x")
    assert not (tree / "notes/a.txt").exists() and not (tree / ".secret").exists()


@pytest.mark.parametrize("given, example", [("/memories", "/memories/notes/today.md"),
                                             ("/memories/", "/memories/notes/today.md"), (".", "notes/today.md")])
def test_create_on_the_root_suggests_a_name_create_takes(tree, editor, given, example):
    """Before: "e.g. '/memories/.md'", a hidden name that create itself refuses."""
    with pytest.raises(NotMemoryFile, match="is the memory root, a directory") as raised:
        editor.run("create", path=given, file_text="x")
    assert f"e.g. {example!r}" in str(raised.value) and "/.md" not in str(raised.value)
    editor.run("create", path=example, file_text="# Today\n")  # the example is a name create takes
    assert valid(tree)


@pytest.mark.parametrize("name", ["memory.md", "Memory.md", "MEMORy.md"])
def test_a_name_that_is_memory_md_in_another_case_is_refused_naming_memory_md(tree, editor, name):
    """Before: created beside the MEMORY.md a new folder gets (validate: misnamed-index)."""
    with pytest.raises(EditRefused, match="differs from MEMORY.md only in case.*create /memories/newdir2/MEMORY.md"):
        editor.run("create", path=f"/memories/newdir2/{name}", file_text="# New\n\nx\n")
    with pytest.raises(EditRefused, match="edit /memories/notes/MEMORY.md \\(view, then str_replace or insert\\)"):
        editor.run("create", path=f"/memories/notes/{name}", file_text="# N\n")
    with pytest.raises(EditRefused, match="rename refused: '/memories/projects/.*only in case"):
        editor.run("rename", old_path="/memories/notes/2026-08-12.md", new_path=f"/memories/projects/{name}")
    assert not (tree / "newdir2").exists() and (tree / "notes/2026-08-12.md").exists()
    report = validate(tree)
    assert report.valid and not [w for w in report.warnings if w.code == "misnamed-index"]


def test_a_write_that_would_leave_a_memory_md_empty_is_refused(tree, editor):
    """Before: str_replace emptied notes/MEMORY.md (validate: empty-index); a blank MEMORY.md could be created."""
    before = (tree / "notes/MEMORY.md").read_text()
    with pytest.raises(EditRefused, match="str_replace refused: it would leave /memories/notes/MEMORY.md empty") as raised:
        editor.run("str_replace", path="/memories/notes/MEMORY.md", old_str=before, new_str="\n")
    assert "e.g. '# Notes" in str(raised.value) and "delete /memories/notes instead" in str(raised.value)
    assert (tree / "notes/MEMORY.md").read_text() == before
    with pytest.raises(EditRefused, match="create refused: it would leave /memories/team/MEMORY.md empty"):
        editor.run("create", path="/memories/team/MEMORY.md", file_text="  \n")
    with pytest.raises(EditRefused, match="it would leave /memories/MEMORY.md empty") as raised:
        editor.run("str_replace", path="/memories/MEMORY.md", old_str=(tree / "MEMORY.md").read_text(), new_str="")
    assert "delete" not in str(raised.value)  # the root cannot be deleted: not offered
    assert not (tree / "team").exists()
    editor.run("str_replace", path="/memories/notes/MEMORY.md", old_str="Daily notes.", new_str="Standups.")  # still fine
    report = validate(tree)
    assert report.valid and not [w for w in report.warnings if w.code == "empty-index"]


def test_writes_never_touch_a_configured_index(tree):
    editor = Editor(tree, protect=[tree / "index"])
    with pytest.raises(NotMemoryFile, match="search index"):
        editor.run("create", path="index/x.md", file_text="x")


# --- links -------------------------------------------------------------------------------------
def test_links_are_never_followed(tree, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x.md").write_text("secret\n")
    os.symlink(outside, tree / "notes" / "out")
    os.symlink(tree / "persona.md", tree / "alias.md")
    editor = Editor(tree)
    with pytest.raises(PathOutsideRoot, match="goes through the link 'notes/out'"):
        editor.run("create", path="notes/out/y.md", file_text="x")
    with pytest.raises(PathOutsideRoot, match="never follows links"):
        editor.run("str_replace", path="notes/out/x.md", old_str="secret", new_str="gone")
    with pytest.raises(PathOutsideRoot, match="link 'alias.md'"):
        editor.run("insert", path="alias.md", insert_line=0, insert_text="x")
    with pytest.raises(PathOutsideRoot):
        editor.run("delete", path="notes/out")
    assert (outside / "x.md").read_text() == "secret\n" and not (outside / "y.md").exists()
    assert "out" not in editor.run("view", path="notes").output


# --- str_replace -------------------------------------------------------------------------------
def test_str_replace_once_with_snippet(tree, editor):
    result = editor.run("str_replace", path="/memories/notes/2026-08-12.md", old_str="importer", new_str="importer\nand the exporter")
    assert (tree / "notes/2026-08-12.md").read_text() == "# Standup\n\nShipped the importer\nand the exporter.\n"
    assert result.output.startswith("The memory file has been edited. Here is the snippet")
    assert "     3\tShipped the importer\n     4\tand the exporter." in result.output
    assert result.changed == ("notes/2026-08-12.md",)


def test_str_replace_names_each_line_once_with_its_count(make_tree):
    """Three matches on one line were reported as 'in lines 4, 4, 4': each line is named once, with its count."""
    root = make_tree({"MEMORY.md": "# M\n", "notes/MEMORY.md": "# N\n",
                      "notes/a.md": "# A\n\nintro\nab ab ab\nend ab\n"})
    editor = Editor(root)
    with pytest.raises(NoUniqueMatch, match=r"occurs 4 times in /memories/notes/a.md, in lines 4 \(3 times\), 5\. Include") as err:
        editor.run("str_replace", path="/memories/notes/a.md", old_str="ab", new_str="x")
    assert err.value.lines == (4, 5)
    (root / "notes" / "b.md").write_text("x x x\n")
    with pytest.raises(NoUniqueMatch, match=r"occurs 3 times in notes/b.md, in line 1 \(3 times\)\. Include") as err:
        editor.run("str_replace", path="notes/b.md", old_str="x", new_str="y")
    assert err.value.lines == (1,)


def test_str_replace_errors_name_lines(tree, editor):
    before = (tree / "projects/atlas.md").read_text()
    with pytest.raises(NoUniqueMatch, match=r"occurs 2 times in /memories/projects/atlas.md, in lines 3, 5\. Include more") as err:
        editor.run("str_replace", path="/memories/projects/atlas.md", old_str="alpha", new_str="x")
    assert err.value.lines == (3, 5)
    with pytest.raises(NoUniqueMatch, match="did not appear verbatim in projects/atlas.md.*view the file and copy"):
        editor.run("str_replace", path="projects/atlas.md", old_str="gamma", new_str="x")
    with pytest.raises(InvalidArgument, match="'old_str' is empty"):
        editor.run("str_replace", path="projects/atlas.md", old_str="", new_str="x")
    with pytest.raises(InvalidArgument, match="is a directory; str_replace works on a file"):
        editor.run("str_replace", path="projects", old_str="a", new_str="b")
    with pytest.raises(MemoryFileNotFound, match="does not exist: view projects to see its files, or create it"):
        editor.run("str_replace", path="projects/none.md", old_str="a", new_str="b")
    assert (tree / "projects/atlas.md").read_text() == before


def test_overlapping_occurrences_count(tree, editor):
    (tree / "notes/a.md").write_text("aaa\n")
    with pytest.raises(NoUniqueMatch, match="occurs 2 times"):
        editor.run("str_replace", path="notes/a.md", old_str="aa", new_str="b")


def test_not_utf8_is_refused_unchanged(tree, editor):
    (tree / "notes/bad.md").write_bytes(b"# Bad \xff\n")
    with pytest.raises(EditRefused, match="not valid UTF-8 .*nothing was changed: re-save it as UTF-8 first"):
        editor.run("insert", path="notes/bad.md", insert_line=0, insert_text="x")
    assert (tree / "notes/bad.md").read_bytes() == b"# Bad \xff\n"


def test_bom_is_kept(tree, editor):
    (tree / "notes/bom.md").write_bytes(b"\xef\xbb\xbf# Bom\n")
    editor.run("str_replace", path="notes/bom.md", old_str="Bom", new_str="Kept")
    assert (tree / "notes/bom.md").read_bytes() == b"\xef\xbb\xbf# Kept\n"


# --- insert ------------------------------------------------------------------------------------
@pytest.mark.parametrize("line, expected", [
    (0, "new\n# Atlas\n\nalpha\nbeta\nalpha\n"),
    (1, "# Atlas\nnew\n\nalpha\nbeta\nalpha\n"),
    (5, "# Atlas\n\nalpha\nbeta\nalpha\nnew\n"),
])
def test_insert_positions(tree, editor, line, expected):
    result = editor.run("insert", path="/memories/projects/atlas.md", insert_line=line, insert_text="new")
    assert (tree / "projects/atlas.md").read_text() == expected
    assert f"1 line inserted after line {line}" in result.output


def test_insert_after_unterminated_last_line(tree, editor):
    (tree / "notes/a.md").write_text("one")
    editor.run("insert", path="notes/a.md", insert_line=1, insert_text="two\nthree\n")
    assert (tree / "notes/a.md").read_text() == "one\ntwo\nthree\n"


@pytest.mark.parametrize(
    "line, error, words",
    [
        (
            6,
            InvalidArgument,
            r"insert_line 6 is out of range: /memories/projects/atlas.md has 5 lines, so give 0 \(before the first line\) to 5",
        ),
        (-1, InvalidArgument, "out of range"),
        ("2", InvalidArgument, "must be a whole number"),
        (True, InvalidArgument, "must be a whole number"),
    ],
)
def test_insert_errors(editor, line, error, words):
    with pytest.raises(error, match=words):
        editor.run("insert", path="/memories/projects/atlas.md", insert_line=line, insert_text="x")


def test_insert_accepts_integral_float(tree, editor):
    editor.run("insert", path="projects/atlas.md", insert_line=1.0, insert_text="x")
    assert (tree / "projects/atlas.md").read_text().splitlines()[1] == "x"


# --- delete ------------------------------------------------------------------------------------
def test_delete_file_and_directory(tree, editor):
    assert (
        editor.run("delete", path="/memories/notes/2026-08-12.md").output
        == "Successfully deleted /memories/notes/2026-08-12.md"
    )
    assert not (tree / "notes/2026-08-12.md").exists()
    result = editor.run("delete", path="/memories/projects")
    assert set(result.changed) == {"projects/MEMORY.md", "projects/atlas.md"}
    assert not (tree / "projects").exists()
    assert not [p for p in os.listdir(tree) if p.startswith(".projects")]  # the hidden stand-in is gone too
    assert valid(tree)


def test_delete_a_memory_md_that_is_no_longer_needed(tree, editor):
    editor.run("delete", path="notes/2026-08-12.md")
    editor.run("delete", path="notes/MEMORY.md")
    assert valid(tree)


def test_delete_refusals(tree, editor):
    with pytest.raises(EditRefused, match="the memory root cannot be deleted"):
        editor.run("delete", path="/memories")
    with pytest.raises(
        EditRefused,
        match=r"notes/MEMORY.md cannot be deleted: notes/ still holds 2026-08-12.md, and every "
        r"memory directory needs its MEMORY.md\. Edit it instead",
    ):
        editor.run("delete", path="/memories/notes/MEMORY.md")
    with pytest.raises(EditRefused, match="the memory root always needs its MEMORY.md"):
        editor.run("delete", path="MEMORY.md")
    with pytest.raises(MemoryFileNotFound, match="does not exist: view /memories/notes to see what does"):
        editor.run("delete", path="/memories/notes/none.md")
    (tree / "notes" / ".cache").write_bytes(b"x")
    with pytest.raises(
        EditRefused, match=r"holds entries that are not memory \(notes/.cache\), which delete would take"
    ):
        editor.run("delete", path="notes")
    assert (tree / "notes/MEMORY.md").exists() and (tree / "MEMORY.md").exists() and (tree / "notes/.cache").exists()


def test_files_that_are_not_markdown_can_be_viewed_deleted_or_renamed_into_memory(tree, editor):
    """A .txt already in the tree (left by another tool): view shows it, delete removes it, the writes refuse it and
    name the fix (rename it to .md), and a directory holding one can still be deleted."""
    (tree / "notes" / "todo.txt").write_text("buy milk\n")
    assert editor.run("view", path="/memories/notes/todo.txt").output.split("\n")[1:] == [
        "     1\tbuy milk",
        "     2\t",
    ]
    with pytest.raises(NotMemoryFile, match=r"rename it to /memories/notes/todo.md first"):
        editor.run("str_replace", path="/memories/notes/todo.txt", old_str="milk", new_str="tea")
    with pytest.raises(NotMemoryFile, match=r"rename it to /memories/notes/todo.md first"):
        editor.run("insert", path="/memories/notes/todo.txt", insert_line=0, insert_text="x")
    with pytest.raises(NotMemoryFile, match="not a Markdown file"):
        editor.run("rename", old_path="/memories/notes/todo.txt", new_path="/memories/notes/todo2.txt")
    editor.run("rename", old_path="/memories/notes/todo.txt", new_path="/memories/notes/todo.md")
    assert (tree / "notes/todo.md").read_text() == "buy milk\n"
    (tree / "notes" / "photo.jpg").write_bytes(b"\xff\xd8jpg")
    with pytest.raises(EditRefused, match="not a valid UTF-8 text file"):
        editor.run("view", path="/memories/notes/photo.jpg")
    assert editor.run("delete", path="/memories/notes/photo.jpg").changed == ("notes/photo.jpg",)
    (tree / "notes" / "photo.jpg").write_bytes(b"jpg")
    editor.run("delete", path="/memories/notes")
    assert not (tree / "notes").exists() and valid(tree)


# --- rename ------------------------------------------------------------------------------------
def test_rename_file_into_new_directory(tree, editor):
    result = editor.run(
        "rename", old_path="/memories/notes/2026-08-12.md", new_path="/memories/archive/2026/standup.md"
    )
    assert result.output.startswith(
        "Successfully renamed /memories/notes/2026-08-12.md to /memories/archive/2026/standup.md"
    )
    assert result.created == ("archive/MEMORY.md", "archive/2026/MEMORY.md")
    assert (tree / "archive/2026/standup.md").read_text() == BASE["notes/2026-08-12.md"]
    assert not (tree / "notes/2026-08-12.md").exists()
    assert valid(tree)


def test_rename_directory(tree, editor):
    result = editor.run("rename", old_path="projects", new_path="work/projects")
    assert (tree / "work/projects/atlas.md").exists() and not (tree / "projects").exists()
    assert {"projects/atlas.md", "work/projects/atlas.md", "work/MEMORY.md"} <= set(result.changed)
    assert valid(tree)


def test_rename_refusals(tree, editor):
    with pytest.raises(
        MemoryFileExists, match="The destination /memories/persona.md already exists: rename never overwrites"
    ):
        editor.run("rename", old_path="/memories/notes/2026-08-12.md", new_path="/memories/persona.md")
    with pytest.raises(MemoryFileNotFound, match="does not exist"):
        editor.run("rename", old_path="notes/none.md", new_path="notes/b.md")
    with pytest.raises(EditRefused, match="cannot be moved into itself"):
        editor.run("rename", old_path="projects", new_path="projects/sub")
    with pytest.raises(EditRefused, match="the memory root cannot be renamed"):
        editor.run("rename", old_path="/memories", new_path="/memories/x")
    with pytest.raises(EditRefused, match=r"notes/MEMORY.md cannot be moved: notes/ still holds 2026-08-12.md"):
        editor.run("rename", old_path="notes/MEMORY.md", new_path="projects/notes-index.md")
    with pytest.raises(NotMemoryFile, match="not a Markdown file"):
        editor.run("rename", old_path="persona.md", new_path="persona.txt")
    with pytest.raises(NotMemoryFile, match="another format"):
        editor.run("rename", old_path="persona.md", new_path="skills/persona.md")
    assert (tree / "notes/MEMORY.md").exists() and (tree / "persona.md").exists()


def test_rename_lone_memory_md_in_place_is_refused(make_tree):
    root = make_tree({"MEMORY.md": "# M\n", "a/MEMORY.md": "# A\n"})
    with pytest.raises(EditRefused, match="a/ still holds other.md"):
        Editor(root).run("rename", old_path="a/MEMORY.md", new_path="a/other.md")
    Editor(root).run("rename", old_path="a/MEMORY.md", new_path="b/MEMORY.md")  # a/ is empty: fine
    assert valid(root) and (root / "b/MEMORY.md").read_text() == "# A\n"


# --- core budget -------------------------------------------------------------------------------
def test_core_budget_refuses_with_numbers_and_advice(tree):
    editor = Editor(tree, budget=40)
    before = {p: (tree / p).read_text() for p in ("MEMORY.md", "persona.md")}
    with pytest.raises(
        CoreBudgetExceeded,
        match=r"would be [0-9,]+ tokens, over its budget of 40 \(it is [0-9]+ now; this write "
        r"adds [0-9,]+\)\. Nothing was written\. Move the detail into a subdirectory",
    ) as err:
        editor.run("insert", path="/memories/persona.md", insert_line=2, insert_text="word " * 100)
    assert err.value.budget == 40 and err.value.tokens > 40
    with pytest.raises(CoreBudgetExceeded, match="create /memories/notes/big.md"):
        editor.run("create", path="/memories/big.md", file_text="word " * 100)
    with pytest.raises(CoreBudgetExceeded):
        Editor(tree, budget=20).run("rename", old_path="notes/2026-08-12.md", new_path="standup.md")
    assert {p: (tree / p).read_text() for p in before} == before
    assert not (tree / "big.md").exists() and (tree / "notes/2026-08-12.md").exists()
    # external memory has no budget; a write that shrinks an over-budget core is allowed
    editor.run("create", path="notes/big.md", file_text="word " * 100)
    tight = Editor(tree, budget=5)
    result = tight.run("str_replace", path="persona.md", old_str="Terse.", new_str="")
    assert result.core_tokens is not None and "Core memory is now" in result.output


def test_core_budget_from_environment(tree, monkeypatch):
    monkeypatch.setenv("MEMSEARCH_CORE_BUDGET", "30")
    with pytest.raises(CoreBudgetExceeded, match="budget of 30"):
        Editor(tree).run("create", path="more.md", file_text="word " * 40)
    assert validate(tree).core_budget == 30


# --- arguments ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "command, args, words",
    [
        (
            "edit",
            {"path": "a.md"},
            "unknown memory command 'edit': choose one of view, create, str_replace, insert, delete, rename",
        ),
        ("create", {"path": "a.md"}, "create needs 'file_text': call it with path, file_text"),
        ("create", {"path": "a.md", "file_text": "x", "old_str": "y"}, "create takes path, file_text; not 'old_str'"),
        ("create", {"path": 3, "file_text": "x"}, "'path' must be a string"),
        ("rename", {"old_path": "a.md"}, "rename needs 'new_path'"),
    ],
)
def test_argument_errors(editor, command, args, words):
    with pytest.raises(InvalidArgument, match=words):
        editor.run(command, **args)


def test_none_means_omitted(tree, editor):
    assert "line numbers" in editor.run("view", path="persona.md", view_range=None).output


# --- on_change ---------------------------------------------------------------------------------
def test_on_change_gets_changed_paths_and_failures_do_not_undo(tree):
    seen = []
    editor = Editor(tree, on_change=lambda paths: seen.append(paths) or {"synced": True})
    assert editor.run("create", path="notes/x.md", file_text="x\n").index == {"synced": True}
    assert editor.run("view", path="notes/x.md").index is None
    assert seen == [("notes/x.md",)]

    def broken(paths):
        raise OSError(28, "No space left on device")

    result = Editor(tree, on_change=broken).run("create", path="notes/y.md", file_text="y\n")
    assert result.index["synced"] is False and "No space left" in result.index["error"]
    assert (tree / "notes/y.md").exists()


def test_failed_write_leaves_old_file_and_no_temporaries(tree, editor, monkeypatch):
    import memsearch.memory.files as module

    def crash(src, dst, **kwargs):
        raise OSError(5, "I/O error")

    monkeypatch.setattr(module.os, "replace", crash)
    with pytest.raises(OSError):
        editor.run("str_replace", path="persona.md", old_str="Terse", new_str="Verbose")
    assert (tree / "persona.md").read_text() == BASE["persona.md"]
    assert not [p for p in os.listdir(tree) if p.endswith(".tmp")]


def test_a_directory_swapped_for_a_link_mid_write_is_refused(tree, tmp_path, monkeypatch):
    """The check and the write are by descriptor: a link swapped in after the path check is not followed."""
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    editor = Editor(tree)
    real_check = Editor._missing_indexes  # runs after the path check, before the write

    def swapping_check(self, *args, **kwargs):
        if (tree / "notes").is_dir() and not (tree / "notes").is_symlink():
            os.rename(tree / "notes", tmp_path / "notes-moved")
            os.symlink(outside, tree / "notes")
        return real_check(self, *args, **kwargs)

    monkeypatch.setattr(Editor, "_missing_indexes", swapping_check)
    with pytest.raises(NotMemoryFile, match="directory link"):
        editor.run("create", path="notes/evil.md", file_text="x")
    assert list(outside.iterdir()) == []


def test_core_file_link_inside_the_root_counts_toward_the_budget(tree):
    os.symlink(tree / "notes" / "2026-08-12.md", tree / "standup.md")  # a core file that is a link inside the root
    result = Editor(tree).run("insert", path="persona.md", insert_line=0, insert_text="More.")
    assert "Core memory is now" in result.output
    with pytest.raises(CoreBudgetExceeded):
        Editor(tree, budget=20).run("insert", path="persona.md", insert_line=0, insert_text="word " * 20)


def test_a_writer_that_holds_the_root_too_long_gives_memory_busy(tree):
    from memsearch.errors import MemoryBusy
    from memsearch.memory.placement import write_lock

    with write_lock(tree):  # another writer (this thread, its own descriptor: flock conflicts like another process)
        with pytest.raises(
            MemoryBusy, match=r"another writer has held the memory at .* for over 0.2 s: retry the call"
        ):
            Editor(tree, lock_timeout=0.2).run("create", path="notes/x.md", file_text="x")
    assert not (tree / "notes/x.md").exists()
    Editor(tree, lock_timeout=0.2).run("create", path="notes/x.md", file_text="x")  # free again
