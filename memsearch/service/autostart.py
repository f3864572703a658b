"""Starting a daemon in the background for an index nobody started one for (the ``autostart`` setting).

When a search, read, ls or core finds no daemon, :func:`ensure` starts ``memsearch watch ROOT
--idle-exit N`` detached (as ``watch --detach`` does) and returns at once: this call is answered
in-process, the calls that follow by the daemon once it listens. It is skipped, silently, for:

* a remote (``s3://``) index: its daemon would hold the index's one writer lease across
  machines, which is an operator's choice (``memsearch watch``), not a side effect of a search;
* an index this user cannot write (a read-only root with the default ``ROOT/.memsearch``, an
  index directory of another user): calls keep being answered in-process;
* an index some writer holds already (a daemon started by hand, an ``index`` run);
* a daemon that failed (or exited at once) less than :data:`RETRY_AFTER_S` ago: its log says why.

**One daemon however many clients race.** The client takes an exclusive ``flock`` on the
index's start file (:attr:`~memsearch.location.IndexLocation.start_file`) without waiting,
and hands that descriptor to the daemon it starts, which keeps it for its whole life; a client
that finds it taken does nothing. A second daemon could only lose the writer lock anyway.
The started daemon exits after ``idle_exit`` seconds (``MEMSEARCH_IDLE_EXIT``) without a request.
"""

from __future__ import annotations

import os
import time

from .. import settings
from ..launch import DETACHED_CWD, python_argv
from ..location import IndexLocation
from ..memory.files import read_json

try:
    import fcntl
except ImportError:  # Windows: no daemon there
    fcntl = None  # type: ignore[assignment]

__all__ = ["ensure", "RETRY_AFTER_S"]

#: A daemon started less than this long ago that is not running now (it failed, or exited at
#: once) is not started again yet: a broken setup does not spawn a process per call.
RETRY_AFTER_S = 60.0
#: How long an auto-started daemon waits for the writer lock: the client that started it may be
#: syncing the index in-process for the call in hand.
LOCK_WAIT_S = 60.0


def _writable(where: IndexLocation) -> bool:
    """Whether this user may create and write the index's local directory."""
    path = where.state
    while not path.exists():
        if path.parent == path:
            return False
        path = path.parent
    return path.is_dir() and os.access(path, os.W_OK | os.X_OK)


def _failed_recently(where: IndexLocation, fd: int, now: float) -> bool:
    """Whether the daemon last started here (the time in the start file), less than RETRY_AFTER_S ago,
    is gone without a clean stop."""
    try:
        started = float(os.pread(fd, 64, 0).decode().strip() or 0)
    except (OSError, ValueError):
        started = 0.0
    if now - started >= RETRY_AFTER_S:
        return False
    try:
        fresh = os.stat(where.state_file).st_mtime >= started
        stopped = fresh and (read_json(where.state_file) or {}).get("state") == "stopped"
    except OSError:
        return True
    return not stopped


def command(where: IndexLocation, *, model: str | None = None, idle_exit: int | None = None) -> list[str]:
    """The command line of an auto-started daemon for ``where``."""
    cmd = python_argv("memsearch", "watch", str(where.root), *where.watch_args(), "--log-file", str(where.log_file),
                      "--wait", str(LOCK_WAIT_S), "--idle-exit", str(settings.get("idle_exit", idle_exit)))
    return cmd + (["--model", model] if model else [])


def ensure(where: IndexLocation, *, model: str | None = None, enabled: bool | None = None,
           idle_exit: int | None = None) -> int | None:
    """Start a daemon for the index at ``where`` in the background if the module docstring's rules
    allow; the pid started, or None. Never waits for the daemon and never raises for it."""
    if fcntl is None or where.remote or not settings.get("autostart", enabled) or not _writable(where):
        return None
    from .process import verified_holder

    try:
        where.ensure_state()
        flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)
        fd = os.open(where.start_file, flags, 0o600)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return None  # another client is starting one, or the daemon it started holds it
        now = time.time()
        if verified_holder(where) is not None or _failed_recently(where, fd, now):
            return None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{now:.3f}\n".encode(), 0)  # when the last daemon was started (see _failed_recently)
        import subprocess  # here, not at import: only a call that starts a daemon needs it (and threading)
        import threading

        with open(where.log_file, "ab") as log:
            proc = subprocess.Popen(command(where, model=model, idle_exit=idle_exit), stdin=subprocess.DEVNULL,
                                    stdout=log, stderr=log, start_new_session=True, close_fds=True, pass_fds=(fd,),
                                    cwd=DETACHED_CWD)
        threading.Thread(target=proc.wait, name="memsearch-autostart-reaper", daemon=True).start()
        return proc.pid
    except OSError:
        return None
    finally:
        os.close(fd)  # the daemon keeps its own copy of the descriptor, and so the lock
