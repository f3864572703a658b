"""A damaged index and a full disk, end to end with the real model and the real LanceDB.

Every kind of damage gives a typed error naming ``--rebuild`` (or answers), and ``memsearch
index`` repairs it; a full disk leaves searching working, ends writes in one clear line, and
the next sync completes once space is back.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from memsearch.engine.index import MemoryIndex
from memsearch.errors import IndexDamaged, MemsearchError, StorageFull
from tests.conftest import build, run_cli

FILES = {"MEMORY.md": "# Root\n", "notes/MEMORY.md": "# Notes\nwhat the notes hold\n"} | {
    f"notes/n{i}.md": f"# Note {i}\n" + f"the heron flew over pond {i} at dawn\n" * 12 for i in range(8)}


def _first(directory, pattern="*"):
    """The newest file: a first build writes its text rows first and replaces them, so older data files may
    hold only rows deleted since, whose damage no search would meet."""
    found = sorted((p for p in directory.glob(pattern) if p.is_file()), key=lambda p: p.stat().st_mtime_ns)
    return found[-1]


def _flip_bytes(path):
    data = bytearray(path.read_bytes())
    for i in range(64, len(data) - 64, 61):
        data[i] ^= 0x5A
    path.write_bytes(bytes(data))


DAMAGE = {
    "index.json a list": lambda db: (db / "index.json").write_text("[1, 2]"),
    "index.json unknown chunker field": lambda db: (db / "index.json").write_text(
        json.dumps(
            json.loads((db / "index.json").read_text())
            | {"chunker": {"max_tokens": 128, "overlap_lines": 2, "bogus": 1}}
        )
    ),
    "index.json garbage": lambda db: (db / "index.json").write_bytes(os.urandom(64)),
    "index.json empty": lambda db: (db / "index.json").write_text(""),
    "chunks data truncated": lambda db: _first(db / "chunks.lance" / "data").write_bytes(
        _first(db / "chunks.lance" / "data").read_bytes()[:100]
    ),
    "chunks data deleted": lambda db: [p.unlink() for p in (db / "chunks.lance" / "data").iterdir()],
    "chunks data garbage": lambda db: _flip_bytes(_first(db / "chunks.lance" / "data")),
    "every chunks manifest deleted": lambda db: [p.unlink() for p in (db / "chunks.lance" / "_versions").iterdir()],
    "_indices deleted": lambda db: shutil.rmtree(db / "chunks.lance" / "_indices"),
    "one _indices file deleted": lambda db: sorted(
        p for p in (db / "chunks.lance" / "_indices").rglob("*") if p.is_file()
    )[-1].unlink(),
    "files table garbage": lambda db: [
        p.write_bytes(os.urandom(p.stat().st_size)) for p in (db / "files.lance" / "data").iterdir()
    ],
    "files table deleted": lambda db: shutil.rmtree(db / "files.lance"),
    "writer.lock a directory": lambda db: (
        (db / "writer.lock").unlink(missing_ok=True),
        (db / "writer.lock").mkdir(),
        (db / "writer.lock" / "junk").write_text("x"),
    ),
    "writer.json garbage": lambda db: (db / "writer.json").write_bytes(b"\xff\x00garbage"),
}


@pytest.fixture(scope="module")
def clean(tmp_path_factory, real_embedder):
    base = tmp_path_factory.mktemp("faults")
    root = build(base / "memory", FILES)
    db = base / "clean-db"
    index = MemoryIndex(root, db=db, embedder=real_embedder)
    index.sync()
    return root, db, index.store.chunks().count_rows()


@pytest.mark.parametrize("kind", list(DAMAGE))
def test_damaged_index(kind, clean, tmp_path, real_embedder, capsys):
    root, clean_db, rows = clean
    db = tmp_path / "db"
    shutil.copytree(clean_db, db)
    DAMAGE[kind](db)
    try:  # a search either answers or says how to fix it
        MemoryIndex(root, db=db, embedder=real_embedder).search("heron at dawn", mode="hybrid")
    except MemsearchError as exc:
        assert "--rebuild" in str(exc) and "Traceback" not in str(exc)
    code, out, err = run_cli(["index", str(root), "--db", str(db)], capsys)
    assert code == 0, err
    assert "Traceback" not in err
    index = MemoryIndex(root, db=db, embedder=real_embedder)
    assert index.check() is None
    assert index.store.chunks().count_rows() == rows
    assert index.search("heron at dawn", k=3)[0].path.startswith("notes/n")


@pytest.mark.slow
def test_rebuild_over_a_damaged_lock(clean, tmp_path, capsys):
    root, clean_db, _ = clean
    db = tmp_path / "db"
    shutil.copytree(clean_db, db)
    DAMAGE["writer.lock a directory"](db)
    code, _, err = run_cli(["index", str(root), "--db", str(db), "--rebuild"], capsys)
    assert code == 0 and "Traceback" not in err


def test_repair_is_reported(clean, tmp_path, capsys):
    root, clean_db, _ = clean
    db = tmp_path / "db"
    shutil.copytree(clean_db, db)
    DAMAGE["chunks data garbage"](db)
    code, _, err = run_cli(["index", str(root), "--db", str(db)], capsys)
    assert code == 0 and "rebuilt" in err


@pytest.fixture
def small_disk(tmp_path):
    """A 2 MB tmpfs for the index (needs root and mount permission: else skipped with the reason)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    result = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)], capture_output=True, text=True
    )
    if result.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({result.stderr.strip()[:80]}); the file-size-limit variant covers it")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _fill(directory) -> os.PathLike:
    filler = directory / "filler"
    with open(filler, "wb") as f:
        try:
            while True:
                f.write(b"\0" * 65536)
                f.flush()
        except OSError:
            pass
    return filler


