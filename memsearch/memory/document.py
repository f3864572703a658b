"""One Markdown memory file decoded and parsed: text, front matter, title, summary paragraph, dates.

The one decoder of memory bytes (:func:`decode`), the one splitter of its lines (:func:`text_lines`) and the one
parser of a given day (:func:`parse_date`); the heading and fence patterns the chunker shares, and the marks of a
user's turn in a saved chat, live here too.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from ..errors import InvalidArgument

__all__ = [
    "Document",
    "decode",
    "text_lines",
    "read_text",
    "parse_date",
    "HEADING",
    "FENCE",
    "USER_MARK",
    "USER_HEADING",
    "split_front_matter",
    "parse_document",
    "title_of",
    "summary_of",
    "date_of",
]

_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)^(?:---|\.\.\.)[ \t]*\r?$\n?", re.S | re.M)
_DAY = re.compile(r"(\d{4})-(\d{2})-(\d{2})", re.ASCII)
_ISO_DATE = re.compile(r"(?<!\d)(\d{4})-(\d{2})-(\d{2})(?!\d)")
#: An ATX heading line: group 1 the ``#`` marks (the level), group 2 the text.
HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$")
#: A line opening or closing a fenced code block (group 1 the fence).
FENCE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})")
#: A line a transcript marks as the user's: "User:", "**User:**", "> Human:", "- [me]:", "User (10:32):"
#: (the role names chat exports and agent transcripts give the person, in a quote, a list item, bold, or
#: with a time; a named speaker, as in LoCoMo, is not one).
USER_MARK = re.compile(r"^[ \t>*_\[-]*(?:user|human|me)[\]*_ \t]*(?:[(\[][^)\]\n]{0,40}[)\]][*_ \t]*)?:", re.I | re.M)
#: ... or a heading that opens the user's turn: "## User", "### Human".
USER_HEADING = re.compile(r"(?:^|>)\s*[*_]*(?:user|human|me)[*_:]*\s*$", re.I)
_SUMMARY_CHARS = 400


@dataclass(frozen=True)
class Document:
    """One parsed memory file. ``body_start`` is the 1-based line where the body begins."""

    path: str
    text: str
    front_matter: dict[str, str]
    body_start: int
    title: str
    date: str | None

    @property
    def lines(self) -> list[str]:
        return text_lines(self.text)


def decode(raw: bytes) -> str:
    """The one decoder of memory files: UTF-8, undecodable bytes as U+FFFD (the validator warns), no BOM."""
    return raw.decode("utf-8", errors="replace").removeprefix("\ufeff")


def text_lines(text: str, keepends: bool = False) -> list[str]:
    """The lines of a memory file as every tool numbers them (a hit's lines, ``memory_read``, and the memory tool's
    ``view`` and ``insert``): split at each newline, a ``\r\n`` counted once, and never at the other characters
    :meth:`str.splitlines` breaks at (U+2028, a form feed, a lone ``\r`` ...), which stay inside their line.
    ``keepends``: each line with its newline, so that the lines joined are the text."""
    lines = text.split("\n")
    last = lines.pop()  # what follows the final newline: "" when the text ends in one
    if keepends:
        return [line + "\n" for line in lines] + ([last] if last else [])
    return [line.removesuffix("\r") for line in lines] + ([last] if last else [])


def read_text(path: Path) -> str:
    """A memory file's text by name, through :func:`decode`. Raises ``OSError``.

    For a path a user gave, read through the root instead (``memory.contract.memory_text``).
    """
    return decode(path.read_bytes())


def split_front_matter(text: str) -> tuple[dict[str, str], int]:
    """Parse a leading ``---`` YAML block as flat ``key: value`` pairs.

    Returns (fields, number of lines the block spans). Only scalars are needed (title, date,
    tags as written), so no YAML library: nested values are kept as their raw text.
    """
    match = _FRONT_MATTER.match(text)
    if not match:
        return {}, 0
    fields: dict[str, str] = {}
    for line in match.group(1).splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() and not key.startswith((" ", "\t", "-")):
            fields[key.strip().lower()] = value.strip().strip("'\"")
    return fields, match.group(0).count("\n")


def _iso(value: str | None) -> str | None:
    if not value:
        return None
    match = _ISO_DATE.search(value)
    if not match:
        return None
    try:
        return dt.date(int(match[1]), int(match[2]), int(match[3])).isoformat()
    except ValueError:
        return None


def parse_date(value, name: str = "date") -> str | None:
    """The one parser of a given day (a search's ``since``/``until``): ``YYYY-MM-DD`` text,
    a :class:`datetime.date` or :class:`datetime.datetime`, as an ISO string; None for None or "".

    Raises :class:`~memsearch.errors.InvalidArgument` naming ``name`` for anything else.
    """
    if value is None or value == "":
        return None
    if isinstance(value, dt.datetime):
        return value.date().isoformat()
    if isinstance(value, dt.date):
        return value.isoformat()
    match = _DAY.fullmatch(value.strip()) if isinstance(value, str) else None
    try:
        if match:
            return dt.date(int(match[1]), int(match[2]), int(match[3])).isoformat()
    except ValueError:
        pass
    raise InvalidArgument(f"{name} {value!r} is not a calendar date: use YYYY-MM-DD, e.g. 2026-08-12")


def date_of(path: str, front_matter: dict[str, str]) -> str | None:
    """The file's date: ``date:`` in front matter, else an ISO date in the file name."""
    return _iso(front_matter.get("date")) or _iso(PurePosixPath(path).name)


def title_of(path: str, text: str, front_matter: dict[str, str] | None = None) -> str:
    """``title:`` from front matter, else the first heading, else the file name without ``.md``."""
    if front_matter and front_matter.get("title"):
        return front_matter["title"]
    in_fence = False
    for line in text_lines(text):
        if FENCE.match(line):
            in_fence = not in_fence
            continue
        if not in_fence:
            match = HEADING.match(line)
            if match:
                return match.group(2).strip()
    return PurePosixPath(path).stem


def summary_of(text: str, limit: int = _SUMMARY_CHARS) -> str:
    """The first paragraph of prose after the front matter and title (at most ``limit`` chars)."""
    _, skip = split_front_matter(text)
    lines = text_lines(text)[skip:]
    para: list[str] = []
    in_fence = False
    for line in lines:
        stripped = line.strip()
        if FENCE.match(line):
            in_fence = not in_fence
            if para:
                break
            continue
        if in_fence:
            continue
        if not stripped:
            if para:
                break
            continue
        if HEADING.match(stripped):
            if para:
                break
            continue
        para.append(stripped)
    summary = " ".join(para)
    if len(summary) > limit:
        summary = summary[: limit - 1].rsplit(" ", 1)[0] + "…"
    return summary


def parse_document(path: str, text: str) -> Document:
    """Parse a file's text (``path`` is its relative POSIX path, used for title and date)."""
    fields, span = split_front_matter(text)
    return Document(
        path=path,
        text=text,
        front_matter=fields,
        body_start=span + 1,
        title=title_of(path, text, fields),
        date=date_of(path, fields),
    )
