"""The service's and a daemon's log and the lock files are owner-only (0600) whatever the umask, in their 0700
folders: a log holds queries and paths of the memory, a lock's holder is nobody else's business. The process's
umask is left alone (the library leaves the process alone)."""

from __future__ import annotations

import logging
import os
import stat

import pytest

from memsearch.location import open_private


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.fixture
def wide_umask():
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def test_open_private_creates_owner_only_and_leaves_the_umask_alone(tmp_path, wide_umask):
    os.close(open_private(tmp_path / "a.log"))
    assert _mode(tmp_path / "a.log") == 0o600
    assert os.umask(0o022) == 0o022  # unchanged by the call


def test_open_private_narrows_a_file_an_older_version_left_wide(tmp_path, wide_umask):
    (tmp_path / "old.log").write_text("before\n")
    os.chmod(tmp_path / "old.log", 0o644)
    fd = open_private(tmp_path / "old.log")
    os.write(fd, b"after\n")
    os.close(fd)
    assert _mode(tmp_path / "old.log") == 0o600
    assert (tmp_path / "old.log").read_text() == "before\nafter\n"  # appended, never truncated


def test_the_writer_lock_file_is_owner_only(tmp_path, wide_umask):
    from memsearch.engine.storage.lock import WriterLock

    lock = WriterLock(tmp_path / "index").acquire(timeout=0)
    try:
        assert _mode(lock.path) == 0o600
    finally:
        lock.release()


def test_the_service_start_lock_is_owner_only(tmp_path, monkeypatch, wide_umask):
    from memsearch.location import service_start_file
    from memsearch.service.host import _take_start_lock
    from memsearch.service.protocol import secure_dir

    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    secure_dir(service_start_file().parent, create=True)
    fd = _take_start_lock(None)
    try:
        assert fd is not None and _mode(service_start_file()) == 0o600
    finally:
        os.close(fd)


def test_the_daemons_rotating_log_is_owner_only_after_a_rollover_too(tmp_path, wide_umask):
    from memsearch.cli.watch import PrivateLog

    handler = PrivateLog(tmp_path / "daemon.log", maxBytes=200, backupCount=2)
    try:
        record = logging.LogRecord("memsearch", logging.INFO, __file__, 1, "x" * 120, None, None)
        for _ in range(3):  # the second and third roll the log over: a fresh daemon.log each time
            handler.emit(record)
    finally:
        handler.close()
    assert (tmp_path / "daemon.log.1").exists()
    for name in ("daemon.log", "daemon.log.1", "daemon.log.2"):
        if (tmp_path / name).exists():
            assert _mode(tmp_path / name) == 0o600, name
