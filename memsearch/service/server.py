"""The socket server: accepts local clients on an owner-only Unix socket and hands each request to a dispatcher.

:class:`Server` listens on the socket of :mod:`memsearch.service.protocol`, one thread per
connection (at most :data:`MAX_CLIENTS`), and refuses peers of another uid. It knows the
framing, the envelope and the protocol's errors; what a request means is its dispatcher's
business: one root's :class:`~memsearch.service.answers.Answers` (``Server(index)``, a daemon of
one root) or the per-user service's :class:`~memsearch.service.roots.Roots`. Requests are
answered concurrently: searches do not queue behind one another or behind a sync, and the
query encodes of searches in flight together share one model call (the embedders batch them,
:mod:`memsearch.engine.embed.batcher`).
"""

from __future__ import annotations

import logging
import os
import queue
import socket
import stat
import threading
import time
from pathlib import Path
from typing import Callable

from ..errors import MemsearchError
from ..platforms import peer
from . import protocol
from .answers import Answers
from .protocol import PROTOCOL_VERSION, ProtocolError, Refused, decode, encode, secure_dir

__all__ = ["Server", "Refused", "Dispatch", "MAX_CLIENTS", "IDLE_TIMEOUT_S", "PROGRESS_EVERY_S", "THREAD_IDLE_S"]

log = logging.getLogger("memsearch.server")

#: Connections served at once; one more is answered ``ServerError`` (busy) and closed.
MAX_CLIENTS = 64
#: A connection that sends nothing for this long is closed (a client keeps at most one open).
IDLE_TIMEOUT_S = 60.0
#: A long write sends a progress line at most this often (and at each change of phase).
PROGRESS_EVERY_S = 0.2
#: A connection's thread, its client gone, waits this long for the next connection before it ends:
#: every call is a connection, and starting a thread for each cost 0.09 ms of CPU (start and join),
#: handing a connection to a waiting thread about 0.03 (docs/benchmarks.md, "Concurrent searches").
THREAD_IDLE_S = 30.0

#: ``dispatch(method, root, db, params, progress)``: the result of one request, or :class:`Refused`
#: / a typed error. ``root`` and ``db`` are the envelope's (None when absent).
Dispatch = Callable[..., object]


def _error(kind: str, message: str, exc: MemsearchError | None = None) -> dict:
    """A reply's error; a memsearch error's hint travels as data (``hint``: action, path, and the bare ``text``),
    so that the client words it for its own reader (the CLI or a model)."""
    error = {"type": kind, "message": message}
    if exc is not None and getattr(exc, "hint", None) is not None:
        error["hint"] = exc.hint.to_dict() | {"text": exc.text}
    return error


