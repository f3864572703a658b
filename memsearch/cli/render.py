"""How the CLI prints results, shared by the typer commands and the fast daemon path (:mod:`.fast`).

Light on purpose: a command answered by the daemon imports this module, the lean client and
nothing heavier. Search hits, warnings, errors and core memory are written as plain lines
(:func:`line`), styled with ANSI codes only on a terminal: rich costs more than Python's own
start, and it loads only for the tables and reports of the other commands (``out``, ``err``). The
plain lines are the bytes rich printed for the same markup (control codes stripped, tabs
expanded), except that rich turned ``:name:`` into emoji; text is now shown as written. Every
printer takes JSON-ready data (what the daemon sends, or a local result's ``to_dict()``), so
output is the same whichever answered.
"""

from __future__ import annotations

import json
import os
import re
import sys

from ..errors import naming_root, shell_word

__all__ = ["out", "err", "console", "escape", "emit_json", "ns", "line", "styled", "warn",  # noqa: F822 (out, err)
           "print_error", "counted", "visible", "print_core", "print_listing", "print_read", "print_hits"]

_CONSOLES: dict = {}
#: The styles the plain printer knows, as ANSI SGR parameters (what rich writes for them).
SGR = {"bold": "1", "dim": "2", "red": "31", "green": "32", "yellow": "33", "cyan": "36"}
#: The control codes rich strips from printed text (bell, backspace, vertical tab, form feed, carriage return).
_STRIP = dict.fromkeys((7, 8, 11, 12, 13))
#: Columns between tab stops, as rich expands them.
TAB_SIZE = 8


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


#: What a terminal would obey rather than show: C0 controls but newline and tab, DEL, C1 controls, and the
#: bidirectional overrides and isolates that reorder what follows (a file name that reads backwards).
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _shown(match: re.Match) -> str:
    code = ord(match.group())
    if code < 0x20:
        return "^" + chr(code + 64)  # ESC -> ^[, as less and git show it
    return "^?" if code == 0x7F else f"<U+{code:04X}>"


def visible(text: str) -> str:
    """Untrusted text (memory text, file names, messages quoting them) made safe for a terminal: every control
    code but newline and tab, and every bidi override, shown as visible characters instead of obeyed. The one
    place human output is made safe; ``--json`` output stays exact (JSON escapes controls itself)."""
    return _UNSAFE.sub(_shown, text)


def _for(stream, text: str) -> str:
    """``text`` as written when ``stream`` is a pipe or file (content stays exact), :func:`visible` on a terminal."""
    try:
        terminal = stream.isatty()
    except (AttributeError, ValueError):
        terminal = False
    return visible(text) if terminal else text


