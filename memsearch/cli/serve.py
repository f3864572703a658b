"""``memsearch serve``: the MCP server command (registered on the main app by :func:`register`).

Kept out of :mod:`memsearch.cli` so the server's dependencies load only when it runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from ..errors import IndexLocked, InvalidArgument
from .options import DbOpt, ModelOpt, checked_option, root_arg

__all__ = ["register"]


def _tool_budget():
    from ..harness.budget import RULE

    return RULE


def register(app: typer.Typer) -> None:
    """Add the ``serve`` command to ``app``."""

    @app.command("serve")
    def serve(
        root: Optional[Path] = root_arg(None),
        roots: Optional[Path] = typer.Option(
            None,
            "--roots",
            help="Serve many memory roots instead (needs --http): each child directory of this one is a tenant,"
                " at /tenants/NAME/mcp; --db may name each index with {tenant}.",
        ),
        db: Optional[str] = DbOpt,
        model: Optional[str] = ModelOpt,
        budget: Optional[int] = checked_option(
            "--budget",
            _tool_budget,
            help="Most tokens one tool result may take (default 4000); longer results are cut with a note.",
        ),
        http: bool = typer.Option(
            False, "--http", help="Serve streamable HTTP on a loopback address instead of stdio."
        ),
        host: str = typer.Option(
            "127.0.0.1", "--host", help="With --http: loopback address to listen on (127.0.0.1, ::1 or localhost)."
        ),
        port: int = typer.Option(8765, "--port", help="With --http: port to listen on.", min=1, max=65535),
        warm: bool = typer.Option(
            True, "--warm/--no-warm", help="Load the model and sync the index at start, so the first search is fast."
        ),
        writable: bool = typer.Option(
            False,
            "--writable",
            help="Also expose the memory tool (view, create, str_replace, insert, delete, rename), which writes memory.",
        ),
        watch: bool = typer.Option(
            False,
            "--watch",
            help="Also be the daemon of the index: keep it fresh and answer other clients on its socket.",
        ),
        read_only: bool = typer.Option(
            False,
            "--read-only",
            help="Be a read replica (with --http): hold no writer lease, never index, follow the commits of the"
            " index's writer (every $MEMSEARCH_FOLLOW_S seconds) and answer from them; see docs/scale-out.md.",
        ),
    ) -> None:
        """Run a Model Context Protocol server on stdio (or --http): memory tools and MEMORY.md resources.

        Writes memory only with --writable."""
        from ..harness.mcp import check_loopback, serve_http
        from ..harness.stdio import serve as serve_stdio
        from ..harness.tools import ToolBox

        if (root is None) == (roots is None):
            raise InvalidArgument(
                "give either a memory ROOT or --roots PARENT (a folder of memory roots, one per tenant)"
            )
        if http:
            check_loopback(host)  # refuse before loading anything
        if read_only:
            if roots is not None or not http or watch or writable:
                raise InvalidArgument(
                    "--read-only serves one ROOT over --http from an index another process writes: give ROOT and "
                    "--http, without --roots, --watch or --writable"
                )
            from ..harness.replica import Replica, serve_replica_http

            serve_replica_http(Replica(root, db=db, model=model, budget=budget), host=host, port=port, warm=warm)
            return
        if roots is not None:
            if not http or watch:
                raise InvalidArgument(
                    "--roots serves each tenant at its own URL: add --http (and no --watch: run "
                    "`memsearch watch PARENT/NAME` for a tenant whose index should be kept fresh)"
                )
            from ..harness.tenants import Tenants, serve_tenants_http

            serve_tenants_http(
                Tenants(roots, db=db, model=model, budget=budget, writable=writable), host=host, port=port, warm=warm
            )
            return
        from ..harness.forward import starting_wait

        # a thin client of the index's daemon (started here when none runs): no model in this process
        toolbox = ToolBox(root, budget=budget, db=db, model=model, writable=writable,
                          wait=0.0 if watch else starting_wait())
        watcher = _start_watcher(toolbox.root, db, model) if watch else None
        try:
            if http:
                serve_http(toolbox, host=host, port=port, warm=warm)
            else:
                serve_stdio(toolbox, warm=warm)
        finally:
            if watcher is not None:
                watcher.close()


def _start_watcher(root: Path, db: Optional[str], model: Optional[str]):
    """The daemon in this process (its searches reach it through its socket), or None if another writer runs."""
    import sys

    from ..service.host import WatchThread

    try:
        return WatchThread(root, db=db, model=model).start()
    except IndexLocked as exc:
        print(f"memsearch: --watch: {exc}; serving without a watcher of its own", file=sys.stderr, flush=True)
        return None
