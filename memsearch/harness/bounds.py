"""Bounds on what a tool call may send and what a tool answer may echo.

A model (or a hostile client) can send anything: arguments nested 100,000 levels deep, a
1 MB query, 10,000 unknown keys. :func:`check_request` refuses such a request with one
:class:`~memsearch.errors.InvalidArgument` *before* it is parsed further or validated, and
:func:`bounded_error` keeps every error object short (and free of the absolute memory root),
so results and errors stay within the token budget whatever the input.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..errors import InvalidArgument
from ..service.protocol import json_depth, json_depths

__all__ = [
    "check_request",
    "loads",
    "LongInteger",
    "bounded_error",
    "screen_message",
    "BoundedBodies",
    "MAX_MESSAGE_CHARS",
    "MAX_BODY_BYTES",
    "MAX_MESSAGE_DEPTH",
    "REFUSED_TOOL",
    "CARRIED_TOOL",
    "MAX_REQUEST_CHARS",
    "MAX_DEPTH",
    "MAX_KEYS",
    "MAX_STRING_CHARS",
    "MAX_ERROR_CHARS",
    "MAX_WRITE_REQUEST_CHARS",
]

#: Largest arguments text accepted (JSON as sent). The biggest honest call is a long query: far less.
MAX_REQUEST_CHARS = 100_000
#: Deepest nesting of arrays and objects in the arguments (the tools take flat objects).
MAX_DEPTH = 16
#: Most keys (and array items) in the whole arguments value.
MAX_KEYS = 64
#: Longest string argument (a query or a scope; a path is bounded by PATH_MAX on its own).
MAX_STRING_CHARS = 10_000
#: Largest arguments text of the write tool (``memory``): a whole memory file may travel in it.
MAX_WRITE_REQUEST_CHARS = 4_000_000
#: Largest JSON-RPC message (one line of the stdio transport) and its deepest nesting: the
#: MCP envelope adds a few levels to the arguments' own.
MAX_MESSAGE_CHARS = 8_000_000
MAX_MESSAGE_DEPTH = MAX_DEPTH + 8
#: Largest HTTP request body (the streamable HTTP transport): the same bound, in bytes.
MAX_BODY_BYTES = MAX_MESSAGE_CHARS
#: A body over the cap is read and dropped up to this many times the cap before the answer.
DRAIN_FACTOR = 64
#: Largest whole number accepted anywhere in the arguments (a bigger one cannot even be printed).
MAX_INTEGER = 10**15
#: Longest error message returned to a model (about 250 tokens).
MAX_ERROR_CHARS = 1_000
#: Longest integer literal :func:`loads` reads as its value; a longer one reads as a :class:`LongInteger`.
MAX_INTEGER_DIGITS = 100


class LongInteger(int):
    """An integer literal of more than :data:`MAX_INTEGER_DIGITS` digits, read as ``±10**MAX_INTEGER_DIGITS``
    (``digits``: its length). Python refuses to convert a literal of over 4,300 digits (``sys.int_info``), so
    ``json.loads`` raises on one; this stand-in, far out of every range, lets the argument checks refuse it by name."""

    digits: int

    def __new__(cls, literal: str):
        number = super().__new__(cls, (-1 if literal.startswith("-") else 1) * 10**MAX_INTEGER_DIGITS)
        number.digits = len(literal.lstrip("-"))
        return number


def _parse_int(literal: str) -> int:
    return int(literal) if len(literal.lstrip("-")) <= MAX_INTEGER_DIGITS else LongInteger(literal)


def loads(text: str):
    """JSON ``text`` parsed as ``json.loads`` does, except that an integer too long to convert is a
    :class:`LongInteger`, not a ``ValueError``: valid JSON always parses, so only text that is not JSON fails.
    Every request the tools and the stdio MCP server take is parsed here."""
    return json.loads(text, parse_int=_parse_int)


def _depth_of_text(text: str, limit: int = MAX_DEPTH) -> int:
    """Deepest bracket nesting of JSON text (the scan stops once past ``limit``), as the daemon's socket counts it."""
    return json_depth(text, limit)


