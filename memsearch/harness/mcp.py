"""A Model Context Protocol server over one memory root (official ``mcp`` SDK, low-level API).

* Tools: the four memory tools of :mod:`memsearch.tools`, with their own JSON Schemas, input and
  output (``outputSchema``). A result is a JSON text block plus the same object as
  ``structuredContent``, which the tool's ``outputSchema`` describes; a bad call
  (unknown tool, bad argument, a path outside the root, ...) is a result with
  ``isError: true`` holding ``{"error": {"type", "message"}}`` the model can read; the
  server never crashes on a call.
* Resources: ``memory://core`` (core memory as rendered into a system prompt) and every
  ``MEMORY.md`` as ``memory://file/<path>``; the template ``memory://file/{path}`` reads any
  memory file. Resources are never cut to the token budget.
* One :class:`~memsearch.tools.ToolBox` per server. While a daemon serves the index (the one this
  server starts, a ``memsearch watch``, or this server with ``serve --watch``), the toolbox forwards
  every call and resource read to it (:mod:`.forward`) and this process loads no model, LanceDB or
  tiktoken; otherwise one model and one index stay open here and every search first syncs the files
  changed since the last call. Memory files are only ever read, unless the toolbox is writable
  (``serve --writable``): then the ``memory`` tool writes them, keeping the tree valid.
* Transports: stdio (:func:`memsearch.harness.stdio.serve`, without the SDK, so a session's server stays
  small), or streamable HTTP on a loopback address only (:func:`serve_http`, on the SDK's
  :func:`build_server`): there is no authentication. Either way each request is screened
  (:mod:`~memsearch.harness.bounds`): one too large or too deep gets a short error, never a hang.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import os
import sys
import threading
from urllib.parse import quote, unquote

from .. import __version__, settings
from ..errors import InvalidArgument, MemsearchError
from ..memory.contract import load_core, memory_ref, read
from ..memory.tree import INDEX_NAME, open_memory, scan
from . import forward
from .bounds import CARRIED_TOOL, REFUSED_TOOL, BoundedBodies, bounded_error
from .tools import TOOLS, TOOLS_AUDIENCE, ToolBox, error_object

__all__ = ["build_server", "serve_http", "log_to_stderr", "check_loopback", "run_tool", "memory_resources",
           "resource_text", "resource_list", "read_resource_text", "CORE_URI", "FILE_URI_PREFIX", "FILE_TEMPLATE",
           "DEFAULT_PORT"]

CORE_URI = "memory://core"
FILE_URI_PREFIX = "memory://file/"
DEFAULT_PORT = 8765
LOOPBACK_NAMES = ("localhost",)
log = logging.getLogger("memsearch.mcp")

INSTRUCTIONS = """\
Persistent agent memory (Agent Memory: a directory of Markdown). Read the resource memory://core
(core memory) into context first. Everything else is deferred: find it with memory_search, browse it
with memory_list (each directory's MEMORY.md says what it holds), load it with memory_read."""


#: The resource template of every memory file (the wire form: the SDK's server and :mod:`.stdio` send it).
FILE_TEMPLATE = {"uriTemplate": FILE_URI_PREFIX + "{path}", "name": "memory-file", "title": "Memory file",
                 "description": "Any memory file by its path relative to the memory root, e.g. projects/MEMORY.md.",
                 "mimeType": "text/markdown"}


def file_uri(rel: str) -> str:
    return FILE_URI_PREFIX + quote(rel, safe="/")


#: What a model can still use when a tool fails on a bug of memsearch (they read the files, no index involved).
BUG_FALLBACK = "memory_list and memory_read"


def run_tool(toolbox: ToolBox, name: str, arguments) -> dict:
    """Run a tool; every failure becomes an error object (a bug also goes to the log)."""
    if name == REFUSED_TOOL:  # the stand-in for a request too large or too deep to parse (see bounds)
        reason = str((arguments or {}).get("reason", "the request was refused"))[:200]
        return {"error": {"type": "InvalidArgument", "message": f"{reason}: send a smaller, flatter request"}}
    if name == CARRIED_TOOL and isinstance(arguments, dict):  # arguments that were no object, past the SDK (see bounds)
        name, arguments = arguments.get("name"), arguments.get("arguments")
    try:
        return toolbox.dispatch(name, arguments)
    except Exception as exc:  # a bug: the model gets an error saying what to do, the operator a traceback
        log.exception("memsearch tool %s failed", str(name)[:80])
        said = error_object(exc)["error"]
        said["message"] = (f"memsearch failed on this call ({said['type']}: {said['message']}), a fault of memsearch, "
                           f"not of the call: call it once more, or go on with {BUG_FALLBACK}; the details are in the "
                           "server's log")
        return bounded_error({"error": said}, str(toolbox.root))


def memory_resources(root) -> list[dict]:
    """The resources of the memory at ``root``: core memory, then every ``MEMORY.md`` (the fields of MCP's ``Resource``)."""
    tree = scan(root)
    found = [{"uri": CORE_URI, "name": "core-memory", "title": "Core memory",
              "description": "Every Markdown file directly in the memory root, as placed in the system prompt; always in context.",
              "mime_type": "text/markdown"}]
    indexes = ([INDEX_NAME] if tree.has_root_index else []) + [f"{d}/{INDEX_NAME}" for d in tree.memory_dirs if tree.has_index(d)]
    for rel in indexes:
        try:
            ref = memory_ref(root, rel)
            opened, _ = open_memory(root, rel)  # the size by descriptor: never of a file a link swapped in
            with opened:
                size = os.fstat(opened.fd).st_size
        except (MemsearchError, OSError):
            continue
        found.append({"uri": file_uri(rel), "name": rel, "title": ref.title, "description": ref.summary or None,
                      "mime_type": "text/markdown", "size": size})
    return found


def resource_text(root, uri: str, *, encoding: str | None = None) -> str:
    """The text of the resource at ``uri`` (never cut to the token budget)."""
    if uri == CORE_URI:
        return load_core(root, encoding=encoding).render()
    if uri.startswith(FILE_URI_PREFIX):
        return read(root, unquote(uri[len(FILE_URI_PREFIX):])).text
    raise InvalidArgument(f"unknown resource {uri!r}: use {CORE_URI} or {FILE_URI_PREFIX}<path of a memory file>")


def resource_list(toolbox: ToolBox) -> list[dict]:
    """The resources of ``toolbox``'s memory, from its daemon when one serves it."""
    found = forward.resource(toolbox, None) if toolbox.daemon else None
    return memory_resources(toolbox.root) if found is None else found


def _memory_resources(toolbox: ToolBox) -> list:
    import mcp_types as types

    return [types.Resource(**r) for r in resource_list(toolbox)]


def read_resource_text(toolbox: ToolBox, uri: str) -> str:
    """The text of the resource at ``uri``, from ``toolbox``'s daemon when one serves it."""
    text = forward.resource(toolbox, uri) if toolbox.daemon else None
    return resource_text(toolbox.root, uri, encoding=toolbox.encoding) if text is None else text


def build_server(toolbox: ToolBox, *, name: str = "memsearch", select=None):
    """The low-level MCP :class:`mcp.server.Server` exposing ``toolbox``'s tools and the memory resources.

    ``select``: ``ctx -> ToolBox``, the toolbox of each request, for a server of many roots
    (:mod:`memsearch.harness.tenants`); ``toolbox`` then only lists the tools (its ``specs``)."""
    pick = select or (lambda ctx: toolbox)
    import anyio.to_thread
    import mcp_types as types
    from mcp.server import Server
    from mcp.shared.exceptions import MCPError

    annotations = types.ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
    writes = types.ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=False)
    tools = [types.Tool(name=t.name, description=t.description, input_schema=t.schema(), output_schema=t.output_schema(),
                        annotations=annotations if t in TOOLS else writes) for t in toolbox.specs]

    async def list_tools(ctx, params) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        result = await anyio.to_thread.run_sync(run_tool, pick(ctx), params.name, params.arguments)
        text = json.dumps(result, ensure_ascii=False)
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)],
                                    structured_content=result, is_error="error" in result)

    async def list_resources(ctx, params) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=await anyio.to_thread.run_sync(_memory_resources, pick(ctx)))

    async def list_resource_templates(ctx, params) -> types.ListResourceTemplatesResult:
        template = types.ResourceTemplate(uri_template=FILE_TEMPLATE["uriTemplate"], name=FILE_TEMPLATE["name"],
                                          title=FILE_TEMPLATE["title"], description=FILE_TEMPLATE["description"],
                                          mime_type=FILE_TEMPLATE["mimeType"])
        return types.ListResourceTemplatesResult(resource_templates=[template])

    async def read_resource(ctx, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        uri = str(params.uri)
        try:
            text = await anyio.to_thread.run_sync(read_resource_text, pick(ctx), uri)
        except (MemsearchError, OSError) as exc:
            message = exc.render(TOOLS_AUDIENCE) if isinstance(exc, MemsearchError) else str(exc)
            raise MCPError(code=types.INVALID_PARAMS, message=message, data={"uri": uri, "type": type(exc).__name__}) from None
        return types.ReadResourceResult(contents=[types.TextResourceContents(uri=uri, mime_type="text/markdown", text=text)])

    return Server(name, version=__version__, title="memsearch: agent memory", instructions=INSTRUCTIONS,
                  on_list_tools=list_tools, on_call_tool=call_tool, on_list_resources=list_resources,
                  on_list_resource_templates=list_resource_templates, on_read_resource=read_resource)


def warm_in_background(toolbox: ToolBox) -> None:
    def run() -> None:
        try:
            toolbox.warm()
        except Exception as exc:  # the first search reports it properly
            log.warning("memsearch: warm-up failed (%s: %s); searches will retry", type(exc).__name__, exc)

    threading.Thread(target=run, name="memsearch-warm", daemon=True).start()


def log_to_stderr() -> None:
    """Send the server's log to stderr at ``MEMSEARCH_LOG_LEVEL``: called by the servers' entry points
    (:func:`.stdio.serve`, :func:`serve_http`, the tenants' server) when they start, never on import."""
    logging.basicConfig(stream=sys.stderr, level=settings.get("log_level"),
                        format="%(asctime)s %(name)s %(levelname)s: %(message)s")


def check_loopback(host: str) -> str:
    """``host`` if it is a loopback address; memsearch never serves memory to the network."""
    try:
        loopback = host in LOOPBACK_NAMES or ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        raise InvalidArgument(f"--host {host!r} is not a loopback address: the server has no authentication, "
                              "so it only listens on 127.0.0.1, ::1 or localhost")
    return host.strip("[]")


def serve_http(toolbox: ToolBox, *, host: str = "127.0.0.1", port: int = DEFAULT_PORT, path: str = "/mcp", warm: bool = True) -> None:
    """Serve ``toolbox`` over streamable HTTP at ``http://host:port/path`` (loopback only)."""
    import uvicorn

    host = check_loopback(host)
    log_to_stderr()
    server = build_server(toolbox)
    app = server.streamable_http_app(streamable_http_path=path, host=host)
    if warm:
        warm_in_background(toolbox)
    shown = f"[{host}]" if ":" in host else host
    print(f"memsearch: serving {toolbox.root} over MCP streamable HTTP at http://{shown}:{port}{path}", file=sys.stderr, flush=True)
    uvicorn.Server(uvicorn.Config(BoundedBodies(app), host=host, port=port, log_level="warning")).run()
