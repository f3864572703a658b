"""The arguments and options of ``memsearch search|read|ls|core``, declared once.

The typer commands (:mod:`.app`) build their parameters from here (:func:`typer_param`), and
the fast path (:mod:`.fast`) reads the same declarations to parse a plain command line before
typer is imported. Light on purpose: no typer at import.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from ..engine.search.timeline_budget import describe as describe_timeline

__all__ = ["Param", "COMMANDS", "param", "typer_param", "check_cli_search"]

REQUIRED = ...


class Param(NamedTuple):
    """One parameter: ``flags`` empty for a positional argument; ``flag``: an option without a value.
    ``fast``: the fast path understands it (else a command line using it goes to typer). A named tuple, not a dataclass:
    the daemon's client imports it, and dataclasses (with inspect) cost it about 10 ms of CPU."""

    name: str
    flags: tuple[str, ...] = ()
    default: Any = None
    help: str = ""
    flag: bool = False
    min: int | None = None
    max: int | None = None
    fast: bool = True
    metavar: str | None = None
    hidden: bool = False

    @property
    def positional(self) -> bool:
        return not self.flags


ROOT = Param("root", default=REQUIRED, help="The memory root: the directory holding the root MEMORY.md.")
JSON = Param("as_json", ("--json",), False, "Print one JSON object instead of a readable report.", flag=True)
LOCAL = Param("local", ("--local",), False,
              "Work in-process even when the memsearch service (or a watch daemon) serves this index.", flag=True,
              fast=False)
#: The fast path's mark on a command line it hands to typer after asking the service (none answered): the full CLI
#: does not ask again, but, unlike ``--local``, a search still leaves the embedding of a never-indexed tree to the
#: service that ask started.
ASKED = Param("asked", ("--asked",), False, "The fast path asked the service already.", flag=True, fast=False,
              hidden=True)
NO_DAEMON = Param("no_daemon", ("--no-daemon",), False, "Do not start the memsearch service in the background if none "
                  "runs (default: $MEMSEARCH_AUTOSTART).", flag=True)
#: read, ls and core never start a daemon (they need no model): ``--no-daemon`` is still accepted there, and does nothing.
NO_DAEMON_KEPT = NO_DAEMON._replace(help="Accepted, and does nothing: this command never starts the service.", hidden=True)
DB = Param("db", ("--db",), None, "Index directory, or s3://bucket/prefix "
           "(default: $MEMSEARCH_DB, else ROOT/.memsearch).")
MODEL = Param("model", ("--model",), None, "Embedding model: a name from models.toml or a local model directory.")

COMMANDS: dict[str, tuple[Param, ...]] = {
    "search": (
        ROOT,
        Param("query", default=None, help="What to look for."),
        Param("k", ("-k",), 10, "Number of hits.", min=1, max=1000),
        Param("scope", ("--scope",), None, "Only this directory subtree, e.g. projects/atlas."),
        Param("mode", ("--mode",), "hybrid", "hybrid, vector, keyword, or timeline (the best passages of each file "
              f"or dated session on the topic, oldest first, {describe_timeline()}: for summaries "
              "and the order of events)."),
        Param("since", ("--since",), None, "Only files dated on or after YYYY-MM-DD."),
        Param("until", ("--until",), None, "Only files dated on or before YYYY-MM-DD."),
        Param("queries", ("--queries",), None, 'Batch: a JSONL file of {"qid", "query", "scope"?}; one JSON line '
              "out per query.", fast=False),
        DB, MODEL,
        Param("no_sync", ("--no-sync",), False, "Search the index as it is, without syncing changed files first.",
              flag=True),
        JSON, LOCAL, NO_DAEMON, ASKED,
    ),
    "read": (
        ROOT,
        Param("path", default=REQUIRED, help="A memory file, relative to the root."),
        Param("lines", ("--lines",), None, "Line range A:B (1-based, inclusive); A: or :B too."),
        DB, JSON, LOCAL, NO_DAEMON_KEPT, ASKED,
    ),
    "ls": (
        ROOT,
        Param("directory", default=".", help="A memory directory, relative to the root."),
        DB, JSON, LOCAL, NO_DAEMON_KEPT, ASKED,
    ),
    "core": (ROOT, DB, JSON, LOCAL, NO_DAEMON_KEPT, ASKED),
}


def param(command: str, name: str) -> Param:
    return next(p for p in COMMANDS[command] if p.name == name)


def typer_param(command: str, name: str):
    """The typer ``Argument`` or ``Option`` of one declared parameter (typer imported here, not at import)."""
    import typer

    p = param(command, name)
    if p is ROOT:
        from .options import root_arg

        return root_arg(help=p.help)
    if p.positional:
        return typer.Argument(p.default, help=p.help, show_default=p.default not in (None, REQUIRED))
    return typer.Option(p.default, *p.flags, help=p.help, min=p.min, max=p.max, metavar=p.metavar, hidden=p.hidden)


def check_cli_search(root, query, k=10, scope=None, mode="hybrid", since=None, until=None):
    """A search's arguments as the CLI checks them, on the fast path (:mod:`.fast`) and the full one (:mod:`.app`):
    :func:`~memsearch.engine.search.args.check_search`'s checks, and a ``--scope`` that is no directory of the memory
    is an error (:class:`~memsearch.errors.MemoryFileNotFound`), not "no hits" (the library's search finds nothing)."""
    from ..engine.search.args import check_search

    return check_search(root, query, k, scope, mode, since, until, scope_must_exist=True)
