"""Silent corruption: bytes overwritten inside a chunks data file leave a table that reads through.

``memsearch check`` verifies every row against its file, its stored hashes and its vector's length,
finds such damage, and ``--repair`` (or ``memsearch index --check``) re-indexes the damaged files.
The real LanceDB throughout; the CLI cases with the real model.
"""

from __future__ import annotations

import random
import shutil

import numpy as np
import pytest

from memsearch.engine.check import check_index, repair_index
from memsearch.engine.embed.embedder import HashEmbedder
from memsearch.engine.index import MemoryIndex
from tests.conftest import build, run_cli

FILES = {"MEMORY.md": "# Root\n", "notes/MEMORY.md": "# Notes\nwhat the notes hold\n"} | {
    f"notes/n{i}.md": f"# Note {i}\n" + f"the heron flew over pond {i} at dawn\n" * 12 for i in range(8)}


def _data_files(db):
    """Newest first: a first build writes its text rows first (zero vectors) and replaces them, so the same
    text also sits in an older file of rows deleted since, which damage must not hit."""
    files = [p for p in (db / "chunks.lance" / "data").iterdir() if p.is_file()]
    return sorted(files, key=lambda p: p.stat().st_mtime_ns, reverse=True)


def _overwrite_in_data(db, old: bytes, new: bytes) -> None:
    """Write ``new`` over the first ``old`` found inside a chunks data file (the table still reads)."""
    for path in _data_files(db):
        data = path.read_bytes()
        at = data.find(old)
        if at >= 0:
            path.write_bytes(data[:at] + new + data[at + len(new):])
            return
    raise AssertionError("the bytes to damage are in no data file")


def damage_vector(index, db) -> str:
    """Random bytes over 16 bytes in the middle of one stored vector; the damaged row's path."""
    batch = next(iter(index.store.scan_rows(["path", "vector"])))
    vector = np.asarray(batch.column("vector")[0].as_py(), dtype=np.float32)
    middle = vector.tobytes()[64:80]
    _overwrite_in_data(db, middle, random.Random(24).randbytes(16))
    return batch.column("path")[0].as_py()


def damage_text(db) -> None:
    """Same-length bytes over a chunk's text: still valid UTF-8, still readable, now wrong."""
    _overwrite_in_data(db, b"heron flew over pond 3", b"HERON FLEW OVER POND 3")


@pytest.fixture
def indexed(tmp_path):
    root = build(tmp_path / "memory", FILES)
    db = tmp_path / "db"
    MemoryIndex(root, db=db, embedder=HashEmbedder()).sync()
    return root, db


def test_check_finds_and_repairs_a_damaged_vector(indexed):
    root, db = indexed
    index = MemoryIndex(root, db=db, embedder=HashEmbedder())
    assert check_index(index).ok
    path = damage_vector(index, db)
    index = MemoryIndex(root, db=db, embedder=HashEmbedder())
    assert index.check() is None  # reading the tables through finds nothing: the damage is silent
    report = check_index(index)
    assert not report.ok and report.damaged_files == (path,)
    assert report.findings[0].kind == "vector"
    repaired = repair_index(index, report)
    assert repaired.ok and repaired.repaired.startswith("re-indexed 1 damaged file")
    assert check_index(MemoryIndex(root, db=db, embedder=HashEmbedder())).ok


def test_check_finds_and_repairs_damaged_text(indexed):
    root, db = indexed
    damage_text(db)
    index = MemoryIndex(root, db=db, embedder=HashEmbedder())
    report = check_index(index)
    assert report.damaged_files == ("notes/n3.md",)
    assert {f.kind for f in report.findings} == {"row"}
    assert repair_index(index, report).ok
    hits = MemoryIndex(root, db=db, embedder=HashEmbedder()).search("heron flew over pond 3", mode="keyword", k=1)
    assert "the heron flew over pond 3" in hits[0].text


def test_a_changed_file_is_stale_not_damage(indexed):
    root, db = indexed
    (root / "notes" / "n1.md").write_text("# Note 1\nrewritten since\n")
    report = check_index(MemoryIndex(root, db=db, embedder=HashEmbedder()))
    assert report.ok and report.stale == ("notes/n1.md",)


@pytest.mark.slow
def test_memsearch_check_end_to_end(tmp_path, capsys):
    """The real model: a vector damaged in the data file is found by `memsearch check` (not by `index`),
    repaired by `--repair`; `index --check` repairs damaged text; no library warning reaches stderr."""
    root = build(tmp_path / "memory", FILES)
    db = tmp_path / "db"
    code, _, err = run_cli(["index", str(root), "--db", str(db)], capsys)
    assert code == 0, err
    clean = tmp_path / "clean"
    shutil.copytree(db, clean)
    path = damage_vector(MemoryIndex(root, db=db), db)
    code, out, err = run_cli(["index", str(root), "--db", str(db)], capsys)
    assert code == 0 and "rebuilt" not in err  # reading the tables through finds nothing
    code, out, err = run_cli(["search", str(root), "heron at dawn", "--db", str(db), "--mode", "vector"], capsys)
    assert "Warning" not in err, err
    code, out, err = run_cli(["check", str(root), "--db", str(db)], capsys)
    assert code == 1 and path in err and "--repair" in out and "Warning" not in err
    code, out, err = run_cli(["check", str(root), "--db", str(db), "--repair"], capsys)
    assert code == 0 and "re-indexed 1 damaged file" in err and ": ok" in out
    code, out, err = run_cli(["check", str(root), "--db", str(db)], capsys)
    assert code == 0 and ": ok" in out

    shutil.rmtree(db)
    shutil.copytree(clean, db)
    damage_text(db)
    code, out, err = run_cli(["index", str(root), "--db", str(db), "--check"], capsys)
    assert code == 0 and "notes/n3.md" in err and "re-indexed 1 damaged file" in err
    code, out, err = run_cli(["check", str(root), "--db", str(db), "--json"], capsys)
    assert code == 0 and '"ok": true' in out
