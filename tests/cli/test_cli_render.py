"""The CLI's plain printer (memsearch.cli.render.line) writes the bytes rich wrote for the same markup.

Search hits, warnings and errors are printed without rich (it cost more than Python's own start
on every daemon-answered search). The reference here is rich itself, printing the markup the
printers used before, on a pipe and on a terminal, for ordinary and awkward text.
"""

from __future__ import annotations

import io
import subprocess
import sys

import pytest
from rich.console import Console
from rich.markup import escape

from memsearch.cli import render

AWKWARD = [
    "plain words",
    "brackets [bold]not markup[/bold] and \\[x] and [link=y]",
    "a\ttab\tor two",
    "control\rcodes\x07\x08\x0b\x0cgone",
    "wide 中文字 and accents é",
    "  leading and trailing  ",
    "",
]


def _hit(i: int, heading: str, **extra) -> dict:
    hit = {"path": f"notes/n{i}.md", "start_line": 3, "end_line": 9, "score": 0.123456, "heading": heading,
           "date": None, "memory_md": None, "text": heading, "stale": False, "partial": False}
    return hit | extra


HITS = [_hit(i, t) for i, t in enumerate(AWKWARD)] + [
    _hit(10, "dated", date="2024-05-01", memory_md={"path": "notes/MEMORY.md", "title": "Notes [index]"}),
    _hit(11, "flags", stale=True, partial=True),
    _hit(12, "long", text="\n".join(f"line {n}\twith [tag] {AWKWARD[n % len(AWKWARD)]}" for n in range(9))),
]


def _rich_hits(console: Console, hits: list[dict]) -> None:
    """The rich markup print_hits used before the plain printer (the reference)."""
    if not hits:
        console.print("[dim]no hits[/dim]")
    for rank, hit in enumerate(hits, 1):
        where = f"{hit['path']}:{hit['start_line']}-{hit['end_line']}"
        console.print(f"[bold]{rank}. {escape(where)}[/bold]  [dim]{hit['score']:.4f}[/dim]  {escape(hit['heading'])}"
                      + (f"  [dim]{hit['date']}[/dim]" if hit["date"] else "")
                      + ("  [yellow]stale: changed since indexed[/yellow]" if hit["stale"] else "")
                      + ("  [yellow]partial: still being indexed[/yellow]" if hit["partial"] else ""))
        if hit["memory_md"]:
            console.print(f"   [cyan]{escape(hit['memory_md']['path'])}[/cyan]: {escape(hit['memory_md']['title'])}")
        snippet = hit["text"].strip().splitlines()
        for text in snippet[:6]:
            console.print(f"   │ {escape(text)}")
        if len(snippet) > 6:
            more = f"memsearch read ROOT {escape(hit['path'])} --lines {hit['start_line']}:{hit['end_line']}"
            console.print(f"   │ [dim]… {len(snippet) - 6} more lines ({more})[/dim]")


def _printed(capsys, hits: list[dict]) -> str:
    render.print_hits(hits)
    return capsys.readouterr().out


@pytest.mark.parametrize("terminal", [False, True])
def test_hits_are_the_bytes_rich_printed(capsys, monkeypatch, terminal):
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    if terminal:
        monkeypatch.setenv("FORCE_COLOR", "1")
    else:
        monkeypatch.delenv("FORCE_COLOR", raising=False)
    reference = io.StringIO()
    console = Console(file=reference, highlight=False, soft_wrap=True, force_terminal=terminal,
                      color_system="standard" if terminal else None)
    for hits in (HITS, []):
        _rich_hits(console, hits)
    mine = _printed(capsys, HITS) + _printed(capsys, [])
    assert mine == reference.getvalue()
    assert ("\x1b[1m" in mine) is terminal


@pytest.mark.parametrize("terminal", [False, True])
def test_warnings_and_errors_are_the_bytes_rich_printed(capsys, monkeypatch, terminal):
    monkeypatch.setenv("TERM", "xterm")
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("FORCE_COLOR", "1") if terminal else monkeypatch.delenv("FORCE_COLOR", raising=False)
    reference = io.StringIO()
    console = Console(file=reference, highlight=False, soft_wrap=True, force_terminal=terminal,
                      color_system="standard" if terminal else None)
    for message in AWKWARD + ["two\nlines\twith a tab"]:
        console.print(f"[yellow]warning:[/yellow] {escape(message)}")
        console.print(f"[red]error:[/red] {escape(message)}")
        render.warn(message)
        render.print_error(ValueError(message))
    assert capsys.readouterr().err == reference.getvalue()


def test_no_color_keeps_bold_and_dim_and_dumb_terminals_get_none(capsys, monkeypatch):
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setenv("NO_COLOR", "1")
    render.print_hits([HITS[-2]])
    out = capsys.readouterr().out
    assert "\x1b[1m" in out and "\x1b[2m" in out and "\x1b[33m" not in out
    monkeypatch.setenv("TERM", "dumb")
    render.print_hits([HITS[-2]])
    assert "\x1b[" not in capsys.readouterr().out


def test_text_is_shown_as_written_not_as_emoji(capsys, monkeypatch):
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    render.print_hits([_hit(1, "ship it :rocket: today")])
    assert ":rocket:" in capsys.readouterr().out  # rich printed 🚀 here


def test_printing_hits_loads_no_rich():
    code = ("import sys; from memsearch.cli import render; render.print_hits([" + repr(HITS[-1]) + "]); "
            "render.warn('w'); render.print_error(ValueError('e')); "
            "print([m for m in sys.modules if m == 'rich' or m.startswith('rich.')], file=sys.stderr)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stderr.strip().splitlines()[-1] == "[]"
    assert "more lines (memsearch read ROOT notes/n12.md --lines 3:9)" in result.stdout  # no root given: ROOT
