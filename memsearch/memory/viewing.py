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
from . import rootfs
from .placement import Target
from .tree import valid_name

__all__ = ["render_file", "render_listing", "snippet", "split_lines", "edit_lines", "LINE_NUMBER_WIDTH", "VIEW_DEPTH",
           "MAX_VIEW_LINES"]

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


def edit_lines(text: str) -> list[str]:
    """The lines ``insert`` counts, as Claude's memory tool does: split at ``\n`` (a ``\r`` stays), no empty tail."""
    lines = split_lines(text)
    return lines[:-1] if lines[-1] == "" else lines


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


def _memory_children(listed: rootfs.Listed, foreign: tuple[str, ...],
                     protect: tuple[str, ...]) -> list[tuple[str, bool, int]]:
    """The memory entries of one listed directory: (relative path, is a directory, size of a file)."""
    out = []
    for entry in listed.entries:
        child = entry.name if listed.rel == "." else f"{listed.rel}/{entry.name}"
        if (entry.name.startswith(".") or not valid_name(entry.name)
                or any(child == p or child.startswith(p + "/") for p in protect)):
            continue
        if entry.kind == "dir" and child not in foreign:
            out.append((child, True, 0))
        elif entry.kind == "file":
            out.append((child, False, entry.size or 0))
    return out


def render_listing(root: Path, target: Target, foreign: tuple[str, ...], protect: tuple[Path, ...]) -> str:
    """The memory in directory ``target``, :data:`VIEW_DEPTH` levels deep, each line ``size<TAB>path``.

    The whole branch is listed through descriptors (:func:`~memsearch.memory.rootfs.walk_dirs`), never
    by path: a folder swapped for a link while it is listed is not entered, so nothing outside ``root``
    (a name or a size) can appear. Raises the typed errors of :func:`~memsearch.memory.rootfs.walk`.
    """
    guarded = tuple(os.path.relpath(p, root) for p in protect if p == root or root in p.parents)
    children: dict[str, list[tuple[str, bool, int]]] = {}
    enter: set[str] = set()  # the memory directories met so far: the walk enters those only

    root_fd = rootfs.open_root(root)
    try:
        start = [] if target.rel == "." else target.rel.split("/")
        for listed in rootfs.walk_dirs(root_fd, str(root), start, lambda rel, _: rel in enter, sizes=True):
            children[listed.rel] = _memory_children(listed, foreign, guarded)
            enter.update(child for child, is_dir, _ in children[listed.rel] if is_dir)
    finally:
        os.close(root_fd)

    sizes: dict[str, int | None] = {}

    def size_of(rel: str) -> int | None:
        """Bytes of the files listed at or below directory ``rel``; None for one holding none."""
        if rel not in sizes:
            found = [size if not is_dir else size_of(child) for child, is_dir, size in children.get(rel, ())]
            found = [n for n in found if n is not None]
            sizes[rel] = sum(found) if found else None
        return sizes[rel]

    rows: list[str] = []
    stack = [(child, is_dir, size, 1) for child, is_dir, size in reversed(children.get(target.rel, []))]
    while stack:
        child, is_dir, size, depth = stack.pop()
        shown_size = size_of(child) if is_dir else size
        if shown_size is None:
            continue
        rows.append(f"{human_size(shown_size)}\t{target.show(child)}{'/' if is_dir else ''}")
        if is_dir and depth < VIEW_DEPTH:
            stack.extend((c, d, n, depth + 1) for c, d, n in reversed(children.get(child, [])))
    total = size_of(target.rel) or 0
    header = f"Here're the files and directories up to {VIEW_DEPTH} levels deep in {target.shown}, excluding hidden items:"
    return "\n".join([header, f"{human_size(total)}\t{target.shown}"] + rows)
