"""How the CLI prints results, shared by the typer commands and the fast daemon path (:mod:`.fast`).

Light on purpose (rich only, no typer): a command answered by the daemon imports this module,
the lean client and nothing heavier. Every printer takes JSON-ready data (what the daemon sends,
or a local result's ``to_dict()``), so output is the same whichever answered.
"""

from __future__ import annotations

import json
import sys

from rich.console import Console
from rich.markup import escape

__all__ = ["out", "err", "emit_json", "ns", "warn", "print_error", "print_core", "print_listing",
           "print_read", "print_hits"]

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)


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
    err.print(f"[yellow]warning:[/yellow] {escape(message)}")


def print_error(exc: Exception) -> None:
    err.print(f"[red]error:[/red] {escape(str(exc))}")


def print_core(data: dict) -> None:
    sys.stdout.write(data["rendered"] + "\n")
    err.print(f"[dim]{len(data['files'])} core files, {data['total_tokens']:,} tokens ({data['encoding']})[/dim]")


def print_listing(data: dict) -> None:
    from rich.table import Table

    listing = ns(data)
    out.print(f"[bold]{escape(listing.path)}[/bold] — {escape(listing.title)}")
    if listing.summary:
        out.print(f"  {escape(listing.summary)}")
    if listing.dirs:
        table = Table("directory", "MEMORY.md", show_edge=False, box=None, pad_edge=False)
        for d in listing.dirs:
            table.add_row(escape(d.path + "/"), escape(f"{d.title}: {d.summary}" if d.summary else d.title))
        out.print(table)
    if listing.files:
        table = Table("file", "tokens", "title", show_edge=False, box=None, pad_edge=False)
        for f in listing.files:
            table.add_row(escape(f.path), f"{f.tokens:,}", escape(f.title))
        out.print(table)


def print_read(data: dict) -> None:
    text = data["text"]
    sys.stdout.write(text if text.endswith("\n") or not text else text + "\n")


def print_hits(hits: list[dict]) -> None:
    hits = ns(hits)
    if not hits:
        out.print("[dim]no hits[/dim]")
    for rank, hit in enumerate(hits, 1):
        where = f"{hit.path}:{hit.start_line}-{hit.end_line}"
        out.print(f"[bold]{rank}. {escape(where)}[/bold]  [dim]{hit.score:.4f}[/dim]  {escape(hit.heading)}"
                  + (f"  [dim]{hit.date}[/dim]" if hit.date else "")
                  + ("  [yellow]stale: changed since indexed[/yellow]" if getattr(hit, "stale", False) else ""))
        if hit.memory_md:
            out.print(f"   [cyan]{escape(hit.memory_md.path)}[/cyan]: {escape(hit.memory_md.title)}")
        snippet = hit.text.strip().splitlines()
        for line in snippet[:6]:
            out.print(f"   │ {escape(line)}")
        if len(snippet) > 6:
            out.print(f"   │ [dim]… {len(snippet) - 6} more lines (memsearch read ROOT {escape(hit.path)} --lines {hit.start_line}:{hit.end_line})[/dim]")
