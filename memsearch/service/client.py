"""The thin client of the memsearch service: one request over a Unix socket, standard library only.

This module and what it imports stay light (no torch, LanceDB, pyarrow or sentence-transformers;
a test checks), so a shell command answered by the service pays for Python's start and little
more. A root's requests go to the daemon started by hand for that root (``memsearch watch
ROOT``, its socket beside the index) when there is one, else to the per-user service
(:func:`memsearch.location.service_socket`), which loads the root on its first request.
:func:`ask` is what every client uses: it returns the server's result, or None when the
caller should do the work in-process, which is at once when no server listens (no socket, or a
stale one after a ``kill -9``) or the service is still loading the root, and after one warning
line when the server does not answer in time, dies mid-request or refuses the request. A call
the server finds wrong (a bad argument, a path outside the root) raises the same typed error
the in-process call would.
"""

from __future__ import annotations

import errno
import json
import os
import socket
import time
from pathlib import Path
from typing import Callable

from .. import errors, settings
from ..errors import DaemonUnavailable
from ..location import IndexLocation, service_socket
from ..platforms import peer_uid
from .protocol import (
    PROTOCOL_ERRORS,
    PROTOCOL_VERSION,
    QUIET_ERRORS,
    UNWARNED_ERRORS,
    WRITE_METHODS,
    ProtocolError,
    decode,
    encode,
)

__all__ = ["Client", "ask", "ask_service", "DaemonUnavailable"]

_QUIET_ERRNOS = {errno.ENOENT, errno.ECONNREFUSED, errno.ENOTSOCK, errno.ENOTDIR}


def _rebuilt(cls, message: str, hint) -> errors.MemsearchError:
    """The daemon's error as this process's own, its hint (if any) kept as data for this caller to word."""
    parsed = errors.Hint.from_dict(hint)
    if parsed is not None and isinstance(hint.get("text"), str):
        try:
            return cls(hint["text"], hint=parsed)
        except TypeError:  # an error class with its own arguments: the message as worded by the daemon
            pass
    return cls(message)


