"""What the memory tool's ``view`` shows: a file with line numbers, or a directory two levels deep with sizes.

Lines are what Claude's memory tool shows (``anthropic``'s ``BetaLocalFilesystemMemoryTool``): the
text split at each ``\n`` (a ``\r`` stays on its line), so a file ending in a newline shows an empty
last line and an empty file shows line 1 empty; a ``view_range`` past either end is clamped to the
file. Listings show the Markdown files and the other plain files already in the tree (a ``.txt`` left
by another tool: ``view`` shows it, ``delete`` removes it, writes make ``.md`` only), and the
directories that hold some; never hidden entries, links, foreign directories or the index. A
directory's size is the bytes of the files listed below it.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import InvalidArgument
from .placement import Target

__all__ = ["render_file", "render_listing", "snippet", "split_lines", "LINE_NUMBER_WIDTH", "VIEW_DEPTH", "MAX_VIEW_LINES"]

#: Line numbers are right-aligned to this width, then a tab (as Claude's memory tool shows them).
LINE_NUMBER_WIDTH = 6
#: How many directory levels ``view`` lists.
VIEW_DEPTH = 2
#: The most lines ``view`` shows of one file (Claude's memory tool refuses longer files too).
MAX_VIEW_LINES = 999_999
#: Lines of context around an edit in the snippet returned after ``str_replace`` and ``insert``.
SNIPPET_CONTEXT = 2


def split_lines(text: str) -> list[str]:
    """The lines ``view`` numbers: ``text`` split at each ``\n`` (a final newline leaves an empty last line)."""
    return text.split("\n")


def _numbered(lines: list[str], start: int, end: int) -> str:
    return "\n".join(f"{n:>{LINE_NUMBER_WIDTH}}\t{lines[n - 1]}" for n in range(start, end + 1))


def render_file(target: Target, text: str, view_range: tuple[int, int] | None = None) -> str:
    """``text`` with line numbers; ``view_range`` ``(start, end)`` is 1-based and inclusive, end -1 the last line,
    clamped to the file (a range wholly past its end shows no lines and says how many there are)."""
    lines = split_lines(text)
    total = len(lines)
    if total > MAX_VIEW_LINES:
        raise InvalidArgument(f"{target.shown} has {total:,} lines, over view's limit of {MAX_VIEW_LINES:,}: "
                              "split it into smaller files (memory_search finds passages in it meanwhile)")
    header = f"Here's the content of {target.shown} with line numbers:\n"
    start, end = 1, total
    if view_range is not None:
        first, last = view_range
        start, end = max(1, first), total if last == -1 else min(last, total)
        if start > end:
            return header + f"(no lines in view_range [{first}, {last}]: {target.shown} has lines 1 to {total})"
    return header + _numbered(lines, start, end)


def snippet(text: str, first: int, last: int) -> str:
    """Lines ``first``..``last`` of ``text`` with :data:`SNIPPET_CONTEXT` lines around, numbered."""
    lines = split_lines(text)
    lo = max(1, first - SNIPPET_CONTEXT)
    hi = min(len(lines), max(last, first) + SNIPPET_CONTEXT)
    return _numbered(lines, min(lo, len(lines)), hi)


def human_size(size: int) -> str:
    """Bytes as ``512B``, ``1.5K``, ``2M``."""
    value = float(size)
    for unit in ("B", "K", "M", "G"):
        if value < 1024 or unit == "G":
            return f"{int(value)}{unit}" if unit == "B" or value == int(value) else f"{value:.1f}{unit}"
        value /= 1024
    return f"{size}B"


def _entries(directory: Path, rel: str, foreign: tuple[str, ...], protect: tuple[Path, ...]) -> list[tuple[str, Path, bool]]:
    """Entries directly in ``directory`` that ``view`` lists: (relative path, path, is a directory)."""
    try:
        found = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError:
        return []
    out = []
    for entry in found:
        if entry.name.startswith("."):
            continue
        child = entry.name if rel == "." else f"{rel}/{entry.name}"
        path = Path(entry.path)
        try:
            if entry.is_symlink() or any(path == p or p in path.parents for p in protect):
                continue
            if entry.is_dir(follow_symlinks=False):
                if child not in foreign:
                    out.append((child, path, True))
            elif entry.is_file(follow_symlinks=False):
                out.append((child, path, False))
        except OSError:
            continue
    return out


def _bytes(path: Path, rel: str, is_dir: bool, foreign, protect) -> int | None:
    """Bytes of the files listed at or below ``path``; None for a directory holding none."""
    if not is_dir:
        try:
            return path.stat().st_size
        except OSError:
            return 0
    sizes = [_bytes(p, r, d, foreign, protect) for r, p, d in _entries(path, rel, foreign, protect)]
    sizes = [s for s in sizes if s is not None]
    return sum(sizes) if sizes else None


def render_listing(target: Target, foreign: tuple[str, ...], protect: tuple[Path, ...]) -> str:
    """The memory in directory ``target``, :data:`VIEW_DEPTH` levels deep, each line ``size<TAB>path``."""
    rows: list[str] = []

    def walk(directory: Path, rel: str, depth: int) -> None:
        for child, path, is_dir in _entries(directory, rel, foreign, protect):
            size = _bytes(path, child, is_dir, foreign, protect)
            if size is None:
                continue
            rows.append(f"{human_size(size)}\t{target.show(child)}{'/' if is_dir else ''}")
            if is_dir and depth < VIEW_DEPTH:
                walk(path, child, depth + 1)

    walk(target.path, target.rel, 1)
    total = _bytes(target.path, target.rel, True, foreign, protect) or 0
    header = f"Here're the files and directories up to {VIEW_DEPTH} levels deep in {target.shown}, excluding hidden items:"
    return "\n".join([header, f"{human_size(total)}\t{target.shown}"] + rows)
