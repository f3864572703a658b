"""One writer per index: an advisory ``flock`` on ``DB/writer.lock``.

The kernel releases a ``flock`` when its process dies, however it dies, so a lock left by a
killed process is taken over by the next writer without guessing from pids. The holder
records its pid, purpose and start time in ``DB/writer.json`` (written atomically) so that
others can name it in messages; :func:`lock_holder` reads that record and checks that the
process is alive, without ever touching the lock itself. Readers never take the lock.

Inside one process, two things are kept apart:

* the ``flock`` is the process's: :meth:`WriterLock.acquire` takes (or counts) a hold on it and
  :meth:`WriterLock.release` gives one back; it is closed when the last hold goes, whichever
  thread gives it back (a daemon takes it for its whole life and may close from another thread);
* a write is a thread's: :meth:`WriterLock.writing` is owned by the calling thread for the
  length of one sync (re-entrant in that thread), so two threads sharing one index queue
  instead of writing at once, and neither can close the descriptor under the other.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from ...errors import Hint, IndexLocked, UnsupportedPlatform
from ...location import DB_DIRNAME, HOLDER_FILE, LOCK_FILE, open_private
from ...memory.files import atomic_write_json, make_index_dir, read_json
from ...platforms import pid_alive

try:
    import fcntl
except ImportError:  # Windows
    raise UnsupportedPlatform("memsearch's index needs a POSIX system (Linux, macOS): its writer lock is an flock "
                              "(fcntl), which Windows lacks. On Windows, run memsearch under WSL") from None

__all__ = ["WriterLock", "lock_holder", "holder_text", "Fenced"]

#: How often a waiting writer retries the ``flock`` (no blocking call, so a wait can time out).
POLL_S = 0.05


#: What a writer lock's holder is doing, by the purpose it recorded, as messages say it.
_DOING = {"watch": "the memsearch service or a watch daemon, keeping it fresh", "index": "an index run"}


def holder_text(holder: dict) -> str:
    """A writer lock's (or a remote index's lease's) holder record in words, for every message that names it:
    ``process PID[ on HOST] (what it is doing, since WHEN)``."""
    host = f" on {holder['host']}" if holder.get("host") else ""  # a remote index's lease names the machine
    purpose = holder.get("purpose")
    doing = _DOING.get(purpose, purpose) if isinstance(purpose, str) and purpose else "a writer"
    return f"process {holder.get('pid')}{host} ({doing}, since {holder.get('since', '?')})"


def lock_holder(db_path: str | os.PathLike[str]) -> dict | None:
    """Who holds the writer lock of the index at ``db_path`` ({pid, purpose, since}), or None.

    A record left by a dead process (``kill -9``) reads as None: its lock is already free.
    """
    info = read_json(Path(db_path) / HOLDER_FILE)
    pid = info.get("pid") if info else None
    if not isinstance(pid, int) or not pid_alive(pid):
        return None
    return info


def _deadline(timeout: float | None) -> float | None:
    return None if timeout is None else time.monotonic() + max(0.0, timeout)


def _left(deadline: float | None) -> float | None:
    return None if deadline is None else max(0.0, deadline - time.monotonic())


class WriterLock:
    """Exclusive writer lock of one index. A ``timeout`` of None waits forever, 0 never waits. ``root``: the memory
    root, whose read bits a folder the lock makes may share (:func:`~memsearch.memory.files.make_index_dir`)."""

    def __init__(self, db_path: str | os.PathLike[str], purpose: str = "index", root: str | os.PathLike[str] | None = None):
        self.db_path = Path(db_path)
        self.root = root
        #: What an :class:`IndexLocked` for a busy lock suggests: its commands name this root (and this index, when
        #: it is not at ``ROOT/.memsearch``), so that an error raised from the Python API can be pasted as it is.
        self.busy = Hint("busy", root=root, db=None if root is None or self.db_path == Path(root) / DB_DIRNAME
                         else self.db_path)
        self.path = self.db_path / LOCK_FILE
        self.purpose = purpose
        self._restore: str | None = None  # the purpose to go back to when a hold taken with its own ends
        self._fd: int | None = None
        self._locked: tuple[int, int] | None = None  # (st_dev, st_ino) of the file the flock is on
        self._holds = 0
        self._guard = threading.Lock()      # protects _fd and _holds
        self._write = threading.Lock()      # one writing thread at a time
        self._writer: int | None = None     # ident of the thread inside writing()
        self._depth = 0

    @property
    def held(self) -> bool:
        """Whether this process holds the ``flock``."""
        return self._fd is not None

    @property
    def writing_thread(self) -> int | None:
        """The ident of the thread writing now, or None."""
        return self._writer

    def acquire(self, timeout: float | None = 0.0, purpose: str | None = None) -> "WriterLock":
        """Take a hold on the process's ``flock``, waiting up to ``timeout`` seconds for other writers.

        ``purpose``: what this hold records about its holder (a daemon: ``"watch"``) when it is
        the first; the lock's own purpose comes back when the last hold is released.
        """
        deadline = _deadline(timeout)
        with self._guard:
            if self._fd is None:
                if purpose is not None:
                    self._restore, self.purpose = self.purpose, purpose
                try:
                    self._fd = self._lock_file(deadline)
                except BaseException:
                    self._end_purpose()
                    raise
                st = os.fstat(self._fd)
                self._locked = (st.st_dev, st.st_ino)
                self._record()
            self._holds += 1
        return self

    def _end_purpose(self) -> None:
        if self._restore is not None:
            self.purpose, self._restore = self._restore, None

    def release(self) -> None:
        """Give back one hold; the last one unlocks and closes the lock file."""
        with self._guard:
            if self._fd is None:
                return
            self._holds -= 1
            if self._holds > 0:
                return
            fd, self._fd, self._holds, self._locked = self._fd, None, 0, None
            self._end_purpose()
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

    @contextmanager
    def writing(self, timeout: float | None = 0.0) -> Iterator["WriterLock"]:
        """Hold the lock for one write by the calling thread (re-entrant in that thread).

        Another thread of this process writing now is waited for, like another process, up to
        ``timeout`` seconds; then :class:`IndexLocked` is raised.
        """
        me = threading.get_ident()
        if self._writer == me:
            self._depth += 1
            try:
                yield self
            finally:
                self._depth -= 1
            return
        deadline = _deadline(timeout)
        left = _left(deadline)
        if not self._write.acquire(timeout=-1 if left is None else left):
            raise IndexLocked(self._busy_message(in_process=True), hint=self.busy)
        try:
            self._writer, self._depth = me, 1
            self.acquire(timeout=_left(deadline))
            try:
                yield self
            finally:
                self.release()
        finally:
            self._writer, self._depth = None, 0
            self._write.release()

    def check(self) -> None:
        """Before a commit or a rebuild: raise :class:`IndexLocked` if this writer may no longer write. A local
        ``flock`` stays held until the process dies, but it is on a file: once ``writer.lock`` is no longer that
        file (the index folder, or the whole root, removed or replaced meanwhile), writing would make a new
        index in a folder being deleted, so nothing more is written (a remote lease may lapse: :mod:`.remote`)."""
        locked = self._locked
        if self._fd is None or locked is None:
            return
        try:
            st = os.stat(self.path, follow_symlinks=False)
            now = (st.st_dev, st.st_ino)
        except OSError:
            now = None
        if now != locked:
            raise IndexLocked(f"the index folder {self.db_path} was removed or replaced while this process wrote "
                              "it: nothing more is written there; run the command again to index into a new one")

    def _lock_file(self, deadline: float | None) -> int:
        make_index_dir(self.db_path, self.root)  # the index's folder: owner-only unless the root shares reading
        fd = self._open()
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    return fd
                except BlockingIOError:
                    if deadline is not None and time.monotonic() >= deadline:
                        raise IndexLocked(self._busy_message(), hint=self.busy) from None
                    time.sleep(POLL_S)
        except BaseException:
            os.close(fd)
            raise

    def _open(self) -> int:
        """The lock file's descriptor; a directory or link in its place (damage) is replaced by a file."""
        try:
            return open_private(self.path, os.O_RDWR)
        except OSError as exc:
            if not (isinstance(exc, IsADirectoryError) or self.path.is_symlink()):
                raise
        if self.path.is_symlink() or not self.path.is_dir():
            self.path.unlink(missing_ok=True)
        else:
            shutil.rmtree(self.path, ignore_errors=True)
        return open_private(self.path, os.O_RDWR)

    def _record(self) -> None:
        record = {"pid": os.getpid(), "purpose": self.purpose, "since": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
        try:
            atomic_write_json(self.db_path / HOLDER_FILE, record)
        except OSError:  # a full disk: the record only names the holder in messages; the flock is what counts
            pass

    def _busy_message(self, in_process: bool = False) -> str:
        if in_process:
            who = f"another thread of this process ({self.purpose})"
        else:
            holder = lock_holder(self.db_path) or {}
            who = holder_text(holder) if holder.get("pid") else "another process"
        return f"the index at {self.db_path} is being written by {who}"

    def __enter__(self) -> "WriterLock":
        return self.acquire(timeout=0.0)

    def __exit__(self, *exc) -> None:
        self.release()


class Fenced:
    """A store whose commits each ask ``check`` first (:meth:`WriterLock.check`), so a writer that lost its
    lease mid-sync stops before its next commit; everything else goes to the store unchanged."""

    WRITES = frozenset({"replace_files", "mark_incomplete", "touch_states"})

    def __init__(self, store, check) -> None:
        self._store, self._check = store, check

    def __getattr__(self, name: str):
        attr = getattr(self._store, name)
        if name not in self.WRITES:
            return attr

        def fenced(*args, **kwargs):
            self._check()
            return attr(*args, **kwargs)
        return fenced