@pytest.mark.slow
def test_disk_full(small_disk, tmp_path, real_embedder, capsys):
    root = build(tmp_path / "memory", FILES)
    db = small_disk / "db"
    index = MemoryIndex(root, db=db, embedder=real_embedder)
    index.sync()
    before = [h.path for h in index.search("heron at dawn", k=3)]
    filler = _fill(small_disk)
    (root / "notes" / "new.md").write_text("# New\nthe kingfisher dived for a silver minnow\n" * 40)
    with pytest.raises(StorageFull) as info:
        index.sync()
    assert "full" in str(info.value) and "\n" not in str(info.value)
    for mode in ("hybrid", "vector", "keyword"):  # searching keeps working
        assert [
            h.path for h in MemoryIndex(root, db=db, embedder=real_embedder).search("heron at dawn", k=3, mode=mode)
        ]
    assert [h.path for h in index.search("heron at dawn", k=3)] == before
    code, _, err = run_cli(["index", str(root), "--db", str(db)], capsys)  # a write: one clear line
    assert code == 2 and err.startswith("error:") and "full" in err and "Traceback" not in err
    code, out, err = run_cli(["search", str(root), "heron at dawn", "--db", str(db), "-k", "2"], capsys)  # syncs first
    assert code == 0 and "notes/n" in out and "Traceback" not in err
    os.unlink(filler)  # space is back: the next sync completes
    report = MemoryIndex(root, db=db, embedder=real_embedder).sync()
    assert "notes/new.md" in report.changed_paths
    hits = MemoryIndex(root, db=db, embedder=real_embedder).search("kingfisher minnow", k=1)
    assert hits[0].path == "notes/new.md"
    assert MemoryIndex(root, db=db, embedder=real_embedder).check() is None


def test_damaged_meta_is_a_typed_error_for_readers(clean, tmp_path, real_embedder):
    root, clean_db, _ = clean
    db = tmp_path / "db"
    shutil.copytree(clean_db, db)
    DAMAGE["index.json a list"](db)
    with pytest.raises(IndexDamaged, match="--rebuild"):
        MemoryIndex(root, db=db, embedder=real_embedder)
