"""The Agent Memory harness contract as a library: load core, defer nested, surface, read.

1. :func:`load_core` loads every ``*.md`` directly in the root (``MEMORY.md`` first).
2. Nothing below the root ever appears in the core rendering.
3. :func:`list_dir` surfaces the next layer: child memory directories with their
   ``MEMORY.md`` title and first paragraph, and the files of a directory.
4. :func:`read` loads one memory file, or a line range of it, and nothing outside the root.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path, PurePosixPath

from ..errors import Hint, InvalidArgument, MemoryFileNotFound, MemsearchError, shown
from .document import decode, parse_document, summary_of, text_lines
from .names import lookalike_path
from .tokens import count_tokens, encoding_name
from .tree import (
    INDEX_NAME,
    MemoryTree,
    foreign_dirs,
    path_parts,
    read_memory,
    refuse_other_dir,
    resolve_root,
    safe_path,
    scan,
)

__all__ = [
    "CoreFile",
    "CoreMemory",
    "DirSummary",
    "FileSummary",
    "Listing",
    "ReadResult",
    "load_core",
    "list_dir",
    "read",
    "parse_lines",
    "memory_text",
    "decode",
    "MemoryRef",
    "memory_ref",
    "memory_chain",
]


def memory_text(root: Path, rel: str, *, foreign=None) -> str:
    """Text of the memory file ``rel`` under the resolved ``root``, read through its descriptor."""
    return decode(read_memory(root, rel, foreign=foreign)[0])


def _texts(tree: MemoryTree, paths, foreign) -> tuple[list[tuple[str, str]], list[str]]:
    """(path, text) of each file still readable, and the paths that vanished or cannot be read."""
    found, missed = [], []
    for rel in paths:
        try:
            found.append((rel, memory_text(tree.root, rel, foreign=foreign)))
        except MemsearchError:  # deleted since the walk, permission denied, swapped for a link
            missed.append(rel)
    return found, missed


@dataclass(frozen=True)
class CoreFile:
    path: str
    text: str
    tokens: int


@dataclass(frozen=True)
class CoreMemory:
    """Core memory: the root's Markdown, always in the agent's context."""

    root: str
    files: tuple[CoreFile, ...]
    total_tokens: int
    encoding: str
    unreadable: tuple[str, ...] = ()

    def render(self) -> str:
        """Core memory for a system prompt: each file under a header naming it."""
        parts = []
        for f in self.files:
            parts.append(f'<memory_file path="{f.path}">\n{f.text.rstrip()}\n</memory_file>')
        return "\n\n".join(parts)

    def to_dict(self) -> dict:
        return {
            "root": self.root,
            "files": [asdict(f) for f in self.files],
            "total_tokens": self.total_tokens,
            "encoding": self.encoding,
            "rendered": self.render(),
            "unreadable": list(self.unreadable),
        }


def load_core(root: str | os.PathLike[str], *, encoding: str | None = None, tree: MemoryTree | None = None) -> CoreMemory:
    """Rule 1: load every Markdown file directly in the root, ``MEMORY.md`` first, then by name."""
    tree = tree or scan(root)
    texts, missed = _texts(tree, tree.core_files, None)
    files = [CoreFile(path=rel, text=text, tokens=count_tokens(text, encoding)) for rel, text in texts]
    return CoreMemory(
        root=str(tree.root),
        files=tuple(files),
        total_tokens=sum(f.tokens for f in files),
        encoding=encoding_name(encoding),
        unreadable=tuple(missed),
    )


@dataclass(frozen=True)
class DirSummary:
    """A child memory directory as the agent first sees it."""

    path: str
    memory_md: str | None
    title: str
    summary: str


@dataclass(frozen=True)
class FileSummary:
    path: str
    title: str
    tokens: int


@dataclass(frozen=True)
class Listing:
    """Rule 3: one directory's next layer of memory."""

    path: str
    memory_md: str | None
    title: str
    summary: str
    dirs: tuple[DirSummary, ...]
    files: tuple[FileSummary, ...]
    #: Files of this directory that vanished or could not be read while listing.
    unreadable: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class MemoryRef:
    """A ``MEMORY.md``: its path, title and first paragraph (never the whole file)."""

    path: str
    title: str
    summary: str


def memory_ref(root: Path, rel: str, *, foreign=None) -> MemoryRef:
    """The summary of the ``MEMORY.md`` at ``rel`` (title and first paragraph), read inside ``root``.

    The one builder of a ``MEMORY.md`` summary (listings, search hits, MCP resources).
    Raises :class:`~memsearch.errors.MemsearchError` if it cannot be read.
    """
    text = memory_text(root, rel, foreign=foreign)
    title = parse_document(rel, text).title
    if title == PurePosixPath(rel).stem:  # no title of its own (a bare list of files): its folder's name, not "MEMORY"
        title = PurePosixPath(rel).parent.name or "memory root"
    return MemoryRef(path=rel, title=title, summary=summary_of(text))


def memory_chain(root: Path, directory: str) -> tuple[str, ...]:
    """``MEMORY.md`` paths from the one in ``directory`` (or nearest above it) up to the root's: one
    ``stat`` each, on str paths (a ``Path`` per level was most of its cost in a search's hits)."""
    base = os.fspath(root)
    return tuple(rel for rel in _chain_places(directory) if os.path.isfile(os.path.join(base, rel)))


