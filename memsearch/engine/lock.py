"""One writer per index: an advisory ``flock`` on ``DB/writer.lock``.

The kernel releases a ``flock`` when its process dies, however it dies, so a lock left by a
killed process is taken over by the next writer without guessing from pids. The holder
records its pid, purpose and start time in ``DB/writer.json`` (written atomically) so that
others can name it in messages; :func:`lock_holder` reads that record and checks that the
process is alive, without ever touching the lock itself. Readers never take the lock.
"""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path

from ..errors import IndexLocked
from ..memory.files import atomic_write_json, read_json

__all__ = ["WriterLock", "lock_holder"]

LOCK_FILE = "writer.lock"
HOLDER_FILE = "writer.json"
#: ``acquire(timeout=0)`` still retries this long, so a brief holder (a one-file sync) is waited out.
MIN_WAIT_S = 0.2


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def lock_holder(db_path: str | os.PathLike[str]) -> dict | None:
    """Who holds the writer lock of the index at ``db_path`` ({pid, purpose, since}), or None.

    A record left by a dead process (``kill -9``) reads as None: its lock is already free.
    """
    info = read_json(Path(db_path) / HOLDER_FILE)
    pid = info.get("pid") if info else None
    if not isinstance(pid, int) or not _alive(pid):
        return None
    return info


class WriterLock:
    """Exclusive writer lock of one index. ``acquire(timeout=None)`` waits forever."""

    def __init__(self, db_path: str | os.PathLike[str], purpose: str = "index"):
        self.db_path = Path(db_path)
        self.path = self.db_path / LOCK_FILE
        self.purpose = purpose
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self, timeout: float | None = 0.0) -> "WriterLock":
        if self._fd is not None:
            return self
        self.db_path.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        deadline = None if timeout is None else time.monotonic() + max(timeout, MIN_WAIT_S)
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if deadline is not None and time.monotonic() >= deadline:
                    os.close(fd)
                    raise IndexLocked(self._busy_message()) from None
                time.sleep(0.05)
        self._fd = fd
        record = {"pid": os.getpid(), "purpose": self.purpose, "since": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
        atomic_write_json(self.db_path / HOLDER_FILE, record)
        return self

    def _busy_message(self) -> str:
        holder = lock_holder(self.db_path) or {}
        who = (f"process {holder['pid']} ({holder.get('purpose', 'a writer')}, since {holder.get('since', '?')})"
               if holder.get("pid") else "another process")
        return (f"the index at {self.db_path} is being written by {who}. Wait for it to finish (--wait SECONDS), "
                f"or stop it (`memsearch stop ROOT` for a daemon); searches keep working meanwhile")

    def release(self) -> None:
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            holder = self.db_path / HOLDER_FILE
            try:
                if (read_json(holder) or {}).get("pid") == os.getpid():
                    holder.unlink()
            except OSError:
                pass
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def __enter__(self) -> "WriterLock":
        return self if self.held else self.acquire(timeout=0.0)

    def __exit__(self, *exc) -> None:
        self.release()
