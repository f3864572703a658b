"""The ``memsearch`` command line: thin commands over the library.

Only this module turns typed errors into messages: a :class:`MemsearchError` prints one line
``error: ...`` (which says how to fix it) and exits with status 2; never a traceback.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from .errors import MemsearchError

__all__ = ["app", "main"]

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Search-indexed memory for AI agents (Agent Memory directories of Markdown).",
    pretty_exceptions_enable=False,
)
out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)

RootArg = typer.Argument(..., help="The memory root: the directory holding the root MEMORY.md.", show_default=False)
JsonOpt = typer.Option(False, "--json", help="Print one JSON object instead of a readable report.")


def emit_json(data) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")


@app.command()
def validate(
    root: Path = RootArg,
    as_json: bool = JsonOpt,
    budget: Optional[int] = typer.Option(None, help="Core memory budget in tokens (default 30,000)."),
    window: Optional[int] = typer.Option(None, help="Context window in tokens; the budget becomes a share of it."),
    share: Optional[float] = typer.Option(None, help="Share of --window for core memory (default 0.15)."),
) -> None:
    """Check a memory root against the Agent Memory spec. Exit 0 valid, 1 invalid, 2 unusable root."""
    from .validator import validate as run_validate

    report = run_validate(root, budget=budget, window=window, share=share)
    if as_json:
        emit_json(report.to_dict())
    else:
        status = "[green]valid[/green]" if report.valid else "[red]invalid[/red]"
        out.print(f"{escape(report.root)}: {status} Agent Memory "
                  f"({len(report.memory_dirs)} memory directories, core memory {report.core_tokens:,} / {report.core_budget:,} tokens)")
        for issue in report.errors:
            out.print(f"  [red]error[/red]   {issue.code:<20} {escape(issue.path)}: {escape(issue.message)}")
        for issue in report.warnings:
            out.print(f"  [yellow]warning[/yellow] {issue.code:<20} {escape(issue.path)}: {escape(issue.message)}")
    raise typer.Exit(0 if report.valid else 1)


@app.command()
def core(root: Path = RootArg, as_json: bool = JsonOpt) -> None:
    """Print core memory (root Markdown) as it goes into a system prompt."""
    from .contract import load_core

    memory = load_core(root)
    if as_json:
        emit_json(memory.to_dict())
        return
    sys.stdout.write(memory.render() + "\n")
    err.print(f"[dim]{len(memory.files)} core files, {memory.total_tokens:,} tokens ({memory.encoding})[/dim]")


@app.command("ls")
def list_command(
    root: Path = RootArg,
    directory: str = typer.Argument(".", help="A memory directory, relative to the root."),
    as_json: bool = JsonOpt,
) -> None:
    """List a memory directory: its child memory directories (with their MEMORY.md summary) and files."""
    from .contract import list_dir

    listing = list_dir(root, directory)
    if as_json:
        emit_json(listing.to_dict())
        return
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


@app.command("read")
def read_command(
    root: Path = RootArg,
    path: str = typer.Argument(..., help="A memory file, relative to the root.", show_default=False),
    lines: Optional[str] = typer.Option(None, "--lines", help="Line range A:B (1-based, inclusive); A: or :B too."),
    as_json: bool = JsonOpt,
) -> None:
    """Print one memory file, or a line range of it. Nothing outside the root is ever read."""
    from .contract import read

    result = read(root, path, lines)
    if as_json:
        emit_json(result.to_dict())
        return
    sys.stdout.write(result.text if result.text.endswith("\n") or not result.text else result.text + "\n")


def main(argv: list[str] | None = None) -> int:
    """Console entry point: run the app, turning library errors into one-line messages."""
    try:
        app(args=argv, prog_name="memsearch")  # standalone: usage errors print and exit 2
    except MemsearchError as exc:
        err.print(f"[red]error:[/red] {escape(str(exc))}")
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
