"""The service's wire protocol (version 1): where its socket lives and how one request and one reply look.

**Transport.** A Unix domain stream socket, owner-only (mode 0600, in a folder of mode 0700).
The per-user service listens on :func:`memsearch.location.service_socket`
(``$XDG_RUNTIME_DIR/memsearch/service.sock``, else ``<tempdir>/memsearch-<uid>/service.sock``)
and serves every memory root a request names; a daemon started by hand for one root
(``memsearch watch ROOT``) listens on :attr:`memsearch.location.IndexLocation.socket` (next
to the index) and serves that root only. Clients try a root's own socket first, then the
per-user one. There is no TCP listener. The server refuses peers of another uid
(:func:`memsearch.platforms.peer_uid`); clients check the server's uid the same way.

**Framing: JSON lines**, as watchman's JSON protocol: each request and each reply is one line
of compact UTF-8 JSON ended by ``\\n``; a connection may carry many requests, answered in
order. Chosen over HTTP over the socket because a client needs only ``socket`` and ``json``
from the standard library (no HTTP client to import on the hot path of a shell command),
and because it is trivial to drive by hand (``socat - UNIX-CONNECT:SOCKET``).

Request (``root``: the memory root meant; ``db``: its index's address as ``--db`` takes it)::

    {"v": 1, "id": 7, "method": "search", "root": "/home/ada/memory", "db": "/home/ada/memory/.memsearch",
     "params": {"query": "...", "k": 5}}

Reply, one per request, with the request's ``id``::

    {"v": 1, "id": 7, "ok": true, "result": {...}, "server_ms": 12.3}
    {"v": 1, "id": 7, "ok": false, "error": {"type": "InvalidArgument", "message": "..."}}

A long write (``index``, ``check``) may send progress lines before its reply, each
``{"v": 1, "id": 7, "progress": {"phase": "index", "done": 3, "total": 10, "chunks": 40}}``.

``error.type`` is the name of a :mod:`memsearch.errors` class when the request itself was
wrong (a bad argument, a path outside the root): a client raises that error as if it had run
the call itself. The protocol's own errors are :data:`PROTOCOL_ERRORS`; ``Loading`` (the
service is loading that root, or waits for another writer of it) and ``NotLoaded`` (a request
other than ``search`` for a root the service does not hold: only a search, which needs the
model, loads one) are quiet ones: the client works in-process. Methods (:data:`METHODS`) and
their ``params``, each for the request's ``root``:

* ``search``: ``query``, ``k``, ``scope``, ``mode``, ``since``, ``until``, ``model`` (a model name
  the client expects; the server refuses another) -> ``{"hits": [Hit.to_dict(), ...]}``
* ``read``: ``path``, ``lines`` -> ``ReadResult.to_dict()``
* ``ls``: ``path``, ``encoding`` -> ``Listing.to_dict()``
* ``core``: ``encoding`` -> ``CoreMemory.to_dict()``
* ``status``: none -> ``{"protocol", "memsearch", "pid", "uid", "root", "db", "model", "socket", "state"}``;
  without ``root``, the service itself: ``{"protocol", "memsearch", "pid", "socket", "roots": [...]}``
* ``sync``: ``paths`` (root-relative paths a write just changed) -> ``{"files", "chunks_embedded"}``
  once the server's index holds them: read-your-writes for a write made beside a running server
* ``index``: ``rebuild``, ``model``, ``include_core``, ``check``, ``wait`` -> what ``memsearch index``
  reports (:meth:`memsearch.engine.jobs.IndexJob.to_dict`), done by the server that holds the index
* ``check``: ``repair``, ``wait``, ``model`` -> ``CheckReport.to_dict()`` (``memsearch check``)
* ``unload``: none -> ``{"unloaded": bool}``: the root's watcher stops and its writer lock is released
* ``stop`` (no ``root``): the service unloads every root and exits -> ``{"roots": N}``
* ``tool``: ``name``, ``arguments``, ``writable``, ``budget``, ``encoding``, ``core_budget``, ``model`` -> the
  tool's result, as ``ToolBox.call`` gives it (:mod:`memsearch.harness.served`)
* ``resource``: ``uri`` (None: the list), ``encoding`` -> the MCP resources, or ``{"text"}``
* ``edit``: ``command``, ``arguments``, ``budget``, ``encoding``, ``model`` -> ``EditResult.to_dict()``, the
  write indexed by the server before it replies

A version other than :data:`PROTOCOL_VERSION` is answered ``UnsupportedVersion`` (the client
then works in-process).
"""

from __future__ import annotations

import json
import os
import re
import stat
from itertools import accumulate
from pathlib import Path

__all__ = ["PROTOCOL_VERSION", "METHODS", "WRITE_METHODS", "PROTOCOL_ERRORS", "QUIET_ERRORS", "UNWARNED_ERRORS",
           "MAX_LINE_BYTES", "MAX_DEPTH", "secure_dir", "encode", "decode", "json_depth", "json_depths", "ProtocolError", "Refused"]

PROTOCOL_VERSION = 1
METHODS = ("search", "read", "ls", "core", "status", "sync", "index", "check", "unload", "stop", "tool", "resource",
           "edit")
