"""A memory write never makes a name holding a control or invisible character (memory/placement.py): a newline in
a name split a line of the memory tool's directory view into a made-up entry, U+202E showed a name reversed, U+200B
made two names look alike. Names that already exist stay reachable, so such a file can still be viewed and deleted;
the joiners Persian words and emoji need are kept."""

from __future__ import annotations

import re

import pytest

from memsearch.errors import InvalidArgument, MemoryFileExists, MemoryFileNotFound, PathOutsideRoot
from memsearch.memory.editor import Editor

BASE = {"MEMORY.md": "# Memory\n\nMine.\n", "notes/MEMORY.md": "# Notes\n\nDaily notes.\n",
        "notes/a.md": "# A\n\ntext\n"}


@pytest.mark.parametrize("name, code", [
    ("a\nb.md", "U+000A"), ("tab\there.md", "U+0009"), ("bell\x07.md", "U+0007"), ("a\u202eb.md", "U+202E"),
    ("\u200b.md", "U+200B"), ("a\ufeff.md", "U+FEFF"), ("a\u2028b.md", "U+2028"),
])
def test_new_names_with_control_or_invisible_characters_are_refused(make_tree, name, code):
    root = make_tree(BASE)
    editor = Editor(root)
    before = sorted(p.name for p in (root / "notes").iterdir())
    for call in ({"command": "create", "path": f"/memories/notes/{name}", "file_text": "# x\n"},
                 {"command": "create", "path": f"/memories/{name[:-3]}/x.md", "file_text": "# x\n"},
                 {"command": "rename", "old_path": "/memories/notes/a.md", "new_path": f"/memories/notes/{name}"}):
        with pytest.raises(InvalidArgument, match=re.escape(f"has {code} (") + ".*choose one of visible characters"):
            editor.run(call.pop("command"), **call)
    assert sorted(p.name for p in (root / "notes").iterdir()) == before and not (root / name[:-3]).exists()


def test_an_existing_odd_name_stays_reachable_and_joiners_are_kept(make_tree):
    root = make_tree(BASE)
    (root / "notes" / "made\nelsewhere.md").write_text("# Elsewhere\n")
    editor = Editor(root)
    assert "Elsewhere" in editor.run("view", path="/memories/notes/made\nelsewhere.md").output
    editor.run("delete", path="/memories/notes/made\nelsewhere.md")
    assert not (root / "notes" / "made\nelsewhere.md").exists()
    for name in ("می\u200cخواهم.md", "family-\U0001f468\u200d\U0001f469.md", "café ☃.md"):
        editor.run("create", path=f"/memories/notes/{name}", file_text="# ok\n")
        assert (root / "notes" / name).is_file()


NFC, NFD = "caf\u00e9", "cafe\u0301"  # one name to a person: U+00E9, or e + U+0301 (what macOS writes)


@pytest.mark.parametrize("made, typed", [(NFD, NFC), (NFC, NFD)], ids=["nfd-on-disk", "nfc-on-disk"])
def test_a_lookalike_of_an_existing_name_is_refused_and_a_lookup_resolves_to_it(make_tree, made, typed):
    root = make_tree(BASE | {f"notes/{made}.md": "# Cafe\n\nopen late\n", f"{made}/MEMORY.md": "# Cafe\n",
                             f"{made}/menu.md": "# Menu\n"})
    editor = Editor(root)
    message = (rf"a file named '{made}\.md' already exists in /memories/notes: the name you gave, with its characters "
               rf"encoded another way \(Unicode NFC/NFD\).*edit it .* at /memories/notes/{made}\.md, or choose another name")
    with pytest.raises(MemoryFileExists, match=message):
        editor.run("create", path=f"/memories/notes/{typed}.md", file_text="# twin\n")
    with pytest.raises(MemoryFileExists, match=f"a file named '{made}.md' already exists in /memories/notes"):
        editor.run("rename", old_path="/memories/notes/a.md", new_path=f"/memories/notes/{typed}.md")
    with pytest.raises(MemoryFileExists, match=f"a folder named '{made}' already exists in /memories: .*write into it"):
        editor.run("rename", old_path="/memories/notes", new_path=f"/memories/{typed}")
    assert sorted(p.name for p in (root / "notes").iterdir()) == sorted(["MEMORY.md", "a.md", f"{made}.md"])

    # a lookup of the other form opens the one file, and names it as it is
    view = editor.run("view", path=f"/memories/notes/{typed}.md")
    assert view.path == f"/memories/notes/{made}.md" and "open late" in view.output
    editor.run("str_replace", path=f"notes/{typed}.md", old_str="late", new_str="early")
    assert (root / "notes" / f"{made}.md").read_text() == "# Cafe\n\nopen early\n"
    editor.run("insert", path=f"/memories/notes/{typed}.md", insert_line=3, insert_text="closed Mondays")
    assert "menu.md" in editor.run("view", path=f"/memories/{typed}").output
    # a folder on the way of a new file is the existing one: no second look-alike folder
    editor.run("create", path=f"/memories/{typed}/drinks.md", file_text="# Drinks\n")
    assert (root / made / "drinks.md").is_file() and not (root / typed).exists()
    # renaming a name to its other form is no look-alike of another entry: it normalises the name
    editor.run("rename", old_path=f"/memories/notes/{typed}.md", new_path=f"/memories/notes/{typed}.md")
    assert sorted(p.name for p in (root / "notes").iterdir()) == sorted(["MEMORY.md", "a.md", f"{typed}.md"])
    editor.run("delete", path=f"/memories/notes/{made}.md")
    assert sorted(p.name for p in (root / "notes").iterdir()) == ["MEMORY.md", "a.md"]


