"""The daemon's socket server: answers search, read, ls, core and status for one memory root.

:class:`Server` listens on the owner-only Unix socket of :mod:`memsearch.service.protocol`, one
thread per connection (at most :data:`MAX_CLIENTS`), and refuses peers of another uid. It
searches through a reader :class:`~memsearch.engine.index.MemoryIndex` of its own (its own
store handles and caches, as a reader in another process would have) that shares the
daemon's model, so the watcher's indexing never waits on a search. Requests are answered
concurrently: searches do not queue behind one another or behind a sync, and the query
encodes of searches in flight together share one model call (the embedders batch them,
:mod:`memsearch.engine.embed.batcher`).
"""

from __future__ import annotations

import logging
import os
import socket
import stat
import threading
import time
from pathlib import Path
from typing import Callable

from ..errors import MemsearchError
from ..platforms import peer
from . import protocol
from .firstbuild import building, still_building
from .protocol import PROTOCOL_VERSION, ProtocolError, decode, encode, secure_dir

__all__ = ["Server", "Refused", "MAX_CLIENTS", "IDLE_TIMEOUT_S"]

log = logging.getLogger("memsearch.server")

#: Connections served at once; one more is answered ``ServerError`` (busy) and closed.
MAX_CLIENTS = 64
#: A connection that sends nothing for this long is closed (a client keeps at most one open).
IDLE_TIMEOUT_S = 60.0




def _error(kind: str, message: str, exc: MemsearchError | None = None) -> dict:
    """A reply's error; a memsearch error's hint travels as data (``hint``: action, path, and the bare ``text``),
    so that the client words it for its own reader (the CLI or a model)."""
    error = {"type": kind, "message": message}
    if exc is not None and getattr(exc, "hint", None) is not None:
        error["hint"] = exc.hint.to_dict() | {"text": exc.text}
    return error


