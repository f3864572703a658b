"""One writer per index: an advisory ``flock`` on ``DB/writer.lock``.

The kernel releases a ``flock`` when its process dies, however it dies, so a lock left by a
killed process is taken over by the next writer without guessing from pids. The holder
writes its pid and start time into the file so that others can name it in messages.
Readers never take this lock.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from pathlib import Path

from .errors import IndexLocked

__all__ = ["WriterLock", "lock_holder"]

LOCK_FILE = "writer.lock"


def lock_holder(db_path: str | os.PathLike[str]) -> dict | None:
    """Who holds the writer lock of the index at ``db_path`` (pid, since, command), or None."""
    path = Path(db_path) / LOCK_FILE
    if not path.exists():
        return None
    try:
        fd = os.open(path, os.O_RDWR)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            try:
                return json.loads(Path(path).read_text() or "{}") or {"pid": None}
            except ValueError:
                return {"pid": None}
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None  # nobody holds it: a stale file from a dead process
    finally:
        os.close(fd)


class WriterLock:
    """Exclusive writer lock of one index. ``acquire(timeout=None)`` waits forever; 0 fails at once."""

    def __init__(self, db_path: str | os.PathLike[str], purpose: str = "index"):
        self.path = Path(db_path) / LOCK_FILE
        self.purpose = purpose
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self, timeout: float | None = 0.0) -> "WriterLock":
        if self._fd is not None:
            return self
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if deadline is not None and time.monotonic() >= deadline:
                    os.close(fd)
                    holder = lock_holder(self.path.parent) or {}
                    who = f"process {holder.get('pid')} ({holder.get('purpose', 'a writer')}, since {holder.get('since', '?')})" if holder.get("pid") else "another process"
                    raise IndexLocked(
                        f"the index at {self.path.parent} is being written by {who}. Wait for it to finish, "
                        f"or stop it (`memsearch stop ROOT` for a daemon); searches keep working meanwhile"
                    ) from None
                time.sleep(0.05)
        os.ftruncate(fd, 0)
        info = {"pid": os.getpid(), "purpose": self.purpose, "since": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
        os.pwrite(fd, json.dumps(info).encode(), 0)
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def __enter__(self) -> "WriterLock":
        return self.acquire(timeout=0.0)

    def __exit__(self, *exc) -> None:
        self.release()
