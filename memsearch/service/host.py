"""The serving processes: the per-user service (:func:`run_service`), a daemon of one root (:func:`run_watch`), and
the same daemon inside another process (:class:`WatchThread`, ``memsearch serve --watch``).

Each puts a :class:`~memsearch.service.server.Server` in front of per-root state
(:mod:`memsearch.service.roots`) and runs until SIGINT or SIGTERM; the per-user service also
ends once no root is loaded, or on the protocol's ``stop``.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from contextlib import contextmanager

from ..errors import DaemonFailed
from ..location import IndexLocation, open_private, service_socket, service_start_file
from .protocol import secure_dir
from .roots import LOCK_WAIT_S, Root, Roots
from .server import Server

__all__ = ["run_service", "run_watch", "WatchThread", "EMPTY_GRACE_S"]

log = logging.getLogger("memsearch.service")

#: A service whose last root was unloaded exits after this long (one started bare, by hand, waits ``idle_exit``).
EMPTY_GRACE_S = 2.0


@contextmanager
def _signals(stop: threading.Event):
    """SIGINT and SIGTERM set ``stop`` (main thread only); a second Ctrl-C quits at once."""

    def request_stop(signum, frame) -> None:
        if stop.is_set() and signum == signal.SIGINT:
            raise KeyboardInterrupt
        log.info("%s received: finishing the batch in hand", signal.Signals(signum).name)
        stop.set()

    previous = {sig: signal.signal(sig, request_stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _serve_failed(exc: OSError) -> DaemonFailed:
    reason = exc.strerror or str(exc)
    fix = ("Set XDG_RUNTIME_DIR (or TMPDIR) to a shorter folder" if "too long" in reason
           else "Fix the folder's owner or mode")
    return DaemonFailed(f"cannot serve on {exc.filename or 'the socket'}: {reason}. {fix}")


def _take_start_lock(start_fd: int | None) -> int | None:
    """The start file's descriptor, flocked for this process's life (the one handed over by the client
    that started it, else taken now); None when another service holds it."""
    if start_fd is not None:
        return start_fd
    import fcntl

    path = service_start_file()
    fd = open_private(path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def run_service(*, root=None, db=None, model: str | None = None, idle_exit: float | None = None,
                debounce: int | None = None, start_fd: int | None = None) -> int:
    """Serve this user's memory roots on :func:`~memsearch.location.service_socket` until stopped or empty.

    ``root`` (with ``db``, ``model``): load that root at once (the auto-starting client's); without it (started
    by hand) the service waits ``idle_exit`` seconds for a first root before it exits as empty.
    ``start_fd``: the start file's descriptor, flocked by the client that started this process.
    Returns 0; another service already running is not an error (this one exits at once).
    """
    path = service_socket()
    try:
        secure_dir(path.parent, create=True)
    except OSError as exc:
        raise _serve_failed(exc) from None
    fd = _take_start_lock(start_fd)
    if fd is None:
        log.info("another memsearch service of this user runs (%s): exiting", path)
        return 0
    stop, empty = threading.Event(), threading.Event()
    roots = Roots(socket=str(path), idle_exit=idle_exit, debounce=debounce, lock_wait=LOCK_WAIT_S,
                  on_empty=empty.set, on_stop=stop.set)
    try:
        server = Server(dispatch=roots.dispatch, path=path).start()
    except OSError as exc:
        os.close(fd)
        raise _serve_failed(exc) from None
    log.info("memsearch service (pid %d) serving on %s, idle exit %s s", os.getpid(), path, idle_exit)
    grace: float | None = EMPTY_GRACE_S
    try:
        with _signals(stop):
            if root is not None:
                roots.load(IndexLocation.of(root, db), model)
            else:  # started by hand: it waits for its first root as long as a root waits for a request
                empty.set()
                grace = idle_exit or None  # 0: never
            while not stop.wait(0.5):
                if empty.is_set() and not len(roots):
                    if stop.wait(grace):
                        break
                    if not len(roots):
                        log.info("no memory root is loaded: exiting")
                        break
                    empty.clear()
                    grace = EMPTY_GRACE_S
    finally:
        ran = stop.is_set() or roots.served  # stopped on purpose, or served a root: not a failed start
        server.close()  # no new requests, then every root finishes its batch and releases its lock
        roots.close()
        if ran:
            _forget_start(fd)
        os.close(fd)
    return 0


def _forget_start(fd: int) -> None:
    """Empty the start file, so that the next client may start a service at once (its stamp makes
    autostart wait ``RETRY_AFTER_S`` after a start that failed)."""
    try:
        os.ftruncate(fd, 0)
    except OSError:
        pass


def run_watch(root, *, db=None, model=None, debounce=None, wait: float | None = 0.0,
              idle_exit: float | None = None) -> int:
    """``memsearch watch ROOT``: keep one root fresh and answer its clients on its own socket, in the
    foreground, until SIGINT or SIGTERM (or ``idle_exit`` seconds without a request). Raises
    :class:`~memsearch.errors.IndexLocked` when another writer holds the index past ``wait`` (None: a
    standby, waiting as long as it takes)."""
    where = IndexLocation.of(root, db)
    one = Root(where, model=model, debounce=debounce, idle_exit=idle_exit, socket=str(where.socket), lock_wait=wait)
    with _signals(one.stop_event):  # a standby (``wait`` None) waiting for the lock stops on a signal too
        one.open()
        try:
            server = Server(dispatch=_touching(one), path=where.socket).start()
        except OSError as exc:
            one.stop()
            one.daemon.close()
            raise _serve_failed(exc) from None
        try:
            one.follow()
        finally:
            server.close()
            one.daemon.close()
    return 0


def _touching(one: Root):
    answer = one.answers.dispatch

    def dispatch(method, root, db, params, progress=None):
        one.touch()
        return answer(method, root, db, params, progress)

    return dispatch


class WatchThread:
    """A daemon of one root (watcher and socket server) inside another process, e.g. ``memsearch serve --watch``.

    ``start()`` takes the writer lock, loads the model and listens (raising
    :class:`~memsearch.errors.IndexLocked` when another writer holds the index), then follows file
    events in a background thread until ``close()``.
    """

    def __init__(self, root, db=None, model=None, debounce=None, *, index=None):
        self.where = IndexLocation.of(root, db)
        self.root = Root(self.where, model=model, debounce=debounce, socket=str(self.where.socket), index=index)
        self.server: Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def daemon(self):
        return self.root.daemon

    def start(self) -> "WatchThread":
        self.root.open()
        try:
            self.server = Server(dispatch=self.root.answers.dispatch, path=self.where.socket).start()
        except OSError as exc:
            self.root.daemon.close()
            raise _serve_failed(exc) from None

        def run() -> None:
            try:
                self.root.follow()
            except Exception:  # noqa: BLE001 - the server process keeps serving in-process
                log.exception("the watcher stopped")

        self._thread = threading.Thread(target=run, name="memsearch-watch", daemon=True)
        self._thread.start()
        return self

    def close(self, timeout: float = 30.0) -> None:
        """Stop after the batch in hand; the lock is released and the socket removed."""
        self.root.stop()
        if self.server is not None:
            self.server.close()
        if self._thread is not None:
            self._thread.join(timeout)
        if self.root.daemon is not None:
            self.root.daemon.close()
