"""A hostile tree: permission denied (as an unprivileged user), link loops, a link to /, churn
while listing, a read-only root without --db, 1,100 nested directories."""

from __future__ import annotations

import os
import pickle
import shutil
import tempfile
import threading
import time
from pathlib import Path

import pytest

from memsearch.engine.embed.embedder import HashEmbedder
from memsearch.engine.index import MemoryIndex
from memsearch.errors import MemoryUnreadable, MemsearchError, StorageFull
from memsearch.memory.contract import list_dir, load_core, read
from memsearch.memory.tree import scan
from memsearch.memory.validator import validate
from tests.conftest import build

NOBODY = 65534


def as_nobody(fn):
    """Run ``fn()`` in a forked child as uid/gid 65534 (memsearch is imported already): its result or exception."""
    if os.geteuid() != 0:
        return ("ok", fn())  # already unprivileged
    import lancedb  # noqa: F401 - imported before the fork: the child cannot read the venv
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: drop privileges, run, report, exit without cleanup
        try:
            os.close(reader)
            os.setgroups([])
            os.setresgid(NOBODY, NOBODY, NOBODY)
            os.setresuid(NOBODY, NOBODY, NOBODY)
            try:
                outcome = ("ok", fn())
            except BaseException as exc:  # noqa: BLE001 - reported to the parent
                outcome = ("raised", type(exc).__name__, isinstance(exc, MemsearchError), str(exc))
            os.write(writer, pickle.dumps(outcome))
        finally:
            os._exit(0)
    os.close(writer)
    data = b""
    while chunk := os.read(reader, 65536):
        data += chunk
    os.close(reader)
    os.waitpid(pid, 0)
    return pickle.loads(data)


@pytest.fixture
def open_tmp():
    """A temporary directory the unprivileged user can reach (pytest's own is owner-only)."""
    path = Path(tempfile.mkdtemp(prefix="memsearch-reliability-"))
    os.chmod(path, 0o755)
    yield path
    for sub in [path, *path.rglob("*")]:
        if sub.is_dir() and not sub.is_symlink():
            os.chmod(sub, 0o755)
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def locked_tree(open_tmp):
    tmp_path = open_tmp
    root = build(tmp_path / "memory", {
        "MEMORY.md": "# Root\n", "CORE.md": "# secret core\n",
        "notes/MEMORY.md": "# Notes\n", "notes/open.md": "# Open\nreadable\n", "notes/closed.md": "# Closed\nno\n",
        "private/MEMORY.md": "# Private\n", "private/x.md": "# X\n",
    })
    os.chmod(tmp_path, 0o755)
    for path in root.rglob("*"):
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
    os.chmod(root, 0o755)
    os.chmod(root / "notes" / "closed.md", 0o000)
    os.chmod(root / "CORE.md", 0o000)
    os.chmod(root / "private", 0o000)
    yield root
    os.chmod(root / "private", 0o755)


CASES = {
    "ls root": lambda r: list_dir(r, ".").to_dict(),
    "ls notes": lambda r: list_dir(r, "notes").to_dict(),
    "ls private": lambda r: list_dir(r, "private").to_dict(),
    "read closed": lambda r: read(r, "notes/closed.md").text,
    "read open": lambda r: read(r, "notes/open.md").text,
    "read in private": lambda r: read(r, "private/x.md").text,
    "core": lambda r: load_core(r).to_dict(),
    "scan": lambda r: scan(r).unreadable,
    "validate": lambda r: [w.code for w in validate(r).warnings],
}


@pytest.mark.parametrize("case", list(CASES))
def test_permission_denied_as_unprivileged_user(locked_tree, case):
    outcome = as_nobody(lambda: CASES[case](locked_tree))
    if outcome[0] == "raised":
        assert outcome[2], f"{case}: untyped {outcome[1]}: {outcome[3]}"  # a typed error, never a traceback
        assert str(locked_tree) not in outcome[3]
        if case == "read closed":
            assert outcome[1] == MemoryUnreadable.__name__
        return
    value = outcome[1]
    if case == "read open":
        assert "readable" in value
    if case == "core":
        assert value["unreadable"] == ["CORE.md"]
    if case == "ls notes":
        assert list(value["unreadable"]) == ["notes/closed.md"]
    if case == "scan":
        assert [d for d, _ in value] == ["private"]
    if case == "validate":
        assert value.count("unreadable") >= 2
    assert case not in ("read closed",), "a file without read permission was read"


def test_read_only_root_without_db(open_tmp):
    tmp_path = open_tmp
    root = build(tmp_path / "memory", {"MEMORY.md": "# Root\n", "notes/MEMORY.md": "# N\n", "notes/a.md": "# A\nhello\n"})
    for path in [root, *root.rglob("*")]:
        os.chmod(path, 0o555 if path.is_dir() else 0o444)
    os.chmod(tmp_path, 0o755)
    os.environ.pop("MEMSEARCH_DB", None)
    outcome = as_nobody(lambda: MemoryIndex(root, embedder=HashEmbedder()).sync().files_added)
    assert outcome[0] == "raised" and outcome[1] == StorageFull.__name__, outcome
    assert "--db" in outcome[3]


def test_links_loops_and_a_link_to_slash(tmp_path):
    root = build(tmp_path / "memory", {"MEMORY.md": "# Root\n", "notes/MEMORY.md": "# N\n", "notes/a.md": "# A\nhello\n"})
    os.symlink("/", root / "notes" / "slash")
    os.symlink("..", root / "notes" / "up")
    os.symlink(root / "notes", root / "notes" / "self")
    os.symlink("l2.md", root / "notes" / "l1.md")
    os.symlink("l1.md", root / "notes" / "l2.md")
    tree = scan(root)
    assert tree.external_files == ("notes/MEMORY.md", "notes/a.md")
    assert set(tree.skipped_links) == {"notes/slash", "notes/up", "notes/self", "notes/l1.md", "notes/l2.md"}
    for path in ("notes/l1.md", "notes/slash/etc/passwd", "notes/self/a.md", "notes/up/notes/a.md"):
        with pytest.raises(MemsearchError):
            read(root, path)
    index = MemoryIndex(root, db=tmp_path / "db", embedder=HashEmbedder())
    assert index.sync().files_added == 2


