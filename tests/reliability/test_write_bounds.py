"""Bounds on writes: a str_replace refusal over a huge number of matches, path length and depth, long names."""

from __future__ import annotations

import pytest

from memsearch.errors import InvalidArgument, NoUniqueMatch
from memsearch.memory.editor import Editor
from memsearch.memory.matching import MATCH_LINES_SHOWN
from memsearch.tools import ToolBox
from tests.conftest import build


def test_a_refusal_over_350k_matches_is_bounded(tmp_path):
    """1 MB holding old_str 350,000 times: the refusal names a bounded number of lines and comes back
    after a few linear scans (it held the write lock for minutes when every line was counted from the top)."""
    text = "x\n" * 350_000 + "tail\n"  # 1.05 MB, "x" on 350,000 lines
    root = build(tmp_path / "memory", {"MEMORY.md": "# Root\n", "notes/MEMORY.md": "# Notes\n", "notes/big.md": text})
    with pytest.raises(NoUniqueMatch) as err:
        Editor(root).str_replace("/memories/notes/big.md", "x", "y")
    message = str(err.value)
    assert "occurs at least 350,000 times" in message
    assert err.value.lines == tuple(range(1, MATCH_LINES_SHOWN + 1))
    assert len(message) < 500
    assert (root / "notes" / "big.md").read_text() == text  # nothing written


def test_a_few_matches_are_all_named(tmp_path):
    root = build(tmp_path / "memory", {"MEMORY.md": "# Root\n", "notes/MEMORY.md": "# Notes\n",
                                       "notes/a.md": "one\nalpha\ntwo\nalpha\nalpha beta alpha\n"})
    message = r"occurs 4 times in /memories/notes/a.md, in lines 2, 4, 5 \(2 times\)\. Include"
    with pytest.raises(NoUniqueMatch, match=message) as err:
        Editor(root).str_replace("/memories/notes/a.md", "alpha", "x")
    assert err.value.lines == (2, 4, 5)


@pytest.mark.parametrize("stem", ["n" * 252, "é" * 126, "n" + "é" * 125 + "n"], ids=["ascii", "two-byte", "odd-cut"])
def test_a_legal_255_byte_name_is_written(tmp_path, stem):
    """The longest legal name: its hidden temporary file (name + random suffix) used to go over the limit."""
    name = stem + ".md"
    assert len(name.encode()) <= 255
    root = build(tmp_path / "memory", {"MEMORY.md": "# Root\n", "notes/MEMORY.md": "# Notes\n"})
    editor = Editor(root)
    editor.create(f"/memories/notes/{name}", "# Long\nfirst\n")
    editor.str_replace(f"/memories/notes/{name}", "first", "second")
    assert (root / "notes" / name).read_text() == "# Long\nsecond\n"
    assert sorted(p.name for p in (root / "notes").iterdir()) == sorted(["MEMORY.md", name])  # no temporary left


def _root(tmp_path):
    return build(tmp_path / "memory", {"MEMORY.md": "# Root\n", "notes/MEMORY.md": "# Notes\n"})


def _all(root):
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def test_a_path_300_folders_deep_is_refused_whole(tmp_path):
    """It made 300 folders and 300 MEMORY.md files in 37 s, with a 142k-token answer."""
    root = _root(tmp_path)
    before = _all(root)
    deep = "/".join(f"d{i}" for i in range(300))
    with pytest.raises(InvalidArgument, match=r"300 folders deep, over the limit of 32 \(MEMSEARCH_MAX_DEPTH\)"):
        Editor(root).create(f"/memories/{deep}/x.md", "# x\n")
    result = ToolBox(root, writable=True).dispatch("memory", {"command": "create", "path": f"/memories/{deep}/x.md",
                                                             "file_text": "# x\n"})
    assert "MEMSEARCH_MAX_DEPTH" in result["error"]["message"] and len(result["error"]["message"]) < 600
    assert _all(root) == before  # nothing made


def test_new_folders_per_write_are_bounded(tmp_path, monkeypatch):
    root = _root(tmp_path)
    editor = Editor(root)
    with pytest.raises(InvalidArgument, match=r"needs 9 new folders, over the limit of 8 .*MEMSEARCH_MAX_NEW_DIRS"):
        editor.create("/memories/notes/" + "/".join("abcdefghi") + "/x.md", "# x\n")
    assert not (root / "notes" / "a").exists()
    editor.create("/memories/notes/" + "/".join("abcdefgh") + "/x.md", "# x\n")  # 8 new folders: allowed
    editor.create("/memories/notes/" + "/".join("abcdefgh") + "/i/j/k/y.md", "# y\n")  # 3 more under existing ones
    monkeypatch.setenv("MEMSEARCH_MAX_NEW_DIRS", "1")
    with pytest.raises(InvalidArgument, match="needs 2 new folders"):
        editor.rename("/memories/notes/a/b/c/d/e/f/g/h/x.md", "/memories/other/deep/x.md")
    assert (root / "notes/a/b/c/d/e/f/g/h/x.md").exists()


def test_the_readme_limit_of_4096_bytes_holds_for_writes(tmp_path):
    """docs/reliability.md promises paths over 4,096 bytes are refused; a 4,204-byte path was accepted."""
    root = _root(tmp_path)
    path = "/memories/" + "/".join(["n" * 200] * 20) + "/x.md"  # 4,024 bytes of folders: under the depth limit
    path = path.replace("/x.md", "/" + "y" * 170 + ".md")
    assert len(path.removeprefix("/memories/").encode()) > 4096
    before = _all(root)
    with pytest.raises(InvalidArgument, match=r"over the 4,096-byte limit"):
        Editor(root).create(path, "# x\n")
    with pytest.raises(InvalidArgument, match="longer than 255 bytes"):
        Editor(root).create("/memories/notes/" + "z" * 256 + ".md", "# x\n")
    assert _all(root) == before
