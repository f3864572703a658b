"""New memory files are 0600 and new directories 0700 whatever the umask, unless the root is shared for
reading (group or others may read it, nobody else may write it): then its read and search bits pass on."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from memsearch.memory.editor import Editor
from memsearch.memory.files import private_modes

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX mode bits")


def mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def write_some(root: Path) -> list[Path]:
    """A create into new folders (stubs made), a rename into another new folder: what each write creates."""
    editor = Editor(root)
    editor.run("create", path="/memories/people/team/bo.md", file_text="# Bo\n")
    editor.run("create", path="/memories/today.md", file_text="# Today\n")
    editor.run("rename", old_path="/memories/people/team/bo.md", new_path="/memories/archive/bo.md")
    return [root / p for p in ("MEMORY.md", "today.md", "people/MEMORY.md", "people/team/MEMORY.md", "archive/MEMORY.md",
                               "archive/bo.md", "people", "people/team", "archive")]


@pytest.fixture
def umask():
    old = os.umask(0)
    yield os.umask
    os.umask(old)


@pytest.mark.parametrize("umask_value", [0o000, 0o022, 0o077])
@pytest.mark.parametrize("root_mode, file_mode, dir_mode", [
    (0o700, 0o600, 0o700),  # a private root: private notes
    (0o777, 0o600, 0o700),  # anyone may write the root (umask 0): no deliberate share, private
    (0o755, 0o644, 0o755),  # shared for reading: new notes readable alike, never writable by others
    (0o750, 0o640, 0o750),  # shared with the group only
    (0o775, 0o600, 0o700),  # the group may write it: not a read-only share, private
])
def test_new_files_and_directories_get_the_private_mode_whatever_the_umask(tmp_path, umask, umask_value, root_mode,
                                                                          file_mode, dir_mode):
    umask(umask_value)
    root = tmp_path / "memory"
    root.mkdir()
    os.chmod(root, root_mode)
    for path in write_some(root):
        assert mode(path) == (dir_mode if path.is_dir() else file_mode), path
    assert private_modes(root_mode) == (file_mode, dir_mode)


def test_an_existing_file_keeps_its_mode(tmp_path, umask):
    umask(0)
    root = tmp_path / "memory"
    root.mkdir(mode=0o700)
    os.chmod(root, 0o700)
    (root / "MEMORY.md").write_text("# Memory\n")
    (root / "notes").mkdir()
    (root / "notes" / "MEMORY.md").write_text("# Notes\n")
    (root / "notes" / "a.md").write_text("alpha\n")
    os.chmod(root / "notes" / "a.md", 0o664)
    editor = Editor(root)
    editor.run("str_replace", path="/memories/notes/a.md", old_str="alpha", new_str="beta")
    editor.run("insert", path="/memories/notes/a.md", insert_line=1, insert_text="gamma")
    assert mode(root / "notes" / "a.md") == 0o664 and (root / "notes" / "a.md").read_text() == "beta\ngamma\n"
