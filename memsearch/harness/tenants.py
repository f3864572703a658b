"""Many memory roots behind one MCP server: each child directory of a parent is a tenant, served at
its own HTTP path, with one model and one bounded LRU of open indexes for all of them.

``memsearch serve --roots PARENT --http`` serves tenant ``ada`` (the memory root ``PARENT/ada``) at
``http://127.0.0.1:8765/tenants/ada/mcp``; ``--db 's3://bucket/tenants/{tenant}'`` puts each tenant's
index under its own prefix (default: ``PARENT/ada/.memsearch``). The tenant is chosen by the URL, never
by a tool argument: the model cannot name another tenant's memory, and an operator's gateway can
authorize each agent for its own path. A tenant name is one plain child name (letters, digits, ``.``,
``_``, ``-``; not hidden), checked on the resolved path too, so a symlink out of the parent is refused;
anything else gets ``404`` before the MCP layer sees the request.
"""

from __future__ import annotations

import json
import re
import sys
import threading
from collections import OrderedDict
from pathlib import Path

from .. import settings
from ..errors import InvalidArgument, NotAMemoryRoot, shown
from ..location import is_remote, parse_remote
from .tools import MEMORY_TOOL, TOOLS, ToolBox

__all__ = ["Tenants", "serve_tenants_http", "TENANT_PATH", "TENANT_PLACEHOLDER"]

#: The URL path of one tenant's MCP endpoint.
TENANT_PATH = "/tenants/{tenant}/mcp"
#: Where a tenant's name goes in a ``--db`` template (replaced as text, never formatted).
TENANT_PLACEHOLDER = "{tenant}"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
#: Toolboxes kept (small objects: a root, settings, a lock); the open indexes have their own LRU.
MAX_TOOLBOXES = 4096


class Tenants:
    """The tenants under ``parent``: each one's memory root, index address and :class:`ToolBox`."""

    def __init__(self, parent, *, db=None, model: str | None = None, budget: int | None = None, writable: bool = False):
        path = Path(parent).expanduser()
        if not path.is_dir():
            raise NotAMemoryRoot(f"--roots {shown(str(parent))} is not a directory: pass the folder whose child "
                                 "directories are the tenants' memory roots")
        self.parent = path.resolve()
        template = settings.get("db", db)
        if template is not None and TENANT_PLACEHOLDER not in str(template):
            raise InvalidArgument(f"--db {shown(str(template))} names one index for every tenant: put {TENANT_PLACEHOLDER} "
                                  "where each tenant's name goes, e.g. 's3://bucket/tenants/{tenant}', or leave --db out "
                                  "(each tenant's index then lives in its own root)")
        self.template = None if template is None else str(template)
        if self.template is not None and is_remote(self.template):  # a bad address is the operator's, said at start,
            try:  # not to every model's call
                parse_remote(self.db("tenant"))
            except InvalidArgument as exc:
                raise InvalidArgument(f"--db {shown(self.template)}: {exc.text}", hint=exc.hint) from None
        self.model, self.budget, self.writable = model, budget, writable
        self.specs = TOOLS + (MEMORY_TOOL,) if writable else TOOLS
        self._boxes: OrderedDict[str, ToolBox] = OrderedDict()
        self._lock = threading.Lock()

    def root(self, name) -> Path:
        """The memory root of tenant ``name``; :class:`InvalidArgument` for a name that is not a plain
        child name, :class:`NotAMemoryRoot` for one that is no directory of the parent."""
        if not isinstance(name, str) or not _NAME.fullmatch(name) or name in (".", ".."):
            raise InvalidArgument(f"tenant {shown(name)} is not a tenant name: use letters, digits, '.', '_' and '-', "
                                  "not starting with '.' (the name of a directory in the parent)")
        path = self.parent / name
        resolved = path.resolve()
        if resolved.parent != self.parent or resolved.name != name or not resolved.is_dir():
            raise NotAMemoryRoot(f"there is no tenant {name!r}: no directory of that name in the parent of the tenants")
        return resolved

    def db(self, name: str) -> str | None:
        """Tenant ``name``'s index: the template with its name in, or None (its root's ``.memsearch``)."""
        return None if self.template is None else self.template.replace(TENANT_PLACEHOLDER, name)

    def toolbox(self, name) -> ToolBox:
        """Tenant ``name``'s toolbox (kept for the next call; its index lives in the process LRU)."""
        root = self.root(name)
        with self._lock:
            box = self._boxes.get(name)
            if box is not None and box.root == root:
                self._boxes.move_to_end(name)
                return box
        box = ToolBox(root, budget=self.budget, db=self.db(name), model=self.model, writable=self.writable)
        with self._lock:
            self._boxes[name] = box
            while len(self._boxes) > MAX_TOOLBOXES:
                self._boxes.popitem(last=False)
        return box

    def names(self) -> list[str]:
        """The tenants there are now (the valid child directory names, sorted)."""
        found = []
        for child in sorted(self.parent.iterdir()):
            try:
                self.root(child.name)
            except (InvalidArgument, NotAMemoryRoot):
                continue
            found.append(child.name)
        return found


