"""The MCP server over stdio in the standard library: JSON-RPC 2.0 lines, the same answers as the SDK's server.

``memsearch serve ROOT`` runs once per agent session, mostly as a thin client of the daemon
(:mod:`.forward`), so its own memory is what each session costs: importing the ``mcp`` SDK (pydantic, the
protocol's models, starlette, uvicorn, httpx) takes about 53 MB on top of Python's 16, this module next to
nothing (docs/benchmarks.md, "MCP sessions"). It speaks the handshake versions of the protocol
(:data:`PROTOCOL_VERSIONS`: ``initialize``, then ``tools/list``, ``tools/call``, ``resources/list``,
``resources/templates/list``, ``resources/read``, ``ping``) and answers each request exactly as
:func:`memsearch.harness.mcp.build_server` does over the SDK (tests/harness/test_mcp_stdio.py compares them
line by line), except that every line gets an answer: one that is not JSON gets JSON-RPC's parse error (the SDK
drops it, and its client waits), and one holding a number too long to convert is parsed all the same
(:func:`~memsearch.harness.bounds.loads`); the streamable HTTP transport keeps the SDK. Each line is screened first
(:func:`~memsearch.harness.bounds.screen_message`); tool calls and resource reads run in worker threads, so a
slow search never holds up a ``ping``; replies are written whole, one line each, under a lock.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

from .. import __version__
from ..errors import MemsearchError
from .bounds import LongInteger, loads, screen_message
from .tools import TOOLS, TOOLS_AUDIENCE

__all__ = ["serve", "Session", "PROTOCOL_VERSIONS"]

#: The protocol versions of the ``initialize`` handshake, newest first: a client asking for one gets it,
#: any other gets the newest (it then decides whether it can talk to this server), as the SDK's server does.
PROTOCOL_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
#: Tool calls and resource reads served at once (more wait in line).
WORKERS = 8
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32700, -32600, -32601, -32602
READ_ONLY = {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True, "openWorldHint": False}
WRITES = {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": False, "openWorldHint": False}
log = logging.getLogger("memsearch.mcp")


class Session:
    """One client's session on ``toolbox``: :meth:`handle` takes one request (a dict) and returns its reply
    (None for a notification); ``send`` writes a reply line (for requests answered in a worker)."""

    def __init__(self, toolbox, send, *, name: str = "memsearch"):
        from .mcp import INSTRUCTIONS

        self.toolbox, self.send, self.name, self.instructions = toolbox, send, name, INSTRUCTIONS
        self.tools = [{"name": t.name, "description": t.description, "inputSchema": t.schema(),
                       "outputSchema": t.output_schema(), "annotations": READ_ONLY if t in TOOLS else WRITES}
                      for t in toolbox.specs]
        self.pool = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="memsearch-mcp")
        self._handlers = {"initialize": self._initialize, "ping": lambda params: {},
                          "tools/list": lambda params: {"tools": self.tools}, "resources/templates/list": self._templates}
        self._workers = {"tools/call": self._call_tool, "resources/list": self._resources,
                         "resources/read": self._read_resource}

    def handle(self, message) -> dict | None:
        if not isinstance(message, dict) or not isinstance(message.get("method"), str):
            return None  # a reply or junk: the SDK's server ignores it too
        method, params, ident = message["method"], message.get("params") or {}, message.get("id")
        if "id" not in message:
            return None  # a notification (initialized, cancelled, ...): nothing to answer
        if isinstance(ident, LongInteger):  # no id to echo (JSON-RPC: null when the request's id cannot be read)
            return _error(None, INVALID_REQUEST, f"Invalid Request: the id is a number of {ident.digits:,} digits; "
                          "use a shorter id")
        if method in self._workers:
            self.pool.submit(self._work, ident, self._workers[method], params)
            return None
        handler = self._handlers.get(method)
        if handler is None:
            return _error(ident, METHOD_NOT_FOUND, "Method not found", method)
        return {"jsonrpc": "2.0", "id": ident, "result": handler(params)}

    def _work(self, ident, work, params) -> None:
        try:
            reply = {"jsonrpc": "2.0", "id": ident, "result": work(params)}
        except _RequestError as exc:
            reply = _error(ident, exc.code, exc.message, exc.data)
        except Exception as exc:  # a bug: the client gets an error, the operator a traceback
            log.exception("memsearch MCP request failed")
            reply = _error(ident, -32603, f"internal error: {type(exc).__name__}")
        self.send(reply)

    def _initialize(self, params) -> dict:
        asked = params.get("protocolVersion") if isinstance(params, dict) else None
        return {"protocolVersion": asked if asked in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[0],
                "capabilities": {"resources": {"listChanged": False, "subscribe": False}, "tools": {"listChanged": False}},
                "serverInfo": {"name": self.name, "title": "memsearch: agent memory", "version": __version__},
                "instructions": self.instructions}

    def _call_tool(self, params) -> dict:
        from .mcp import run_tool

        if not isinstance(params, dict) or not isinstance(params.get("name"), str):
            raise _RequestError(INVALID_PARAMS, "Invalid request parameters", "tools/call takes a tool name")
        result = run_tool(self.toolbox, params["name"], params.get("arguments"))
        return {"content": [{"type": "text", "text": json.dumps(result, ensure_ascii=False)}],
                "structuredContent": result, "isError": "error" in result}

    def _resources(self, params) -> dict:
        from .mcp import resource_list

        return {"resources": [_wire(r) for r in resource_list(self.toolbox)]}

    def _templates(self, params) -> dict:
        from .mcp import FILE_TEMPLATE

        return {"resourceTemplates": [FILE_TEMPLATE]}

    def _read_resource(self, params) -> dict:
        from .mcp import read_resource_text

        uri = str(params.get("uri", "")) if isinstance(params, dict) else ""
        try:
            text = read_resource_text(self.toolbox, uri)
        except (MemsearchError, OSError) as exc:
            message = exc.render(TOOLS_AUDIENCE) if isinstance(exc, MemsearchError) else str(exc)
            raise _RequestError(INVALID_PARAMS, message, {"uri": uri, "type": type(exc).__name__}) from None
        return {"contents": [{"uri": uri, "mimeType": "text/markdown", "text": text}]}


class _RequestError(Exception):
    def __init__(self, code: int, message: str, data=None):
        super().__init__(message)
        self.code, self.message, self.data = code, message, data


def _wire(resource: dict) -> dict:
    """A resource as sent: camelCase keys, no null."""
    return {("mimeType" if k == "mime_type" else k): v for k, v in resource.items() if v is not None}


def _error(ident, code: int, message: str, data=None) -> dict:
    error = {"code": code, "message": message} | ({"data": data} if data is not None else {})
    return {"jsonrpc": "2.0", "id": ident, "error": error}


def serve(toolbox, *, warm: bool = True, stdin=None, stdout=None) -> None:
    """Serve ``toolbox`` over stdin/stdout until the client closes stdin. Stray prints go to stderr: file
    descriptor 1 then points there, the replies going to a copy of the original."""
    from .mcp import log_to_stderr, warm_in_background

    log_to_stderr()
    if stdout is None:
        stdout = os.fdopen(os.dup(sys.stdout.fileno()), "wb", buffering=0)
        sys.stdout.flush()
        os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    stdin = stdin if stdin is not None else sys.stdin.buffer
    lock = threading.Lock()

    def send(reply: dict) -> None:
        try:
            line = json.dumps(reply, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"
        except UnicodeEncodeError:  # a lone surrogate the request sent ('\ud800'), echoed: sent back escaped as it came
            line = json.dumps(reply, separators=(",", ":")).encode("ascii") + b"\n"
        with lock:
            try:
                stdout.write(line)
                stdout.flush()
            except (BrokenPipeError, ValueError, OSError):
                pass  # the client is gone

    session = Session(toolbox, send)
    if warm:
        warm_in_background(toolbox)
    try:
        for raw in stdin:
            line = screen_message(raw.decode("utf-8", errors="replace"))
            if not line.strip():
                continue
            try:
                message = loads(line)  # a number too long to convert still parses: its argument check refuses it
            except ValueError:  # not JSON: JSON-RPC's parse error (id null), so that a client waits for nothing
                log.warning("memsearch: not a JSON-RPC message: %.80r", line)
                send(_error(None, PARSE_ERROR, "Parse error: the line is not JSON; send one JSON-RPC message per line"))
                continue
            reply = session.handle(message)
            if reply is not None:
                send(reply)
    finally:
        session.pool.shutdown(wait=True)
