"""A read replica's server: ``memsearch serve ROOT --http --db s3://... --read-only`` answers the memory tools
over MCP HTTP and the daemon protocol from an index it follows (:mod:`memsearch.engine.storage.follow`),
holding no writer lease and writing nothing.

Searches come from the index on the store; ``memory_read``, ``memory_list``, ``memory_core`` and the
``MEMORY.md`` of each hit come from ``ROOT``, the replica's view of the memory files: the writer's tree on
a shared file system (NFS, EFS: mounted read-only is enough) or a copy synced from it. Hits whose file
differs in that view from what the index recorded say ``stale`` (see docs/scale-out.md). Behind a load
balancer each replica answers ``GET /healthz`` with its status (200): the version it serves and the age
of its last successful poll of the store.
"""

from __future__ import annotations

import json
import sys
import threading

from .tools import ToolBox

__all__ = ["Replica", "serve_replica_http", "HEALTH_PATH"]

#: The load balancer's health check: 200 and the replica's status as JSON.
HEALTH_PATH = "/healthz"


class Replica:
    """One read-only index of ``root`` on ``db``, its :class:`~memsearch.engine.storage.follow.Follower`,
    the :class:`ToolBox` answering the tools from it, and (``socket``) its daemon-protocol server.
    ``start()`` pins the latest version before returning; ``close()`` stops everything."""

    def __init__(self, root, *, db=None, model: str | None = None, budget: int | None = None,
                 interval: float | None = None, socket: bool = True):
        from ..engine.index import MemoryIndex
        from ..engine.storage.follow import Follower

        self.index = MemoryIndex(root, db=db, model=model, read_only=True)
        self.follower = Follower(self.index, interval)
        self.toolbox = ToolBox(self.index.root, index=self.index, budget=budget, sync=False, daemon=False)
        self.root, self.socket, self.server = self.index.root, socket, None

    def start(self) -> "Replica":
        self.follower.start()
        if self.socket:
            self.server = self._serve_socket()
        return self

    def _serve_socket(self):
        """The daemon protocol on this machine's socket of the index, unless a daemon already answers there."""
        from ..service.client import ask
        from ..service.server import Server

        where = self.index.where
        if ask(self.root, "status", {}, db=where, timeout=1.0) is not None:
            print(f"memsearch: a daemon already answers on {where.socket}: the replica serves HTTP only",
                  file=sys.stderr, flush=True)
            return None
        return Server(self.index, status=self.status, sync=None).start()

    def status(self) -> dict:
        """The follower's status, the versions served and the rows, for ``/healthz`` and the ``status`` method."""
        pinned = self.index.store.pinned
        return self.follower.status() | {
            "state": "replica", "root": str(self.root), "db": self.index.location,
            "version": pinned[0] if pinned else None, "files_version": pinned[1] if pinned else None,
            "rows": self.index.searcher.snapshot()[1] if pinned else 0,
            "socket": str(self.server.path) if self.server is not None else None}

    def warm(self) -> None:
        """Load the model and run one search, so that the first client's search is fast."""
        self.index.embedder.embed_query("warm up")
        self.index.search("warm up", k=1)

    def close(self) -> None:
        if self.server is not None:
            self.server.close()
        self.follower.close()
        self.index.close()


class Health:
    """ASGI middleware: ``GET /healthz`` answers the replica's status; everything else goes to the app."""

    def __init__(self, app, replica: Replica) -> None:
        self.app, self.replica = app, replica

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http" and scope["path"] == HEALTH_PATH:
            body = json.dumps(self.replica.status()).encode()
            await send({"type": "http.response.start", "status": 200,
                        "headers": [(b"content-type", b"application/json"),
                                    (b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, send)


def serve_replica_http(replica: Replica, *, host: str = "127.0.0.1", port: int = 8765, path: str = "/mcp",
                       warm: bool = True) -> None:
    """Serve ``replica`` over streamable HTTP at ``http://host:port/path`` (loopback only) until stopped."""
    import uvicorn

    from .bounds import BoundedBodies
    from .mcp import build_server, check_loopback, log_to_stderr

    host = check_loopback(host)
    log_to_stderr()
    replica.start()
    try:
        app = build_server(replica.toolbox).streamable_http_app(streamable_http_path=path, host=host)
        if warm:
            threading.Thread(target=_warm, args=(replica,), name="memsearch-warm", daemon=True).start()
        shown = f"[{host}]" if ":" in host else host
        print(f"memsearch: replica of {replica.index.location} serving {replica.root} over MCP streamable HTTP at "
              f"http://{shown}:{port}{path} (read-only, following every {replica.follower.interval:g} s)",
              file=sys.stderr, flush=True)
        config = uvicorn.Config(BoundedBodies(Health(app, replica)), host=host, port=port, log_level="warning")
        uvicorn.Server(config).run()
    finally:
        replica.close()


def _warm(replica: Replica) -> None:
    try:
        replica.warm()
    except Exception as exc:  # noqa: BLE001 - the first search reports it properly
        print(f"memsearch: warm-up failed ({type(exc).__name__}: {exc}); searches will retry", file=sys.stderr,
              flush=True)