@pytest.mark.slow
def test_1100_nested_directories_are_indexed(tmp_path):
    root = build(tmp_path / "memory", {"MEMORY.md": "# Root\n"})
    deep = root
    for _ in range(1100):
        deep = deep / "d"
        deep.mkdir()
        (deep / "MEMORY.md").write_text("# level\n")
    (deep / "bottom.md").write_text("# Bottom\nthe zebra lives at the bottom\n")
    tree = scan(root)
    rel = "/".join(["d"] * 1100) + "/bottom.md"
    assert rel in tree.external_files and len(tree.memory_dirs) == 1100
    assert "zebra" in read(root, rel).text
    try:
        index = MemoryIndex(root, db=tmp_path / "db", embedder=HashEmbedder())
        index.sync()
        assert index.search("zebra bottom", k=1, mode="keyword")[0].path == rel
    finally:  # bottom up: a recursive rmtree (pytest's cleanup) would overflow the stack
        while deep != root:
            for child in deep.iterdir():
                child.unlink()
            deep.rmdir()
            deep = deep.parent


def test_churn_while_listing(tmp_path):
    root = build(tmp_path / "memory", {"MEMORY.md": "# Root\n", "notes/MEMORY.md": "# N\n"})
    stop = threading.Event()

    def churn() -> None:
        i = 0
        while not stop.is_set():
            for target in (root / f"core{i % 7}.md", root / "notes" / f"n{i % 7}.md", root / "notes" / f"sub{i % 3}" / "x.md"):
                try:
                    target.parent.mkdir(exist_ok=True)
                    target.write_text("# churn\n" * (i % 5 + 1))
                    if i % 2:
                        target.unlink()
                except OSError:
                    pass
            i += 1

    thread = threading.Thread(target=churn, daemon=True)
    thread.start()
    errors = []
    deadline = time.monotonic() + 1.5
    calls = 0
    try:
        while time.monotonic() < deadline:  # bounded: 1.5 s of listings
            for fn in (lambda: load_core(root), lambda: list_dir(root, "."), lambda: list_dir(root, "notes"), lambda: validate(root)):
                try:
                    fn()
                except MemsearchError:
                    pass  # a typed answer (e.g. a directory gone between walk and list) is fine
                except Exception as exc:  # noqa: BLE001
                    errors.append(repr(exc))
                calls += 1
    finally:
        stop.set()
        thread.join(5)
    assert calls > 10 and errors == []


def test_files_over_the_size_limit_are_left_out_and_said(tmp_path, monkeypatch, capsys):
    from memsearch.cli.app import main

    root = build(tmp_path / "memory", {"MEMORY.md": "# Root\n", "notes/MEMORY.md": "# N\n", "notes/small.md": "# S\nsmall otter\n",
                                       "notes/huge.md": "# Huge\n" + "a line of the huge walrus file\n" * 50_000})
    monkeypatch.setenv("MEMSEARCH_MAX_FILE_MB", "1")
    index = MemoryIndex(root, db=tmp_path / "db", embedder=HashEmbedder())
    report = index.sync()
    assert report.too_large == ("notes/huge.md",) and "notes/small.md" in report.changed_paths
    assert not index.search("walrus", k=3, mode="keyword")
    capsys.readouterr()
    assert main(["status", str(root), "--db", str(tmp_path / "db")]) in (0, None)
    shown = capsys.readouterr().out  # never indexed, so not a change pending for ever
    assert "pending: 0 changes" in shown and "left out: 1 file over the size limit" in shown, shown
    monkeypatch.setenv("MEMSEARCH_MAX_FILE_MB", "0")
    try:
        code = main(["index", str(root), "--db", str(tmp_path / "db2")])
    except SystemExit as exc:
        code = exc.code
    assert code == 2 and "MEMSEARCH_MAX_FILE_MB" in capsys.readouterr().err


def test_a_file_that_grows_past_the_size_limit_while_indexed_is_left_out(tmp_path, monkeypatch):
    """The plan takes a file's size from its stat; a file still being written may be far bigger when it is read (a
    17.5 MB note written in 20 parts was embedded up to the limit, minutes of work). The bytes read decide."""
    root = build(tmp_path / "memory", {"MEMORY.md": "# Root\n", "notes/MEMORY.md": "# N\n",
                                       "notes/small.md": "# S\nsmall otter\n", "notes/growing.md": "# Growing\nwalrus\n"})
    monkeypatch.setenv("MEMSEARCH_MAX_FILE_MB", "1")
    index = MemoryIndex(root, db=tmp_path / "db", embedder=HashEmbedder())

    def grow(phase, done, total, chunks):  # after the plan, before any file is read for its chunks
        if phase == "index" and done == 0:
            with open(root / "notes" / "growing.md", "a") as f:
                f.write("a line of the growing walrus file\n" * 40_000)  # 1.3 MB

    report = index.sync(progress=grow)
    assert report.too_large == ("notes/growing.md",) and "notes/growing.md" not in report.changed_paths
    assert "notes/small.md" in report.changed_paths
    assert not index.search("walrus", k=3, mode="keyword")  # neither its text rows nor its chunks
    again = index.sync()  # the next sync sees it over the limit from its stat
    assert again.too_large == ("notes/growing.md",) and not index.search("walrus", k=3, mode="keyword")
