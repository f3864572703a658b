"""Starting this user's memsearch service in the background when a call finds none (the ``autostart`` setting).

When a search finds no server for its root (``read``, ``ls``, ``core``, ``status`` and ``validate`` need no
model and never start one), :func:`ensure` starts ``memsearch service --root ROOT`` detached and returns
at once: this call is answered in-process, the calls that follow by the service once it has loaded the
root (it loads any other root on the first request that names it). It is skipped, silently, for:

* a remote (``s3://``) index: serving it would hold the index's one writer lease across
  machines, which is an operator's choice (``memsearch watch``), not a side effect of a search;
* an index this user cannot write (a read-only root with the default ``ROOT/.memsearch``, an
  index directory of another user): calls keep being answered in-process;
* an index some writer holds already (a daemon started by hand, an ``index`` run);
* a root whose service start failed (or exited at once) less than :data:`RETRY_AFTER_S` ago:
  the service's log (:func:`~memsearch.location.service_log_file`) says why.

The service's folder (:func:`~memsearch.location.service_dir`) is made owner-only first, as the service
itself does: one of this user's left open (``chmod 777``) is narrowed to 0700. One that cannot be made
private (another user's, a link or a file in its place, a mode that cannot be changed) starts nothing, and
that is not silent: ``warn`` gets one line naming the folder and its fix (``chmod 700 FOLDER``).

**One service however many clients race.** The client takes an exclusive ``flock`` on the
user's start file (:func:`~memsearch.location.service_start_file`) without waiting, and hands
that descriptor to the service it starts, which keeps it for its whole life; a client that
finds it taken does nothing (a service is starting or running, and loads the root when asked).
The service unloads a root after ``idle_exit`` seconds (``MEMSEARCH_IDLE_EXIT``) without a
request, and exits when no root is left.
"""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

from .. import settings
from ..launch import DETACHED_CWD, python_argv
from ..location import IndexLocation, open_private, service_dir, service_log_file, service_start_file

try:
    import fcntl
except ImportError:  # Windows: no service there
    fcntl = None  # type: ignore[assignment]

__all__ = ["ensure", "command", "RETRY_AFTER_S"]

#: A service started less than this long ago for the same root that is not running now (it failed,
#: or exited at once) is not started again yet: a broken setup does not spawn a process per call.
RETRY_AFTER_S = 60.0


def _writable(where: IndexLocation) -> bool:
    """Whether this user may create and write the index's local directory."""
    path = where.state
    while not path.exists():
        if path.parent == path:
            return False
        path = path.parent
    return path.is_dir() and os.access(path, os.W_OK | os.X_OK)


def _failed_recently(where: IndexLocation, fd: int, now: float) -> bool:
    """Whether the service was last started (the start file: time and root) for this root less than
    RETRY_AFTER_S ago; the caller holds the start file's lock, so that service is gone."""
    try:
        stamp, _, label = os.pread(fd, 4096, 0).decode().strip().partition(" ")
        started = float(stamp or 0)
    except (OSError, ValueError):
        return False
    return now - started < RETRY_AFTER_S and label == str(where.root)


def command(where: IndexLocation, *, model: str | None = None, idle_exit: int | None = None,
            start_fd: int | None = None) -> list[str]:
    """The command line of the auto-started service, loading ``where``'s root first."""
    cmd = python_argv("memsearch", "service", "--root", str(where.root), *where.watch_args(),
                      "--log-file", str(service_log_file()), "--idle-exit", str(settings.get("idle_exit", idle_exit)))
    if start_fd is not None:
        cmd += ["--start-fd", str(start_fd)]
    return cmd + (["--model", model] if model else [])


def _not_private(folder: Path) -> str:
    """The warning for a service folder that could not be made owner-only: what is wrong with it, and the fix."""
    from ..errors import shell_word

    try:
        info = os.lstat(folder)
    except OSError:
        info = None
    if info is not None and stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid():
        return (f"the memsearch service was not started: its folder {folder} is open to other users (mode "
                f"{stat.S_IMODE(info.st_mode):o}) and could not be made private: `chmod 700 {shell_word(folder)}`, "
                "then search again (this search is answered in-process)")
    what = ("missing" if info is None else "a link" if stat.S_ISLNK(info.st_mode) else
            "not a folder" if not stat.S_ISDIR(info.st_mode) else f"another user's (uid {info.st_uid})")
    return (f"the memsearch service was not started: its folder {folder} is {what}: move it away, or set "
            "XDG_RUNTIME_DIR to a folder of your own (this search is answered in-process)")


def ensure(where: IndexLocation, *, model: str | None = None, enabled: bool | None = None,
           idle_exit: int | None = None, warn=None) -> int | None:
    """Start this user's service in the background if the module docstring's rules allow; the pid
    started, or None. Never waits for the service; raises only :class:`~memsearch.errors.InvalidArgument` for a
    setting in the environment that the service would refuse (the caller says it, rather than the service's log).
    ``warn``: told, in one line, when the service's folder cannot be made private (else that is silent)."""
    if fcntl is None or where.remote or not settings.get("autostart", enabled) or not _writable(where):
        return None
    settings.check_all()
    from .process import verified_holder
    from .protocol import secure_dir

    folder = service_dir()
    try:
        secure_dir(folder, create=True)  # narrowed to 0700 when this user's, as the service does
    except PermissionError:
        if warn is not None:
            warn(_not_private(folder))
        return None
    except OSError:
        return None
    try:
        fd = open_private(service_start_file(), os.O_RDWR)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return None  # another client is starting the service, or the service holds it
        now = time.time()
        if verified_holder(where) is not None or _failed_recently(where, fd, now):
            return None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{now:.3f} {where.root}\n".encode(), 0)  # see _failed_recently
        import subprocess  # here, not at import: only a call that starts the service needs it (and threading)
        import threading

        with os.fdopen(open_private(service_log_file()), "ab") as log:  # owner-only, as the folder
            proc = subprocess.Popen(command(where, model=model, idle_exit=idle_exit, start_fd=fd),
                                    stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True,
                                    close_fds=True, pass_fds=(fd,), cwd=DETACHED_CWD)
        threading.Thread(target=proc.wait, name="memsearch-autostart-reaper", daemon=True).start()
        return proc.pid
    except OSError:
        return None
    finally:
        os.close(fd)  # the service keeps its own copy of the descriptor, and so the lock