def check_request(
    tool: str, arguments: Any, *, max_chars: int = MAX_REQUEST_CHARS, max_string: int | None = MAX_STRING_CHARS,
    example: str = "{}",
) -> Any:
    """``arguments`` unchanged (JSON text parsed) if within the bounds, else :class:`InvalidArgument`.

    ``max_chars`` bounds JSON text as sent, ``max_string`` each string (None: no bound, for
    a write tool whose content is a whole file; ``max_chars`` still applies to JSON text). ``example``: a good
    call of ``tool`` (its arguments as JSON), which the error for text that is not JSON shows.
    """
    if isinstance(arguments, bytes):
        try:
            arguments = arguments.decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidArgument(f"{tool}: arguments are not UTF-8 JSON: send one JSON object") from None
    if isinstance(arguments, str):
        if len(arguments) > max_chars:
            raise InvalidArgument(
                f"{tool}: arguments are {len(arguments):,} characters long, over the limit of "
                f"{max_chars:,}: send shorter arguments"
            )
        if _depth_of_text(arguments) > MAX_DEPTH:
            raise InvalidArgument(
                f"{tool}: arguments are nested deeper than {MAX_DEPTH} levels: the tools take one flat object"
            )
        if not arguments.strip():
            return None
        try:
            arguments = loads(arguments)
        except (ValueError, RecursionError):
            raise InvalidArgument(
                f"{tool}: arguments are not valid JSON: send one JSON object, e.g. {example}"
            ) from None
    _check_value(tool, arguments, max_string)
    return arguments


def _check_value(tool: str, value: Any, max_string: int | None) -> None:
    """Walk ``value`` iteratively (no recursion: a deep value cannot overflow the stack)."""
    stack = [(value, 1)]
    keys = 0
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            if max_string is not None and len(item) > max_string:
                raise InvalidArgument(
                    f"{tool}: a string argument is {len(item):,} characters long, over the limit of "
                    f"{max_string:,}: send a shorter query, path or scope"
                )
            continue
        if isinstance(item, int) and not isinstance(item, bool) and not -MAX_INTEGER <= item <= MAX_INTEGER:
            raise InvalidArgument(
                f"{tool}: a number argument is out of range (more than {len(str(MAX_INTEGER))} digits): "
                "line numbers and counts are small whole numbers"
            )
        if not isinstance(item, (dict, list, tuple)):
            continue
        if depth > MAX_DEPTH:
            raise InvalidArgument(
                f"{tool}: arguments are nested deeper than {MAX_DEPTH} levels: the tools take one flat object"
            )
        keys += len(item)
        if keys > MAX_KEYS:
            raise InvalidArgument(
                f"{tool}: arguments hold over {MAX_KEYS} keys or items: the tools take a few named arguments"
            )
        children = list(item.keys()) + list(item.values()) if isinstance(item, dict) else list(item)
        stack.extend((child, depth + 1) for child in children)


def bounded_error(error: dict, root: str | None = None) -> dict:
    """An error object (``{"error": {"type", "message"}}``) with a short message free of ``root``, unless the
    error is about the root itself (``NotAMemoryRoot``: removed while served): that names it, the path to restore."""
    body = error.get("error", {})
    message = str(body.get("message", ""))
    if root and body.get("type") != "NotAMemoryRoot":
        message = message.replace(str(root).rstrip("/") + "/", "").replace(str(root), "ROOT")
    if len(message) > MAX_ERROR_CHARS:
        message = message[: MAX_ERROR_CHARS - 40] + f"... ({len(message):,} characters, cut)"
    return {"error": {"type": str(body.get("type", "Error"))[:80], "message": message}}


_ID = re.compile(r'"id"\s*:\s*(-?\d{1,18}|"(?:[^"\\]|\\.){0,200}")')


def screen_message(line: str) -> str:
    """One JSON-RPC line as received, or, if it is too large or too deep to parse safely, a
    stand-in request with the same ``id`` that the server answers with an error naming the
    limit (the MCP SDK drops a message it cannot parse without any reply)."""
    problem = None
    if len(line) > MAX_MESSAGE_CHARS:
        problem = f"the request is {len(line):,} characters long, over the limit of {MAX_MESSAGE_CHARS:,}"
    elif _depth_of_text(line, MAX_MESSAGE_DEPTH) > MAX_MESSAGE_DEPTH:
        problem = f"the request is nested deeper than {MAX_MESSAGE_DEPTH} levels"
    if problem is None:
        return line
    ident = _request_id(line)
    if ident is None:  # a notification (or no readable id): nothing to answer
        return ""
    return (
        json.dumps(
            {
                "jsonrpc": "2.0",
                "id": ident,
                "method": "tools/call",
                "params": {"name": REFUSED_TOOL, "arguments": {"reason": problem}},
            }
        )
        + "\n"
    )


#: The tool name of a refused request's stand-in: the server answers it with an error (see mcp).
REFUSED_TOOL = "memsearch/refused-request"
#: The tool name of a call whose ``arguments`` are no JSON object, carried past the SDK's check (see mcp).
CARRIED_TOOL = "memsearch/carried-arguments"