class Server:
    """Answer protocol requests for ``index``'s root on its socket; ``start()`` then ``close()``.

    ``index``: the reader index searches run on. ``status``: a callable giving the daemon's
    state for the ``status`` method. ``path``: the socket (default: the index location's
    :attr:`~memsearch.location.IndexLocation.socket`).
    ``methods``: more protocol methods by name (the tools' :mod:`memsearch.harness.served`).
    The caller holds the index's writer lock, so no other daemon of the index is alive and a
    socket file left at ``path`` is stale.
    """

    def __init__(self, index, *, status: Callable[[], dict] | None = None, path: str | os.PathLike[str] | None = None,
                 max_clients: int = MAX_CLIENTS, idle_timeout: float = IDLE_TIMEOUT_S,
                 sync: Callable[[list[str]], dict] | None = None, methods: dict[str, Callable] | None = None):
        self.index = index
        self.root = index.root
        self.db_path = index.where.state
        self.path = Path(path) if path else index.where.socket
        self.status = status or (lambda: {})
        self.syncer = sync
        self.idle_timeout = idle_timeout
        self.requests = 0
        self._slots = threading.BoundedSemaphore(max_clients)
        self._count_lock = threading.Lock()
        self._sock: socket.socket | None = None
        self._inode: tuple[int, int] | None = None
        self._thread: threading.Thread | None = None
        self._closed = threading.Event()
        self._handlers = {"search": self._search, "read": self._read, "ls": self._ls, "core": self._core,
                          "status": self._status, "sync": self._sync} | dict(methods or {})

    # --- life cycle ---------------------------------------------------------------------
    def start(self) -> "Server":
        secure_dir(self.path.parent, create=True)
        try:
            info = os.lstat(self.path)
        except FileNotFoundError:
            pass
        else:
            if not stat.S_ISSOCK(info.st_mode) or info.st_uid != os.getuid():
                raise PermissionError(f"{self.path} exists and is not a socket of this user: remove it")
            self.path.unlink()  # left by a daemon that was killed (we hold the writer lock)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.bind(str(self.path))  # inside a 0700 folder: nobody else can reach it before the chmod
            os.chmod(self.path, 0o600)
            sock.listen(MAX_CLIENTS)
        except BaseException:
            sock.close()
            raise
        info = os.stat(self.path)
        self._sock, self._inode = sock, (info.st_dev, info.st_ino)
        self._thread = threading.Thread(target=self._accept_loop, name="memsearch-server", daemon=True)
        self._thread.start()
        log.info("serving on %s", self.path)
        return self

    def close(self) -> None:
        """Stop accepting and remove the socket (only if it is still ours). Idempotent."""
        if self._closed.is_set():
            return
        self._closed.set()
        sock, self._sock = self._sock, None
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()
        try:
            info = os.stat(self.path)
            if (info.st_dev, info.st_ino) == self._inode:
                self.path.unlink()
        except OSError:
            pass
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)

    def __enter__(self) -> "Server":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()

    # --- connections ----------------------------------------------------------------------
    def _accept_loop(self) -> None:
        while not self._closed.is_set():
            sock = self._sock
            if sock is None:
                return
            try:
                conn, _ = sock.accept()
            except OSError:
                if self._closed.is_set():
                    return
                time.sleep(0.05)  # EMFILE and the like: retry
                continue
            if not self._slots.acquire(blocking=False):
                self._refuse(conn, _error("ServerError", "the daemon is serving too many clients; retry"))
                continue
            threading.Thread(target=self._serve, args=(conn,), name="memsearch-client", daemon=True).start()

    @staticmethod
    def _refuse(conn: socket.socket, error: dict) -> None:
        try:
            conn.sendall(encode({"v": PROTOCOL_VERSION, "id": None, "ok": False, "error": error}))
        except OSError:
            pass
        conn.close()

    def _serve(self, conn: socket.socket) -> None:
        try:
            pid, uid = peer(conn)
            if uid is not None and uid != os.getuid():
                log.warning("refused a connection from pid %d of uid %d (this daemon serves uid %d only)",
                            pid, uid, os.getuid())
                self._refuse(conn, _error("PermissionDenied", f"this daemon serves uid {os.getuid()} only"))
                return
            conn.settimeout(self.idle_timeout)
            with conn, conn.makefile("rb") as lines:
                while not self._closed.is_set():
                    try:
                        line = lines.readline(protocol.MAX_LINE_BYTES + 1)
                    except (OSError, ValueError):
                        return  # idle timeout or a reset
                    if not line:
                        return
                    too_long = len(line) > protocol.MAX_LINE_BYTES
                    if not line.strip() and not too_long:
                        continue
                    reply = self._too_long() if too_long else self.answer(line)
                    conn.sendall(encode(reply))
                    if too_long:
                        return
        except OSError:
            pass  # the client went away
        finally:
            self._slots.release()

    @staticmethod
    def _too_long() -> dict:
        return {"v": PROTOCOL_VERSION, "id": None, "ok": False,
                "error": _error("BadRequest", f"a request line is at most {protocol.MAX_LINE_BYTES} bytes")}

    # --- requests -------------------------------------------------------------------------
    def answer(self, line: bytes) -> dict:
        """The reply to one request line (never raises for a bad request)."""
        started = time.perf_counter()
        with self._count_lock:
            self.requests += 1
        try:
            message = decode(line)
        except ProtocolError as exc:
            return {"v": PROTOCOL_VERSION, "id": None, "ok": False, "error": _error("BadRequest", str(exc))}
        reply: dict = {"v": PROTOCOL_VERSION, "id": message.get("id")}
        try:
            reply["result"] = self._dispatch(message)
            reply["ok"] = True
        except Refused as exc:
            reply.update(ok=False, error=_error(exc.kind, str(exc)))
        except MemsearchError as exc:  # the caller's mistake: a client raises it as its own
            reply.update(ok=False, error=_error(type(exc).__name__, str(exc), exc))
        except Exception as exc:  # a bug or a broken index: the client works in-process instead
            log.exception("request %r failed", message.get("method"))
            reply.update(ok=False, error=_error("ServerError", f"{type(exc).__name__}: {exc}"))
        reply["server_ms"] = round((time.perf_counter() - started) * 1000, 3)
        return reply

    def _dispatch(self, message: dict):
        if message.get("v") != PROTOCOL_VERSION:
            raise Refused("UnsupportedVersion", f"protocol version {message.get('v')!r} is not served: "
                                                 f"this daemon speaks {PROTOCOL_VERSION}")
        method, params = message.get("method"), message.get("params", {})
        handler = self._handlers.get(method) if isinstance(method, str) else None
        if handler is None:
            raise Refused("UnknownMethod", f"unknown method {method!r}: choose one of {', '.join(protocol.METHODS)}")
        if not isinstance(params, dict):
            raise Refused("BadRequest", "params must be a JSON object")
        root = message.get("root")
        if root is not None and os.path.realpath(str(root)) != str(self.root):
            raise Refused("WrongRoot", f"this daemon serves {self.root}, not {root}")
        try:
            return handler(**params)
        except TypeError as exc:  # unknown or missing parameter names
            raise Refused("BadRequest", f"bad params for {method}: {exc}") from None

    def _search(self, query, k=10, scope=None, mode="hybrid", since=None, until=None, model=None) -> dict:
        served = self.index.embedder.name
        if model is not None and model != served:
            raise Refused("WrongModel", f"this daemon searches with model {served!r}, not {model!r}")
        hits = self.index.search(query, k=k, scope=scope, mode=mode, since=since, until=until)
        if not hits and not self.index.searcher.snapshot()[1]:  # no row at all: maybe none written yet
            state = self.status()
            if building(state):
                raise still_building(self.root, state)
        return {"hits": [hit.to_dict() for hit in hits]}

    def _read(self, path, lines=None) -> dict:
        from ..memory.contract import read

        if isinstance(lines, list):
            lines = tuple(lines)
        return read(self.root, path, lines).to_dict()

    def _ls(self, path=".", encoding=None) -> dict:
        from ..memory.contract import list_dir

        return list_dir(self.root, path, encoding=encoding).to_dict()

    def _core(self, encoding=None) -> dict:
        from ..memory.contract import load_core

        return load_core(self.root, encoding=encoding).to_dict()

    def _sync(self, paths) -> dict:
        if self.syncer is None:
            raise Refused("UnknownMethod", "this server does not index: it has no sync method")
        if (not isinstance(paths, list) or len(paths) > protocol.MAX_SYNC_PATHS
                or not all(isinstance(p, str) and p and "\0" not in p for p in paths)):
            raise Refused("BadRequest",
                           f"sync takes paths: a list of at most {protocol.MAX_SYNC_PATHS} relative paths")
        for rel in paths:
            parts = rel.split("/")
            if rel.startswith("/") or ".." in parts:
                raise Refused("BadRequest", f"sync paths are relative to the root, without '..': got {rel[:200]!r}")
        return self.syncer(paths)

    def _status(self) -> dict:
        from .. import __version__

        return {"protocol": PROTOCOL_VERSION, "memsearch": __version__, "pid": os.getpid(), "uid": os.getuid(),
                "root": str(self.root), "db": str(self.db_path), "model": self.index.embedder.name,
                "socket": str(self.path), "requests": self.requests} | {"state": self.status()}


class Refused(Exception):
    """A request the protocol refuses (its ``kind`` is one of :data:`protocol.PROTOCOL_ERRORS`)."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind
