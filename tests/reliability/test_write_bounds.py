"""Bounds on writes: a str_replace refusal over a huge number of matches, path length and depth, long names."""

from __future__ import annotations

import pytest

from memsearch.errors import NoUniqueMatch
from memsearch.memory.editor import MATCH_LINES_SHOWN, Editor

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
    with pytest.raises(NoUniqueMatch, match=r"occurs 4 times in /memories/notes/a.md, in lines 2, 4, 5, 5\. Include") as err:
        Editor(root).str_replace("/memories/notes/a.md", "alpha", "x")
    assert err.value.lines == (2, 4, 5, 5)


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