class TenantGate:
    """ASGI middleware: a request for ``/tenants/NAME/...`` goes on only when ``NAME`` is a tenant;
    anything else under ``/tenants/`` is answered ``404`` with a JSON error naming the fix."""

    def __init__(self, app, tenants: Tenants) -> None:
        self.app, self.tenants = app, tenants

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http":
            parts = scope["path"].split("/")
            if len(parts) < 4 or parts[1] != "tenants" or parts[3:] != ["mcp"]:
                return await _answer(send, 404, f"no such endpoint: use {TENANT_PATH}")
            try:
                self.tenants.root(parts[2])
            except (InvalidArgument, NotAMemoryRoot) as exc:
                return await _answer(send, 404, str(exc))
        return await self.app(scope, receive, send)


async def _answer(send, status: int, message: str) -> None:
    body = json.dumps({"error": {"message": message}}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


def _select(tenants: Tenants):
    def select(ctx) -> ToolBox:
        request = getattr(ctx, "request", None)
        name = getattr(request, "path_params", {}).get("tenant") if request is not None else None
        return tenants.toolbox(name)
    return select


def serve_tenants_http(tenants: Tenants, *, host: str = "127.0.0.1", port: int = 8765, warm: bool = True) -> None:
    """Serve every tenant of ``tenants`` over streamable HTTP at ``http://host:port/tenants/NAME/mcp``
    (loopback only). ``warm`` loads the shared model at start (no tenant's index is opened)."""
    import uvicorn

    from .bounds import BoundedBodies
    from .mcp import build_server, check_loopback, log_to_stderr

    host = check_loopback(host)
    log_to_stderr()
    server = build_server(tenants, select=_select(tenants))
    app = server.streamable_http_app(streamable_http_path=TENANT_PATH, host=host)
    if warm:
        threading.Thread(target=_load_model, args=(tenants.model,), name="memsearch-warm", daemon=True).start()
    shown_host = f"[{host}]" if ":" in host else host
    print(f"memsearch: serving the tenants of {tenants.parent} ({len(tenants.names())} now) over MCP streamable HTTP at "
          f"http://{shown_host}:{port}{TENANT_PATH}", file=sys.stderr, flush=True)
    uvicorn.Server(uvicorn.Config(BoundedBodies(TenantGate(app, tenants)), host=host, port=port, log_level="warning")).run()


def _load_model(model: str | None) -> None:
    from ..engine.embed.embedder import load_embedder

    try:
        load_embedder(model).embed_query("warm up")
    except Exception as exc:  # noqa: BLE001 - the first search reports it properly
        print(f"memsearch: warm-up failed ({type(exc).__name__}: {exc}); searches will retry", file=sys.stderr, flush=True)