def test_two_existing_lookalikes_are_opened_by_their_exact_names_only(make_tree):
    """Three forms of one name: U+00C5, A + U+030A, and U+212B (ANGSTROM SIGN). Made outside the tool, two
    exist: each opens by its exact name, the third form resolves to neither, and a new one is refused."""
    root = make_tree(BASE | {"notes/A\u030a.md": "# decomposed\n", "notes/\u212b.md": "# angstrom\n"})
    editor = Editor(root)
    assert "decomposed" in editor.run("view", path="/memories/notes/A\u030a.md").output
    assert "angstrom" in editor.run("view", path="/memories/notes/\u212b.md").output
    with pytest.raises(MemoryFileNotFound):
        editor.run("view", path="/memories/notes/\u00c5.md")
    with pytest.raises(MemoryFileExists, match="a file named 'A\u030a.md' and a file named '\u212b.md' already exist in "
                                               "/memories/notes: .*use one of them"):
        editor.run("create", path="/memories/notes/\u00c5.md", file_text="# x\n")
    assert sorted(p.name for p in (root / "notes").iterdir()) == sorted(["MEMORY.md", "a.md", "A\u030a.md", "\u212b.md"])


def test_a_lookalike_never_leads_through_a_link(make_tree, tmp_path):
    """The look-alike found is checked like any name: a link is never followed by a write."""
    root = make_tree(BASE)
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / NFD).symlink_to(outside)
    with pytest.raises(PathOutsideRoot, match="goes through the link"):
        Editor(root).run("create", path=f"/memories/{NFC}/x.md", file_text="# x\n")
    assert list(outside.iterdir()) == []


ODD = {"evil\n4.0K\tforged.md": "# forged\n", "esc\x1b[31mred.md": "# red\n", "rtl\u202egnp.md": "# rtl\n",
       "back\\slash.md": "# backslash\n"}


def test_odd_existing_names_are_escaped_in_view_and_open_as_shown(make_tree):
    """Names made by other tools: a newline once forged a listing line; each now shows escaped, on its own line,
    and the escaped form opens, edits, renames and deletes the file."""
    root = make_tree(BASE)
    for name, text in ODD.items():
        (root / "notes" / name).write_text(text)
    editor = Editor(root)
    listing = editor.run("view", path="/memories/notes").output.split("\n")
    rows = [line.split("\t") for line in listing[2:]]
    assert [path for _, path in rows] == ["/memories/notes/MEMORY.md", "/memories/notes/a.md",
                                          "/memories/notes/back\\x5cslash.md", "/memories/notes/esc\\x1b[31mred.md",
                                          "/memories/notes/evil\\x0a4.0K\\x09forged.md", "/memories/notes/rtl\\u202egnp.md"]
    assert all(len(row) == 2 for row in rows) and not any("\x1b" in line or "\u202e" in line for line in listing)
    for _, shown in rows:
        view = editor.run("view", path=shown)
        assert view.output.startswith(f"Here's the content of {shown} with line numbers:\n")
    editor.run("str_replace", path="notes/evil\\x0a4.0K\\x09forged.md", old_str="forged", new_str="found")
    assert (root / "notes" / "evil\n4.0K\tforged.md").read_text() == "# found\n"
    editor.run("rename", old_path="/memories/notes/esc\\x1b[31mred.md", new_path="/memories/notes/red.md")
    editor.run("delete", path="/memories/notes/back\\x5cslash.md")
    assert sorted(p.name for p in (root / "notes").iterdir()) == sorted(
        ["MEMORY.md", "a.md", "red.md", "evil\n4.0K\tforged.md", "rtl\u202egnp.md"])


