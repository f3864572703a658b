"""The thin client of the daemon: one request over its Unix socket, standard library only.

This module and what it imports stay light (no torch, LanceDB, pyarrow or sentence-transformers;
a test checks), so a shell command answered by the daemon pays for Python's start and little
more. :func:`ask` is what every client uses: it returns the daemon's result, or None when the
caller should do the work in-process, which is at once when no daemon listens (no socket, or a
stale one after a ``kill -9``), and after one warning line when the daemon does not answer in
time, dies mid-request or refuses the request. A call the daemon finds wrong (a bad argument,
a path outside the root) raises the same typed error the in-process call would.
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
from ..location import IndexLocation
from ..platforms import peer_uid
from .protocol import PROTOCOL_ERRORS, PROTOCOL_VERSION, ProtocolError, decode, encode

__all__ = ["Client", "ask", "DaemonUnavailable"]

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
    """Talks to the daemon of ``root``'s index (``db``: as ``--db``, or an :class:`IndexLocation`). One
    connection per call.

    ``timeout``: seconds to wait for a reply (default ``$MEMSEARCH_CLIENT_TIMEOUT``, else 3).
    """

    def __init__(self, root, db=None, *, timeout: float | None = None, path: str | os.PathLike[str] | None = None):
        self.where = IndexLocation.of(root, db)
        self.root = self.where.root
        self.db_path = self.where.state
        self.timeout = settings.get("client_timeout", timeout)
        self.path = Path(path) if path else self.locate()
        self._ids = 0

    def locate(self) -> Path | None:
        """The daemon's socket: the derived path, else the one its state file records; None if neither exists."""
        derived = self.where.socket
        if os.path.exists(derived):
            return derived
        try:
            recorded = json.loads(self.where.state_file.read_text()).get("socket")
        except (OSError, ValueError, AttributeError):
            return None
        return Path(recorded) if isinstance(recorded, str) and os.path.exists(recorded) else None

    def call(self, method: str, **params):
        """The daemon's result of ``method(**params)``.

        Raises :class:`DaemonUnavailable` (``quiet`` when no daemon listens at all) or the
        :mod:`memsearch.errors` error the daemon reports for the call itself.
        """
        return self.request(method, **params)["result"]

    def request(self, method: str, **params) -> dict:
        """The daemon's whole reply to ``method(**params)`` (``result``, ``server_ms``, ...); errors as :meth:`call`."""
        if self.path is None:
            raise DaemonUnavailable(f"no memsearch daemon serves {self.db_path}", quiet=True)
        self._ids += 1
        request = {"v": PROTOCOL_VERSION, "id": self._ids, "method": method, "root": str(self.root), "params": params}
        try:
            data = encode(request)
        except (TypeError, ValueError):  # e.g. a datetime.date argument: the in-process call takes it
            raise DaemonUnavailable("the request does not fit in JSON", quiet=True) from None
        reply = self._exchange(data)
        if reply.get("ok") is True and "result" in reply:
            return reply
        error = reply.get("error") if isinstance(reply.get("error"), dict) else {}
        kind, message = str(error.get("type", "ServerError")), str(error.get("message", "no message"))
        cls = getattr(errors, kind, None) if kind in errors.__all__ and kind not in PROTOCOL_ERRORS else None
        if isinstance(cls, type) and issubclass(cls, errors.MemsearchError) and cls is not DaemonUnavailable:
            raise _rebuilt(cls, message, error.get("hint"))
        raise DaemonUnavailable(f"the memsearch daemon at {self.path} refused the request ({kind}: {message})", kind=kind)

    def _exchange(self, data: bytes) -> dict:
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
                while not buffer.endswith(b"\n"):
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise socket.timeout
                    sock.settimeout(left)
                    chunk = sock.recv(1 << 16)
                    if not chunk:
                        raise DaemonUnavailable(f"the memsearch daemon at {self.path} closed the connection before answering")
                    buffer += chunk
            except socket.timeout:
                raise DaemonUnavailable(f"the memsearch daemon at {self.path} did not answer within {self.timeout:g} s") from None
            except OSError as exc:  # reset: the daemon died mid-request
                raise DaemonUnavailable(f"the memsearch daemon at {self.path} went away mid-request ({exc.strerror or exc})") from None
        finally:
            sock.close()
        try:
            return decode(bytes(buffer))
        except ProtocolError as exc:
            raise DaemonUnavailable(f"the memsearch daemon at {self.path} sent a bad reply: {exc}") from None


def _warn(message: str) -> None:
    import logging  # here, not at import: logging costs a shell command answered by the daemon about 10 ms

    logging.getLogger("memsearch.client").warning("memsearch: %s", message)


def ask(root, method: str, params: dict, *, db=None, timeout: float | None = None,
        warn: Callable[[str], None] | None = None):
    """The daemon's result of ``method(**params)``, or None: then do it in-process.

    A missing or stale daemon gives None silently; a daemon that does not answer in time,
    dies mid-request or refuses gives None after one call of ``warn`` (default: a warning on
    the ``memsearch.client`` logger, which Python prints on stderr when logging is not set up).
    Errors of the call itself (:mod:`memsearch.errors`) propagate.
    """
    try:
        return Client(root, db, timeout=timeout).call(method, **params)
    except DaemonUnavailable as exc:
        if not exc.quiet:
            (warn or _warn)(f"{exc}; answering in-process")
        return None