class Server:
    """Answer protocol requests on a socket; ``start()`` then ``close()``.

    ``dispatch``: what answers a request (see :data:`Dispatch`). ``index`` instead: serve that
    one root (its :class:`~memsearch.service.answers.Answers`, with ``status`` giving its
    writer's state, ``sync`` its ``sync`` method and ``methods`` more methods by name). ``path``: the socket (default: the index
    location's :attr:`~memsearch.location.IndexLocation.socket`). The caller makes sure no
    other server of that path is alive, so a socket file left at ``path`` is stale.
    """

    def __init__(self, index=None, *, dispatch: Dispatch | None = None, status: Callable[[], dict] | None = None,
                 path: str | os.PathLike[str] | None = None, max_clients: int = MAX_CLIENTS,
                 idle_timeout: float = IDLE_TIMEOUT_S, sync: Callable[[list[str]], dict] | None = None,
                 methods: dict[str, Callable] | None = None):
        if (index is None) == (dispatch is None):
            raise TypeError("a Server serves one index or one dispatcher")
        self.answers = None
        if index is not None:
            self.answers = Answers(index, status=status, sync=sync, methods=methods)
            dispatch = self.answers.dispatch
            path = path or index.where.socket
        if path is None:
            raise TypeError("a dispatcher's server needs its socket path")
        self.path = Path(path)
        if self.answers is not None:
            self.answers.socket = str(self.path)
        self.dispatch = dispatch
        self.idle_timeout = idle_timeout
        self.requests = 0
        self._slots = threading.BoundedSemaphore(max_clients)
        self._count_lock = threading.Lock()
        self._sock: socket.socket | None = None
        self._inode: tuple[int, int] | None = None
        self._thread: threading.Thread | None = None
        self._closed = threading.Event()
        self._conns: queue.SimpleQueue = queue.SimpleQueue()  # accepted connections for the waiting threads
        self._waiting = 0  # threads waiting for a connection, none of them promised one (under _count_lock)

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
        with self._count_lock:
            waiting, self._waiting = self._waiting, 0
        for _ in range(waiting):
            self._conns.put(None)  # each waiting connection thread ends
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
                self._refuse(conn, _error("ServerError", "the memsearch server is serving too many clients; retry"))
                continue
            with self._count_lock:
                start = not self._waiting
                if not start:
                    self._waiting -= 1  # one waiting thread is promised this connection
            self._conns.put(conn)
            if start:
                threading.Thread(target=self._connections, name="memsearch-client", daemon=True).start()

    def _connections(self) -> None:
        """Serve the connections the accept loop hands over, one after the other; end once none came
        for :data:`THREAD_IDLE_S`, or at :meth:`close`."""
        while True:
            try:
                conn = self._conns.get(timeout=THREAD_IDLE_S)
            except queue.Empty:
                with self._count_lock:
                    if self._waiting:  # else this thread was promised a connection meanwhile: take it
                        self._waiting -= 1
                        return
                continue
            if conn is None:
                return
            self._serve(conn)
            if self._closed.is_set():
                return
            with self._count_lock:
                self._waiting += 1

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
                log.warning("refused a connection from pid %d of uid %d (this server serves uid %d only)",
                            pid, uid, os.getuid())
                self._refuse(conn, _error("PermissionDenied", f"this memsearch server serves uid {os.getuid()} only"))
                return
            log.debug("connection from pid %s", pid)
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
                    reply = self._too_long() if too_long else self.answer(line, conn.sendall)
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
    def answer(self, line: bytes, send: Callable[[bytes], None] | None = None) -> dict:
        """The reply to one request line (never raises for a bad request); ``send`` carries its progress lines."""
        started = time.perf_counter()
        with self._count_lock:
            self.requests += 1
        try:
            message = decode(line)
        except ProtocolError as exc:
            return {"v": PROTOCOL_VERSION, "id": None, "ok": False, "error": _error("BadRequest", str(exc))}
        reply: dict = {"v": PROTOCOL_VERSION, "id": message.get("id")}
        try:
            reply["result"] = self._dispatch(message, _progress_lines(message.get("id"), send))
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

    def _dispatch(self, message: dict, progress):
        if message.get("v") != PROTOCOL_VERSION:
            raise Refused("UnsupportedVersion", f"protocol version {message.get('v')!r} is not served: "
                                                f"this server speaks {PROTOCOL_VERSION}")
        method, params = message.get("method"), message.get("params", {})
        if not isinstance(method, str) or method not in protocol.METHODS:
            raise Refused("UnknownMethod", f"unknown method {method!r}: choose one of {', '.join(protocol.METHODS)}")
        if not isinstance(params, dict):
            raise Refused("BadRequest", "params must be a JSON object")
        root, db = message.get("root"), message.get("db")
        if not isinstance(root, (str, type(None))) or not isinstance(db, (str, type(None))):
            raise Refused("BadRequest", "root and db are strings")
        return self.dispatch(method, root, db, params, progress)


def _progress_lines(request_id, send: Callable[[bytes], None] | None):
    """A progress sink that sends progress lines for request ``request_id`` (None: no sink)."""
    if send is None:
        return None
    last = {"at": 0.0, "phase": None}

    def progress(phase: str, done: int, total: int, chunks: int) -> None:
        now = time.monotonic()
        if phase == last["phase"] and now - last["at"] < PROGRESS_EVERY_S and done != total:
            return
        last.update(at=now, phase=phase)
        try:
            send(encode({"v": PROTOCOL_VERSION, "id": request_id,
                         "progress": {"phase": phase, "done": done, "total": total, "chunks": chunks}}))
        except OSError:
            pass  # the client went away: the work goes on, its report is lost

    return progress