def escape(text: str) -> str:
    """``text`` for rich's printer: :func:`visible`, with rich markup escaped."""
    from rich.markup import escape as rich_escape

    return rich_escape(visible(text))


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and ``noun``, singular or plural as ``n`` asks ("1 file", "2 files", "1,024 chunks")."""
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"


def search_json(query: str, hits: list[dict]) -> dict:
    """``search --json``'s object: the query, its hits, and ``indexing`` while the root's index is still being built."""
    building = getattr(hits, "indexing", None)
    return {"query": query, "hits": list(hits)} | ({"indexing": building} if building else {})


#: Characters handed to stdout per write: a reader gone mid-output (``| head``) must surface as BrokenPipeError,
#: which CPython's buffered writer drops after a partial write of one large string (the command then exited 0).
WRITE_CHUNK = 1 << 16


def write_out(text: str) -> None:
    """``text`` on stdout, in pieces of :data:`WRITE_CHUNK`, so that a reader that stops early is noticed."""
    for start in range(0, len(text), WRITE_CHUNK):
        sys.stdout.write(text[start:start + WRITE_CHUNK])


def emit_json(data) -> None:
    write_out(json.dumps(data, ensure_ascii=False, indent=2) + "\n")


def ns(data):
    """JSON data as attribute objects (lists for tuples), for printers written with attributes."""
    from types import SimpleNamespace

    if isinstance(data, dict):
        return SimpleNamespace(**{k: ns(v) for k, v in data.items()})
    if isinstance(data, (list, tuple)):
        return [ns(v) for v in data]
    return data


def styled(stream) -> bool:
    """Whether lines to ``stream`` get ANSI styles, decided as rich decides: never when ``TERM`` is
    ``dumb`` or ``unknown``, always when ``FORCE_COLOR`` is set, else when ``stream`` is a terminal."""
    if os.environ.get("TERM", "").lower() in ("dumb", "unknown"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # closed, or not a file
        return False


def line(*parts: str | tuple[str, str], stderr: bool = False) -> None:
    """Write one line of ``parts`` (plain text, or ``(text, style)`` with a style of :data:`SGR`).

    Styles are written only where :func:`styled` says; ``NO_COLOR`` drops the colours, not bold
    and dim (as rich does)."""
    stream = sys.stderr if stderr else sys.stdout
    paint = styled(stream)
    no_color = paint and bool(os.environ.get("NO_COLOR"))
    column, written = 0, []
    for part in parts:
        text, style = (part, None) if isinstance(part, str) else part
        text = visible(text.translate(_STRIP))
        if "\t" in text:  # tab stops count from the start of the line, across parts
            text = (" " * column + text).expandtabs(TAB_SIZE)[column:]
        column = len(text) - text.rfind("\n") - 1 if "\n" in text else column + len(text)
        code = SGR.get(style or "")
        if paint and code and text and not (no_color and len(code) == 2):  # 2 digits: a colour
            text = "\n".join(f"\x1b[{code}m{piece}\x1b[0m" if piece else piece for piece in text.split("\n"))
        written.append(text)
    stream.write("".join(written) + "\n")


def warn(message: str) -> None:
    """One warning line on stderr (a daemon that did not answer, an index not synced)."""
    line(("warning:", "yellow"), " " + message, stderr=True)


def print_error(exc: Exception, root=None, db=None) -> None:
    """One error line; the library's ``memsearch COMMAND ROOT`` hints name ``root`` (and the ``--db`` given)
    when the CLI knows it (:func:`~memsearch.errors.naming_root`), as given, even where the library filled in the
    resolved root (a hint raised with ``Hint(..., root=...)``)."""
    line(("error:", "red"), " " + naming_root(_as_given(exc, root, db), root, db), stderr=True)


def _as_given(exc, root, db) -> str:
    """``exc`` as text, its hint naming ``root`` as the user gave it (``m1``, not ``/home/me/m1``) when the library
    named that same root, resolved; else as it is."""
    hint = getattr(exc, "hint", None)
    known = getattr(hint, "root", None)
    if root is None or known is None or not hasattr(exc, "text"):
        return str(exc)
    from pathlib import Path

    try:
        same = Path(root).expanduser().resolve() == Path(known).resolve()
    except (OSError, RuntimeError, ValueError):
        same = False
    if not same:
        return str(exc)
    given = type(hint)(hint.action, hint.path, root=root, db=db if db is not None else hint.db)
    return f"{exc.text}: {given.render('cli')}"


def print_core(data: dict) -> None:
    write_out(_for(sys.stdout, data["rendered"]) + "\n")
    line((f"{counted(len(data['files']), 'core file')}, {counted(data['total_tokens'], 'token')} ({data['encoding']})", "dim"),
         stderr=True)


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
    text = _for(sys.stdout, data["text"])
    write_out(text if text.endswith("\n") or not text else text + "\n")


#: Lines of a hit's text shown under it; the rest is named with the command that reads it.
SNIPPET_LINES = 6


def print_hits(hits: list[dict], root=None) -> None:
    """Ranked hits; an empty answer while ``root``'s index is still being built (``hits.indexing``,
    :class:`~memsearch.service.firstbuild.Hits`) says so and when to ask again."""
    building = getattr(hits, "indexing", None)
    if not hits and building and building.get("unbuilt"):
        line((f"no hits yet: the index of {root} has no build yet: its writer has committed none (a read replica "
              "serves it from that first commit)", "yellow"))
    elif not hits and building:
        line((f"no hits yet: {root} is still being indexed ({building['embedded']:,} of {counted(building['files'], 'file')}); "
              "search again in a few seconds", "yellow"))
    elif not hits:
        line(("no hits", "dim"))
    for rank, hit in enumerate(hits, 1):
        head = [(f"{rank}. {hit['path']}:{hit['start_line']}-{hit['end_line']}", "bold"), "  ",
                (f"{hit['score']:.4f}", "dim"), "  " + hit["heading"]]
        if hit.get("date"):
            head += ["  ", (hit["date"], "dim")]
        if hit.get("stale"):
            head += ["  ", ("stale: changed since indexed", "yellow")]
        if hit.get("partial"):
            head += ["  ", ("partial: still being indexed", "yellow")]
        line(*head)
        if hit.get("memory_md"):
            line("   ", (hit["memory_md"]["path"], "cyan"), ": " + hit["memory_md"]["title"])
        snippet = hit["text"].strip().splitlines()
        for text in snippet[:SNIPPET_LINES]:
            line("   │ " + text)
        if len(snippet) > SNIPPET_LINES:
            more = f"memsearch read {shell_word(root)} {shell_word(hit['path'])} --lines {hit['start_line']}:{hit['end_line']}"
            line("   │ ", (f"… {counted(len(snippet) - SNIPPET_LINES, 'more line')} ({more})", "dim"))