#: Methods that write a root's index: the client waits for them as long as the server works
#: (progress lines keep it informed), with no reply timeout.
WRITE_METHODS = ("index", "check")
#: Most paths one ``sync`` request may name (a write changes a handful).
MAX_SYNC_PATHS = 1000
#: Errors of the protocol itself (not of the call): the client falls back to in-process work.
PROTOCOL_ERRORS = ("BadRequest", "UnsupportedVersion", "UnknownMethod", "WrongRoot", "WrongModel",
                   "PermissionDenied", "ServerError", "Loading", "NotLoaded")
#: Protocol errors after which a client works in-process without a warning: nothing went wrong.
QUIET_ERRORS = ("WrongRoot", "Loading", "NotLoaded")
#: Refusals a client answers in-process without a warning though a server listens: the in-process call itself
#: searches or says what is wrong (another model than the served one: an unknown model, or IndexMismatch).
UNWARNED_ERRORS = QUIET_ERRORS + ("WrongModel",)
#: Longest request line the daemon reads; a longer one is answered ``BadRequest`` and the connection closed. The
#: longest honest one is a memory-tool write forwarded whole (a file of up to ``harness.bounds.MAX_WRITE_REQUEST_CHARS``,
#: 4,000,000 characters, up to 4 bytes each in UTF-8), so that no write falls back to the client's own process.
MAX_LINE_BYTES = 17 << 20
#: Deepest nesting of arrays and objects in one message: a request is an envelope around flat
#: params (4 levels at most); ``json`` recurses per level and a 100,000-deep line would overflow.
MAX_DEPTH = 16
#: A JSON string as :func:`json_depths` reads one: a backslash escapes the next character, and one left
#: open runs to the end of the text.
_STRINGS = re.compile(r'"[^"\\]*+(?:\\[\s\S][^"\\]*+)*+"?')
_BRACKETS = re.compile(r"[\[\]{}]")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


class ProtocolError(ValueError):
    """A line that is not a valid message of this protocol."""


class Refused(Exception):
    """A request the protocol refuses (its ``kind`` is one of :data:`PROTOCOL_ERRORS`)."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


def secure_dir(path: Path, create: bool = False) -> Path:
    """``path`` as a folder that only this user can enter (0700, owned by us, not a link).

    ``create``: make it (and fix a mode we own) if needed. Raises :class:`PermissionError`
    when someone else owns it or could reach into it: a socket there could be hijacked.
    """
    if create:
        try:
            path.mkdir(mode=0o700, parents=True)
        except FileExistsError:
            pass
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        raise PermissionError(f"{path} is not a folder owned by this user (uid {os.getuid()})")
    if stat.S_IMODE(info.st_mode) & 0o077:
        if not create:
            raise PermissionError(f"{path} is open to other users (mode {stat.S_IMODE(info.st_mode):o}); it must be 0700")
        os.chmod(path, 0o700)
    return path


def encode(message: dict) -> bytes:
    """One message as a protocol line (compact JSON, UTF-8, ending in a newline). Text that UTF-8 cannot hold (a
    lone surrogate: a model's emoji cut in half) goes as JSON's ``\\ud83d`` escapes, so the other end receives the
    very string that was sent, and answers or refuses it as the call in-process would."""
    text = json.dumps(message, ensure_ascii=False, separators=(",", ":"))
    try:
        return text.encode("utf-8") + b"\n"
    except UnicodeEncodeError:
        return json.dumps(message, separators=(",", ":")).encode("ascii") + b"\n"


def decode(line: bytes) -> dict:
    """One protocol line back to a message; :class:`ProtocolError` when it is not a JSON object."""
    try:
        text = line.decode("utf-8")
        # the nesting is at most the opening brackets' count: a search's reply of 5 hits has 12, and the
        # count (2 us for 5 kB) spares it the scan (40 us)
        if text.count("{") + text.count("[") > MAX_DEPTH and json_depth(text, MAX_DEPTH) > MAX_DEPTH:
            raise ProtocolError(f"a message is nested deeper than {MAX_DEPTH} levels: send one flat request object")
        message = json.loads(text)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        if isinstance(exc, ProtocolError):
            raise
        raise ProtocolError(f"not a line of UTF-8 JSON: {exc}") from None
    if not isinstance(message, dict):
        raise ProtocolError(f"a message is a JSON object, not {type(message).__name__}")
    return message


def json_depths(text: str):
    """The bracket nesting of JSON text after each character, counted without parsing (strings skipped)."""
    depth = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        yield depth


def json_depth(text: str, limit: int) -> int:
    """Deepest bracket nesting of JSON ``text``, at most ``limit + 1`` (where a scan stops once past ``limit``):
    the guard that keeps ``json.loads`` from recursing without bound, here and in the MCP transports
    (:mod:`memsearch.harness.bounds`).

    The count of :func:`json_depths`, with the strings cut out and the other characters but brackets
    dropped by regular expressions first, then the running depth summed in C: 40 us for a search's reply
    (5 kB of hits), on every client call, against 92 us in a loop over its quotes, backslashes and
    brackets and 0.5 ms before that in a per-character loop."""
    brackets = _BRACKETS.findall(_STRINGS.sub("", text))
    deepest = max(accumulate(map(_STEP.__getitem__, brackets)), default=0)
    return min(max(deepest, 0), limit + 1)
