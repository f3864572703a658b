"""How the CLI prints results, shared by the typer commands and the fast daemon path (:mod:`.fast`).

Light on purpose (no typer, and rich only once something is printed with it: ``--json`` output
never loads it): a command answered by the daemon imports this module, the lean client and
nothing heavier. Every printer takes JSON-ready data (what the daemon sends, or a local result's
``to_dict()``), so output is the same whichever answered. ``out`` and ``err`` (module attributes)
are the shared rich consoles of stdout and stderr.
"""

from __future__ import annotations

import json
import sys

__all__ = ["out", "err", "console", "escape", "emit_json", "ns", "warn", "print_error", "print_core",  # noqa: F822 (out, err: module __getattr__)
           "print_listing", "print_read", "print_hits"]

_CONSOLES: dict = {}


def console(stderr: bool = False):
    """The shared rich console of stdout (or stderr), made on first use."""
    key = "err" if stderr else "out"
    if key not in _CONSOLES:
        from rich.console import Console  # rich costs about as much as Python's own start: loaded when used

        _CONSOLES[key] = Console(stderr=stderr, highlight=False, soft_wrap=True)
    return _CONSOLES[key]


def __getattr__(name: str):
    if name in ("out", "err"):
        return console(stderr=name == "err")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def escape(text: str) -> str:
    """``text`` with rich markup escaped."""
    from rich.markup import escape as rich_escape

    return rich_escape(text)


def emit_json(data) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")


def ns(data):
    """JSON data as attribute objects (lists for tuples), for printers written with attributes."""
    from types import SimpleNamespace

    if isinstance(data, dict):
        return SimpleNamespace(**{k: ns(v) for k, v in data.items()})
    if isinstance(data, (list, tuple)):
        return [ns(v) for v in data]
    return data


def warn(message: str) -> None:
    """One warning line on stderr (a daemon that did not answer, an index not synced)."""
    console(stderr=True).print(f"[yellow]warning:[/yellow] {escape(message)}")


def print_error(exc: Exception) -> None:
    console(stderr=True).print(f"[red]error:[/red] {escape(str(exc))}")


def print_core(data: dict) -> None:
    sys.stdout.write(data["rendered"] + "\n")
    stats = f"{len(data['files'])} core files, {data['total_tokens']:,} tokens ({data['encoding']})"
    console(stderr=True).print(f"[dim]{stats}[/dim]")


def print_listing(data: dict) -> None:
    from rich.table import Table

    listing = ns(data)
    console().print(f"[bold]{escape(listing.path)}[/bold] — {escape(listing.title)}")
    if listing.summary:
        console().print(f"  {escape(listing.summary)}")
    if listing.dirs:
        table = Table("directory", "MEMORY.md", show_edge=False, box=None, pad_edge=False)
        for d in listing.dirs:
            table.add_row(escape(d.path + "/"), escape(f"{d.title}: {d.summary}" if d.summary else d.title))
        console().print(table)
    if listing.files:
        table = Table("file", "tokens", "title", show_edge=False, box=None, pad_edge=False)
        for f in listing.files:
            table.add_row(escape(f.path), f"{f.tokens:,}", escape(f.title))
        console().print(table)


def print_read(data: dict) -> None:
    text = data["text"]
    sys.stdout.write(text if text.endswith("\n") or not text else text + "\n")


def print_hits(hits: list[dict]) -> None:
    hits = ns(hits)
    if not hits:
        console().print("[dim]no hits[/dim]")
    for rank, hit in enumerate(hits, 1):
        where = f"{hit.path}:{hit.start_line}-{hit.end_line}"
        console().print(f"[bold]{rank}. {escape(where)}[/bold]  [dim]{hit.score:.4f}[/dim]  {escape(hit.heading)}"
                  + (f"  [dim]{hit.date}[/dim]" if hit.date else "")
                  + ("  [yellow]stale: changed since indexed[/yellow]" if getattr(hit, "stale", False) else "")
                  + ("  [yellow]partial: still being indexed[/yellow]" if getattr(hit, "partial", False) else ""))
        if hit.memory_md:
            console().print(f"   [cyan]{escape(hit.memory_md.path)}[/cyan]: {escape(hit.memory_md.title)}")
        snippet = hit.text.strip().splitlines()
        for line in snippet[:6]:
            console().print(f"   │ {escape(line)}")
        if len(snippet) > 6:
            more = f"memsearch read ROOT {escape(hit.path)} --lines {hit.start_line}:{hit.end_line}"
            console().print(f"   │ [dim]… {len(snippet) - 6} more lines ({more})[/dim]")
