"""The daemon on a hostile tree: a directory link to /, a link loop, an unreadable folder and
folders created while it runs; a daemon that dies says so in ``status``."""

from __future__ import annotations

import os
import threading
import time

import pytest

from memsearch.cli.watch import daemon_status
from memsearch.engine.embed.embedder import HashEmbedder
from memsearch.engine.index import MemoryIndex
from memsearch.service import watcher as watcher_module
from memsearch.service.watcher import watch, watch_dirs
from tests.conftest import build


def _until(predicate, timeout: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def test_daemon_survives_links_to_slash_and_loops_and_follows_new_folders(tmp_path):
    root = build(tmp_path / "memory", {"MEMORY.md": "# Root\n", "notes/MEMORY.md": "# N\n", "notes/a.md": "# A\nalpha\n"})
    os.symlink("/", root / "notes" / "slash")
    os.symlink("..", root / "notes" / "loop")
    (root / "notes" / "locked").mkdir()
    os.chmod(root / "notes" / "locked", 0)
    index = MemoryIndex(root, db=tmp_path / "db", embedder=HashEmbedder())
    stop = threading.Event()
    reports = []

    def run() -> None:
        for report in watch(root, index=index, stop_event=stop, debounce=50, compact=False):
            reports.append(report)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        assert _until(lambda: reports), "no catch-up"  # the watcher started: links were not walked
        dirs = watch_dirs_of(root, index)
        assert all("slash" not in d and "loop" not in d for d in dirs)
        (root / "notes" / "b.md").write_text("# B\nbravo kingfisher\n")
        assert _until(lambda: any("notes/b.md" in r.changed_paths for r in reports)), "edit not indexed"
        (root / "notes" / "new" / "deeper").mkdir(parents=True)  # a folder made while watching ...
        time.sleep(0.3)
        (root / "notes" / "new" / "deeper" / "c.md").write_text("# C\ncharlie zebra\n")  # ... then a file in it
        assert _until(lambda: index.search("charlie zebra", k=1, mode="keyword")
                      and index.search("charlie zebra", k=1, mode="keyword")[0].path == "notes/new/deeper/c.md")
        assert thread.is_alive()
    finally:
        stop.set()
        thread.join(30)
        os.chmod(root / "notes" / "locked", 0o755)
    assert not thread.is_alive()


def watch_dirs_of(root, index):
    from memsearch.service.daemon import Daemon

    return watch_dirs(Daemon(root, index=index, state_file=False))


def test_a_daemon_that_dies_says_so(tmp_path, monkeypatch):
    root = build(tmp_path / "memory", {"MEMORY.md": "# Root\n", "notes/MEMORY.md": "# N\n"})
    db = tmp_path / "db"
    index = MemoryIndex(root, db=db, embedder=HashEmbedder())

    def broken(*args, **kwargs):
        raise PermissionError(13, "Permission denied (os error 13)")

    monkeypatch.setattr(watcher_module, "_events", broken)
    with pytest.raises(PermissionError):
        for _ in watch(root, index=index, compact=False):
            pass
    status = daemon_status(root, db)
    assert "failed" in status["state"] and "Permission denied" in status["error"]
    assert not status["running"]
