"""A memory write never makes a name holding a control or invisible character (memory/placement.py): a newline in
a name split a line of the memory tool's directory view into a made-up entry, U+202E showed a name reversed, U+200B
made two names look alike. Names that already exist stay reachable, so such a file can still be viewed and deleted;
the joiners Persian words and emoji need are kept."""

from __future__ import annotations

import re

import pytest

from memsearch.errors import InvalidArgument
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