@pytest.mark.parametrize("path, message", [
    ("notes\\a.md", "contains a backslash: separate directories with '/'"),
    ("/memories/notes/a\\x2fb.md", "has the escape \\\\x2f, which no name can hold"),
    ("/memories/notes/a\\x00.md", "has the escape \\\\x00, which no name can hold"),
    ("/memories/notes/\\x2e\\x2e/x.md", "leaves the memory root"),
])
def test_a_backslash_is_an_escape_or_refused(make_tree, path, message):
    root = make_tree(BASE)
    with pytest.raises((InvalidArgument, PathOutsideRoot), match=re.escape(message).replace("\\\\\\\\", "\\\\")):
        Editor(root).run("view", path=path)


def test_a_new_name_cannot_be_made_with_an_escaped_odd_character(make_tree):
    root = make_tree(BASE)
    with pytest.raises(InvalidArgument, match="has U\\+000A"):
        Editor(root).run("create", path="/memories/notes/a\\x0ab.md", file_text="# x\n")
    with pytest.raises(InvalidArgument, match="has a backslash in the new name"):
        Editor(root).run("create", path="/memories/notes/a\\x5cb.md", file_text="# x\n")
    assert sorted(p.name for p in (root / "notes").iterdir()) == ["MEMORY.md", "a.md"]


def test_a_read_of_a_lookalike_name_reads_its_one_file(make_tree, tmp_path):
    """memory_read (contract.read) resolves a retyped name as the memory tool does; the read gate decides on it."""
    from memsearch.memory.contract import read

    root = make_tree(BASE | {f"{NFD}/MEMORY.md": "# Cafe\n", f"{NFD}/menu.md": "# Menu\n\nespresso\n",
                             "notes/A\u030a.md": "# one\n", "notes/\u212b.md": "# two\n"})
    result = read(root, f"{NFC}/menu.md")
    assert result.path == f"{NFD}/menu.md" and "espresso" in result.text
    with pytest.raises(MemoryFileNotFound):
        read(root, "notes/\u00c5.md")  # two look-alikes: neither is chosen
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "menu.md").write_text("# secret\n")
    (root / "notes" / "bistro\u0301").symlink_to(outside)  # a folder link is never passed, look-alike or not
    with pytest.raises(MemoryFileNotFound):
        read(root, "notes/bistr\u00f3/menu.md")


def test_a_listing_of_a_lookalike_folder_name_lists_its_one_folder(make_tree):
    """memory_list (contract.list_dir) resolves a retyped folder name as memory_read does for files (NFD on disk,
    as macOS writes it; NFC as an agent types it), through the same look-alike rule; the tree decides on it."""
    from memsearch.harness.tools import ToolBox
    from memsearch.memory.contract import list_dir

    root = make_tree(BASE | {f"{NFD}/MEMORY.md": "# Cafe\n\nThe cafe.\n", f"{NFD}/menu.md": "# Menu\n\nespresso\n",
                             f"notes/{NFD}/MEMORY.md": "# Deep\n\nd\n", "notes/A\u030a/MEMORY.md": "# one\n",
                             "notes/\u212b/MEMORY.md": "# two\n"})
    listing = list_dir(root, NFC)
    assert listing.path == NFD and listing.title == "Cafe" and f"{NFD}/menu.md" in [f.path for f in listing.files]
    assert list_dir(root, f"notes/{NFC}").path == f"notes/{NFD}"
    assert list_dir(root, f"{NFC}/").path == NFD
    assert ToolBox(root).call("memory_list", {"path": NFC})["path"] == NFD  # the tool a model calls
    with pytest.raises(MemoryFileNotFound):
        list_dir(root, "notes/\u00c5")  # two look-alikes: neither is chosen
    with pytest.raises(MemoryFileNotFound):
        list_dir(root, "tea")  # no look-alike: the error as before