class Client:
    """Talks to the server of ``root``'s index (``db``: as ``--db``, or an :class:`IndexLocation`); ``root``
    None: to the per-user service itself. One connection per call.

    ``timeout``: seconds to wait for a reply (default ``$MEMSEARCH_CLIENT_TIMEOUT``, else 3); a write
    (``index``, ``check``) waits as long as the server works on it. ``probe``: with a long ``timeout``, after
    each ``probe`` seconds without a reply the server is asked for its ``status`` on a second connection, and one
    that does not answer that either (stopped with ``kill -STOP``, or hung) is given up at once rather than
    waited for to the end of ``timeout``.
    """

    def __init__(self, root=None, db=None, *, timeout: float | None = None, path: str | os.PathLike[str] | None = None,
                 probe: float | None = None):
        self.where = IndexLocation.of(root, db) if root is not None else None
        self.root = self.where.root if self.where is not None else None
        self.db_path = self.where.state if self.where is not None else None
        self.timeout = settings.get("client_timeout", timeout)
        self.probe = probe if probe and probe < self.timeout else None
        self.path = Path(path) if path else self.locate()
        self._ids = 0

    def locate(self) -> Path | None:
        """The socket to ask: the root's own daemon's (the derived path, else the one its state file
        records), else the per-user service's; None if none exists."""
        if self.where is None:
            service = service_socket()
            return service if os.path.exists(service) else None
        derived = self.where.socket
        if os.path.exists(derived):
            return derived
        try:
            recorded = json.loads(self.where.state_file.read_text()).get("socket")
        except (OSError, ValueError, AttributeError):
            recorded = None
        if isinstance(recorded, str) and os.path.exists(recorded):
            return Path(recorded)
        service = service_socket()
        return service if os.path.exists(service) else None

    def call(self, method: str, **params):
        """The server's result of ``method(**params)``.

        Raises :class:`DaemonUnavailable` (``quiet`` when no server listens at all) or the
        :mod:`memsearch.errors` error the server reports for the call itself.
        """
        return self.request(method, **params)["result"]

    def call_with_progress(self, method: str, params: dict, progress: Callable[[dict], None] | None = None):
        """:meth:`call`, handing each progress line's ``progress`` object to ``progress``."""
        return self._request(method, params, progress)["result"]

    def request(self, method: str, **params) -> dict:
        """The server's whole reply to ``method(**params)`` (``result``, ``server_ms``, ...); errors as :meth:`call`."""
        return self._request(method, params, None)

    def _request(self, method: str, params: dict, progress) -> dict:
        if self.path is None:
            what = self.db_path if self.where is not None else "this user"
            raise DaemonUnavailable(f"no memsearch service serves {what}", quiet=True)
        self._ids += 1
        request = {"v": PROTOCOL_VERSION, "id": self._ids, "method": method, "params": params}
        if self.where is not None:
            request |= {"root": str(self.root), "db": self.where.label}
        try:
            data = encode(request)
        except (TypeError, ValueError):  # e.g. a datetime.date argument: the in-process call takes it
            raise DaemonUnavailable("the request does not fit in JSON", quiet=True) from None
        try:
            reply = self._exchange(data, progress, method in WRITE_METHODS)
        except DaemonUnavailable as exc:  # a root's own socket nobody listens on (a daemon killed): the service
            service = service_socket() if exc.quiet and self.where is not None else None
            if service is None or self.path == service or not os.path.exists(service):
                raise
            self.path = service
            reply = self._exchange(data, progress, method in WRITE_METHODS)
        if reply.get("ok") is True and "result" in reply:
            return reply
        error = reply.get("error") if isinstance(reply.get("error"), dict) else {}
        kind, message = str(error.get("type", "ServerError")), str(error.get("message", "no message"))
        cls = getattr(errors, kind, None) if kind in errors.__all__ and kind not in PROTOCOL_ERRORS else None
        if isinstance(cls, type) and issubclass(cls, errors.MemsearchError) and cls is not DaemonUnavailable:
            raise _rebuilt(cls, message, error.get("hint"))
        raise DaemonUnavailable(f"the memsearch server at {self.path} refused the request ({kind}: {message})",
                                quiet=kind in QUIET_ERRORS, kind=kind)

    def _exchange(self, data: bytes, progress=None, long: bool = False) -> dict:
        """Send one request; read lines until its reply (progress lines go to ``progress``). ``long``: no
        deadline for the reply (a write the server works on), only for the connection."""
        deadline = time.monotonic() + self.timeout
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(self.timeout)
            try:
                sock.connect(str(self.path))
            except OSError as exc:
                if exc.errno in _QUIET_ERRNOS:  # nobody listens: a stale socket after kill -9, or none
                    raise DaemonUnavailable(f"no memsearch daemon listens on {self.path}", quiet=True) from None
                raise DaemonUnavailable(f"cannot connect to the memsearch daemon at {self.path}: {exc}",
                                        kind="NotConnected") from None
            uid = peer_uid(sock)
            if uid is not None and uid != os.getuid():
                raise DaemonUnavailable(f"the socket {self.path} belongs to uid {uid}, not to this user: not used",
                                        kind="NotConnected")
            buffer = bytearray()
            try:
                try:
                    sock.sendall(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # refused at once (another uid, too busy): the reply saying why may be waiting
                while True:
                    line, _, rest = bytes(buffer).partition(b"\n")
                    if _:
                        message = decode(line)
                        if "progress" not in message:
                            break  # the reply, decoded once (it was decoded again after the loop: 0.05 ms more a call)
                        buffer = bytearray(rest)
                        if progress is not None and isinstance(message["progress"], dict):
                            progress(message["progress"])
                        continue
                    if long:  # no deadline while the server answers a status request beside it
                        sock.settimeout(self.timeout)
                    else:
                        left = deadline - time.monotonic()
                        if left <= 0:
                            raise socket.timeout
                        sock.settimeout(min(left, self.probe) if self.probe else left)
                    try:
                        chunk = sock.recv(1 << 16)
                    except socket.timeout:
                        if long and self._answers_beside():
                            continue
                        if not long and self.probe and deadline > time.monotonic():
                            if self._answers_beside(self.probe):
                                continue
                            raise DaemonUnavailable(f"the memsearch server at {self.path} did not answer, nor a status "
                                                    f"request beside it within {self.probe:g} s (stopped or hung)") from None
                        raise
                    if not chunk:
                        raise DaemonUnavailable(f"the memsearch server at {self.path} closed the connection before answering")
                    buffer += chunk
            except socket.timeout:
                raise DaemonUnavailable(f"the memsearch server at {self.path} did not answer within {self.timeout:g} s") from None
            except ProtocolError as exc:
                raise DaemonUnavailable(f"the memsearch server at {self.path} sent a bad reply: {exc}") from None
            except OSError as exc:  # reset: the server died mid-request
                raise DaemonUnavailable(f"the memsearch server at {self.path} went away mid-request ({exc.strerror or exc})") from None
        finally:
            sock.close()
        return message

    def _answers_beside(self, timeout: float | None = None) -> bool:
        """Whether the server answers a ``status`` request on a second connection: a long write (``index``,
        ``check``) may send nothing for minutes while it works, and a server stopped (``kill -STOP``) or hung
        answers nothing at all. A refusal (too busy, ...) is an answer."""
        try:
            Client(path=self.path, timeout=timeout or self.timeout).call("status")
        except DaemonUnavailable as exc:
            return exc.kind not in (None, "NotConnected")
        return True


def _warn(message: str) -> None:
    import logging  # here, not at import: logging costs a shell command answered by the daemon about 10 ms

    logging.getLogger("memsearch.client").warning("memsearch: %s", message)


def ask(root, method: str, params: dict, *, db=None, timeout: float | None = None,
        warn: Callable[[str], None] | None = None, progress: Callable[[dict], None] | None = None):
    """The server's result of ``method(**params)`` for ``root``, or None: then do it in-process.

    A missing or stale server, or a service still loading the root, gives None silently; a
    server that does not answer in time, dies mid-request or refuses gives None after one call
    of ``warn`` (default: a warning on the ``memsearch.client`` logger, which Python prints on
    stderr when logging is not set up). Errors of the call itself (:mod:`memsearch.errors`)
    propagate. ``progress``: gets each progress line of a long write (``index``).
    """
    try:
        return Client(root, db, timeout=timeout).call_with_progress(method, params, progress)
    except DaemonUnavailable as exc:
        if not exc.quiet and exc.kind not in UNWARNED_ERRORS:
            (warn or _warn)(f"{exc}; answering in-process")
        return None


def ask_service(method: str, params: dict | None = None, *, timeout: float | None = None):
    """The per-user service's own result of ``method`` (``status``, ``stop``), or None when none runs."""
    try:
        return Client(timeout=timeout).call(method, **(params or {}))
    except DaemonUnavailable:
        return None
