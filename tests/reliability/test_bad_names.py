"""File names that are not valid UTF-8 (bytes such as ``\\xff``, shown by Python as lone surrogates).

Decision: such a name is never memory. The tree walk skips it (a directory with all below it), the
validator warns ``bad-name`` with the path in ``\\xNN`` escapes, ``memsearch index`` says it skipped
it, reads and ``ls`` refuse or leave it out, and the write tool refuses to create one. The rest of
the root indexes and searches as before: one such name no longer stops search for the whole root.
"""

from __future__ import annotations

import os

import pytest

from memsearch.engine.embed.embedder import HashEmbedder
from memsearch.engine.index import MemoryIndex
from memsearch.errors import InvalidArgument
from memsearch.harness.mcp import _memory_resources
from memsearch.memory.contract import list_dir, read
from memsearch.memory.editor import Editor
from memsearch.memory.tree import scan
from memsearch.memory.validator import validate
from memsearch.tools import ToolBox
from tests.conftest import build, run_cli

FILES = {"MEMORY.md": "# Root\n", "notes/MEMORY.md": "# Notes\nwhat the notes hold\n",
         "notes/good.md": "# Good\nthe heron flew over the pond at dawn\n"}


def _bad_root(tmp_path):
    root = build(tmp_path / "memory", FILES)
    notes = os.fsencode(root / "notes")
    with open(notes + b"/\xff.md", "wb") as f:  # bytes from anywhere else (a shell, an unzip)
        f.write(b"# Bad\nthe heron hides in the reeds\n")
    os.mkdir(notes + b"/\xfe-dir")
    with open(notes + b"/\xfe-dir/x.md", "wb") as f:
        f.write(b"# Below a bad directory\nheron\n")
    with open(notes + b"/\xfe-dir/MEMORY.md", "wb") as f:
        f.write(b"# Bad dir\n")
    return root


def test_every_layer_agrees_on_a_bad_name(tmp_path):
    root = _bad_root(tmp_path)
    tree = scan(root)
    assert tree.external_files == ("notes/MEMORY.md", "notes/good.md")
    assert tree.unnamed == ("notes/\udcfe-dir", "notes/\udcff.md")
    report = validate(root)
    assert report.valid
    bad = [w for w in report.warnings if w.code == "bad-name"]
    assert [w.path for w in bad] == ["notes/\\xfe-dir", "notes/\\xff.md"]
    report.to_dict()["warnings"][0]["message"].encode("utf-8")  # printable: no surrogate reaches JSON
    assert [f.path for f in list_dir(root, "notes").files] == ["notes/MEMORY.md", "notes/good.md"]
    with pytest.raises(InvalidArgument, match="not valid UTF-8"):
        read(root, "notes/\udcff.md")
    listing = Editor(root).view("/memories/notes").output
    assert "good.md" in listing and "\udcff" not in listing and "\udcfe" not in listing
    assert all(r.name.encode("utf-8") for r in _memory_resources(ToolBox(root)))


def test_index_and_search_skip_a_bad_name(tmp_path):
    root = _bad_root(tmp_path)
    index = MemoryIndex(root, db=tmp_path / "db", embedder=HashEmbedder())
    report = index.sync()
    assert report.bad_names == ("notes/\\xfe-dir", "notes/\\xff.md")
    assert report.files_added == 2
    hits = index.search("heron pond", k=5)
    assert {h.path for h in hits} == {"notes/good.md", "notes/MEMORY.md"}  # the whole root answers, nothing else
    assert index.check() is None
    index = MemoryIndex(root, db=tmp_path / "db", embedder=HashEmbedder(), rebuild=True)  # what --rebuild does
    assert index.sync().files_added == 2
    assert index.search("heron pond", k=1)[0].path == "notes/good.md"


@pytest.mark.parametrize("path", ["/memories/notes/\udc80.md", "notes/\udcff.md", "/memories/\udcfe-dir/x.md",
                                  "/memories/notes/\ud800.md"])
def test_the_write_tool_refuses_a_bad_name(tmp_path, path):
    root = build(tmp_path / "memory", FILES)
    before = sorted(os.listdir(root)), sorted(os.listdir(root / "notes"))
    shown = path if path.startswith("/memories/") else "/memories/" + path  # the tool takes /memories paths only
    result = ToolBox(root, writable=True).dispatch("memory", {"command": "create", "path": shown, "file_text": "# x\n"})
    assert "not valid UTF-8" in result["error"]["message"]
    with pytest.raises(InvalidArgument):
        Editor(root).create(path, "# x\n")
    assert (sorted(os.listdir(root)), sorted(os.listdir(root / "notes"))) == before  # nothing was created


@pytest.mark.slow
def test_cli_end_to_end_with_a_bad_name(tmp_path, capsys):
    """The real model and LanceDB: index, search, rebuild, validate, ls and read from the command line."""
    root = _bad_root(tmp_path)
    db = str(tmp_path / "db")
    code, out, err = run_cli(["index", str(root), "--db", db], capsys)
    assert code == 0, err
    assert "notes/\\xff.md" in err and "not valid UTF-8" in err and "damaged" not in err
    code, out, err = run_cli(["search", str(root), "heron at dawn", "--db", db], capsys)
    assert code == 0, err
    assert "notes/good.md" in out
    code, out, err = run_cli(["index", str(root), "--db", db, "--rebuild"], capsys)
    assert code == 0 and "damaged" not in err
    code, out, err = run_cli(["validate", str(root)], capsys)
    assert code == 0 and "bad-name" in out and "notes/\\xff.md" in out
    code, out, err = run_cli(["ls", str(root), "notes"], capsys)
    assert code == 0 and "good.md" in out and "\\xff" not in out
    code, out, err = run_cli(["read", str(root), "notes/\udcff.md"], capsys)
    assert code == 2 and "not valid UTF-8" in err and "Traceback" not in err