@lru_cache(maxsize=4096)
def _chain_places(directory: str) -> tuple[str, ...]:
    """Where a ``MEMORY.md`` of ``directory`` and of each folder above it would be, nearest first."""
    places = []
    current = PurePosixPath(directory)
    while True:
        top = str(current) in ("", ".")
        places.append(INDEX_NAME if top else f"{current}/{INDEX_NAME}")
        if top:
            return tuple(places)
        current = current.parent


def _dir_summary(tree: MemoryTree, directory: str) -> DirSummary:
    index = INDEX_NAME if directory == "." else f"{directory}/{INDEX_NAME}"
    name = "memory root" if directory == "." else directory.rsplit("/", 1)[-1]
    if not tree.has_index(directory):
        return DirSummary(path=directory, memory_md=None, title=name, summary="")
    try:
        ref = memory_ref(tree.root, index)
    except MemsearchError:  # deleted or made unreadable since the walk
        return DirSummary(path=directory, memory_md=None, title=name, summary="")
    return DirSummary(path=directory, memory_md=index, title=ref.title, summary=ref.summary)


def list_dir(root: str | os.PathLike[str], path: str = ".", *, encoding: str | None = None, foreign=None) -> Listing:
    """Rule 3: the immediate child memory directories of ``path`` and its files. A directory name that does not
    exist but has exactly one look-alike (:func:`~memsearch.memory.names.lookalikes`) lists that directory."""
    base = resolve_root(root)
    _, rel = safe_path(base, path)
    rel = rel.rstrip("/") or "."
    tree = scan(base, foreign=foreign)
    if rel != "." and rel not in tree.memory_dirs:  # a name typed in another Unicode form: its one look-alike
        rel = next((twin for twin in [lookalike_path(base, rel.split("/"))] if twin in tree.memory_dirs), rel)
    if rel != "." and rel not in tree.memory_dirs:
        refuse_other_dir(rel, foreign=foreign_dirs(foreign), root=base)
        raise MemoryFileNotFound(f"{shown(rel)} is not a memory directory", hint=Hint("list", tree.nearest_dir(rel)))
    this = _dir_summary(tree, rel)
    texts, missed = _texts(tree, tree.files_in(rel), foreign)
    files = [FileSummary(path=f, title=parse_document(f, text).title, tokens=count_tokens(text, encoding)) for f, text in texts]
    return Listing(
        path=rel,
        memory_md=this.memory_md,
        title=this.title,
        summary=this.summary,
        dirs=tuple(_dir_summary(tree, d) for d in tree.child_dirs(rel)),
        files=tuple(files),
        unreadable=tuple(missed),
    )


@dataclass(frozen=True)
class ReadResult:
    """Rule 4: one memory file or a line range of it (lines 1-based, inclusive)."""

    path: str
    text: str
    start_line: int
    end_line: int
    total_lines: int

    def to_dict(self) -> dict:
        return asdict(self)


def parse_lines(lines: str | tuple[int | None, int | None] | list | None) -> tuple[int, int | None] | None:
    """``"A:B"``, ``"A:"``, ``":B"``, ``"A"`` or ``(A, B)`` to a validated 1-based range."""
    if lines is None or lines == "":
        return None
    if isinstance(lines, str):
        text = lines.strip()
        first, sep, last = text.partition(":") if ":" in text else text.partition("-")
        try:
            start = int(first) if first.strip() else 1
            end = int(last) if last.strip() else None
            if not sep:
                end = start
        except ValueError:
            raise InvalidArgument(f"lines {shown(lines)} is not a line range A:B (e.g. 10:40, 10: or :40)") from None
    else:
        try:
            start, end = lines
            start = 1 if start is None else int(start)
            end = None if end is None else int(end)
        except (TypeError, ValueError):
            raise InvalidArgument(f"line range {shown(lines)} must be two line numbers (start, end)") from None
    if start < 1 or (end is not None and end < start):
        what = "lines" if isinstance(lines, str) else "line range"  # a string is the CLI's --lines, the API's lines=
        raise InvalidArgument(f"{what} {shown(lines)} is empty or starts before line 1: lines are 1-based and inclusive, "
                              "start <= end")
    return start, end


def read(root: str | os.PathLike[str], path: str, lines=None, *, foreign=None) -> ReadResult:
    """Rule 4: read one memory file (or ``lines``, e.g. ``"10:40"``) inside the root.

    Refuses paths outside the root (:class:`PathOutsideRoot`), hidden, foreign and
    non-Markdown files (:class:`NotMemoryFile`) and missing files (:class:`MemoryFileNotFound`). A name that
    does not exist but has exactly one look-alike (:func:`~memsearch.memory.names.lookalikes`) reads that file.
    """
    base = resolve_root(root)
    try:
        raw, rel = read_memory(base, path, foreign=foreign)
    except MemoryFileNotFound:  # a name typed in another Unicode form (NFC/NFD) than the file's: its one look-alike
        twin = lookalike_path(base, path_parts(path))
        if twin is None:
            raise
        raw, rel = read_memory(base, twin, foreign=foreign)
    text = decode(raw)
    all_lines = text_lines(text, keepends=True)
    total = len(all_lines)
    span = parse_lines(lines)
    if span is None:
        return ReadResult(path=rel, text=text, start_line=1 if total else 0, end_line=total, total_lines=total)
    start, end = span
    if start > max(total, 1):
        fix = f"start at a line from 1 to {total}" if total else "read it without a line range"
        raise InvalidArgument(f"{shown(rel)} has {total} lines; line {start} is past the end: {fix}")
    end = total if end is None else min(end, total)
    return ReadResult(path=rel, text="".join(all_lines[start - 1 : end]), start_line=start, end_line=end, total_lines=total)