def _carried_arguments(text: str) -> str:
    """A ``tools/call`` whose ``arguments`` are no object (JSON text, as OpenAI sends them; an array; a number): the
    SDK answers it "Invalid request parameters" with nothing more, where the stdio server hands them to the tool's
    own check (JSON text parsed, anything else named). It goes on as a call of :data:`CARRIED_TOOL` holding the
    tool's name and the arguments as sent, which :func:`~.mcp.run_tool` runs so. ``text`` itself otherwise."""
    try:
        message = json.loads(text)
    except (ValueError, RecursionError):
        return text
    params = message.get("params") if isinstance(message, dict) and message.get("method") == "tools/call" else None
    if not isinstance(params, dict) or not isinstance(params.get("name"), str) or \
            params.get("arguments") is None or isinstance(params["arguments"], dict):
        return text
    carried = {"name": params["name"], "arguments": params["arguments"]}
    return json.dumps(message | {"params": params | {"name": CARRIED_TOOL, "arguments": carried}}, ensure_ascii=False)


def _request_id(text: str):
    """The top-level ``"id"`` of JSON-RPC text too large or deep to parse (None if none is readable)."""
    for match in _ID.finditer(text[:MAX_REQUEST_CHARS]):
        if _open_depth(text[: match.start()]) == 1:
            return json.loads(match.group(1))
    return None


class BoundedBodies:
    """ASGI middleware for the streamable HTTP transport: every POST body is read with a cap
    of :data:`MAX_BODY_BYTES` and screened by :func:`screen_message` before the MCP app sees it.

    A body over the cap is answered here (after the rest of it is read and dropped, so that a
    client still sending sees the answer), ``413`` with a short JSON-RPC error (same ``id`` where
    readable); a body too deep to parse goes on as the stand-in request, which the server answers
    with a tool error, as on stdio; a too-deep notification gets ``400``; a body holding an integer too
    long to convert goes on with it cut to its stand-in (:func:`loads`), so its call gets the argument
    error, as on stdio. The server keeps serving.
    """

    def __init__(self, app, *, max_bytes: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            return await self.app(scope, receive, send)
        chunks, size, more = [], 0, True
        while more:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                return
            piece, more = message.get("body", b""), message.get("more_body", False)
            size += len(piece)
            if size <= self.max_bytes:
                chunks.append(piece)
            elif size > DRAIN_FACTOR * self.max_bytes:  # drained long enough: answer, then the connection closes
                break
        body = b"".join(chunks)
        if size > self.max_bytes:
            problem = f"the request body is over the limit of {self.max_bytes:,} bytes"
            return await _refuse(send, 413, _request_id(body[:MAX_REQUEST_CHARS].decode("utf-8", "replace")), problem)
        text = body.decode("utf-8", "replace")
        screened = screen_message(text)
        if screened is text and _LONG_DIGITS.search(text):
            screened = _long_numbers_cut(text)
        if screened and '"tools/call"' in screened:
            screened = _carried_arguments(screened)
        if screened is not text:
            if not screened:  # a notification: no id to answer
                return await _refuse(send, 400, None, f"the request is nested deeper than {MAX_MESSAGE_DEPTH} levels")
            body = screened.encode()
            scope = dict(
                scope,
                headers=[(k, v) for k, v in scope["headers"] if k != b"content-length"]
                + [(b"content-length", str(len(body)).encode())],
            )
        replayed = False

        async def replay():
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)


_LONG_DIGITS = re.compile(r"\d{%d}" % (MAX_INTEGER_DIGITS + 1))


def _long_numbers_cut(text: str) -> str:
    """JSON text holding an integer too long to convert, written again with each such integer as its
    :class:`LongInteger` stand-in: the SDK's parser (pydantic) refuses the whole request otherwise ("Parse
    error"), where the stdio server answers the call with its argument error. ``text`` itself when it is no JSON."""
    try:
        return json.dumps(loads(text), ensure_ascii=False)
    except (ValueError, RecursionError):
        return text


async def _refuse(send, status: int, ident, problem: str) -> None:
    """Answer an HTTP request with a JSON-RPC error (``-32600``, invalid request) and close it."""
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": ident,
            "error": {"code": -32600, "message": f"{problem}: send a smaller, flatter request"},
        }
    ).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def _open_depth(prefix: str) -> int:
    """Brackets open at the end of ``prefix`` (strings skipped)."""
    depth = 0
    for depth in json_depths(prefix):
        pass
    return depth
