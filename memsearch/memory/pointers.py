"""Keeping ``MEMORY.md`` pointers true when the memory tool moves or deletes memory.

* :func:`renew_indexes`: a ``MEMORY.md`` moved with its folder that still holds what
  :func:`~memsearch.memory.placement.index_text` made for it (all of it, or its line naming the folder's path,
  :func:`moved_index_text`) is renewed for the new path; the agent's own words are kept.
* :func:`stale_mentions`: after a ``delete`` or ``rename``, the lines of the ``MEMORY.md`` files above the old
  path (its folder's, up to the root's) that still name it, so the result can tell the agent which to update.
"""

from __future__ import annotations

import re
from typing import Callable, Sequence

from .placement import index_text
from .tree import INDEX_NAME, ancestors, parent_dir

#: Reads a file's bytes by its relative path (``read(rel, shown)``; raises ``OSError``), as the editor does.
Read = Callable[[str, str], bytes]

__all__ = ["moved_index_text", "renew_indexes", "stale_mentions"]

#: At most this many ``MEMORY.md`` files, and lines of each, are named in a result.
MAX_NAMED = 3
BOM = b"\xef\xbb\xbf"


def moved_index_text(text: str, old: str, new: str) -> str | None:
    """The text of a ``MEMORY.md`` whose directory moved from ``old`` to ``new``, where it still says what
    :func:`index_text` wrote for ``old``: all of it (then the new folder's text), else its line naming the old path
    (then that line alone is renewed); None when nothing of it is left."""
    before, after = index_text(old), index_text(new)
    if text in (before, before.replace("\n", "\r\n")):
        return after if text == before else after.replace("\n", "\r\n")
    line = re.compile(rf"^{re.escape(before.splitlines()[-1])}(?=\r?$)", re.M)
    renewed = line.sub(lambda _: after.splitlines()[-1], text)
    return None if renewed == text else renewed


def renew_indexes(moved: Sequence[str], source: str, dest: str, read: Read,
                  write: Callable[..., None]) -> list[str]:
    """Renew each ``MEMORY.md`` among ``moved`` (paths now under ``dest``, the folder that was ``source``) that still
    describes its folder by the old path (:func:`moved_index_text`); the ones renewed. ``write(rel, text, bom=)``."""
    renewed = []
    for rel in moved:
        if rel.rsplit("/", 1)[-1] != INDEX_NAME:
            continue
        try:
            raw = read(rel, rel)
            text = moved_index_text(raw.removeprefix(BOM).decode("utf-8"), source + parent_dir(rel)[len(dest):],
                                    parent_dir(rel))
        except (OSError, UnicodeDecodeError):  # a link, or not UTF-8: left as it is
            continue
        if text is not None:
            write(rel, text, bom=raw.startswith(BOM))
            renewed.append(rel)
    return renewed


def stale_mentions(gone: str, is_dir: bool, read: Read, show: Callable[[str], str], now: str | None = None) -> str:
    """What the result of a write that took ``gone`` (a file, or a folder: ``is_dir``) from its place says of the
    ``MEMORY.md`` files above it that still name it, with their lines; "" when none does. Each is searched for the
    path relative to its folder (``2026-09-25.md`` in the folder's own, ``notes/2026-09-25.md`` in the root's; a
    folder with its ``/``), and for the name without ``.md`` where that is no plain word (``2026-09-25``,
    ``priya-raman``), as an index table writes it. ``show``: a path as the caller writes them; ``now``: where it went (a rename)."""
    found = []
    for folder in reversed(["."] + ancestors(gone)):  # its own folder's MEMORY.md first
        index = INDEX_NAME if folder == "." else f"{folder}/{INDEX_NAME}"
        try:
            text = read(index, index).decode("utf-8", errors="replace") if index != gone else ""
        except OSError:  # none there (a folder deleted with its own), or a link
            continue
        if text:
            lines = [n for n, line in enumerate(text.split("\n"), 1) if _names(gone, folder, is_dir).search(line)]
            if lines:
                more = ", ..." if len(lines) > MAX_NAMED else ""
                found.append(f"{show(index)} (line{'s' if len(lines) > 1 else ''} {', '.join(map(str, lines[:MAX_NAMED]))}{more})")
    if not found:
        return ""
    went = f", now {now}" if now else ", which is gone"
    return (f"\n{' and '.join(found[:MAX_NAMED])} still name{'s' if len(found) == 1 else ''} "
            f"{show(gone)}{'/' if is_dir else ''}{went}: update what it says (view it, then str_replace), so that "
            "it points to what exists.")


def _names(gone: str, folder: str, is_dir: bool) -> re.Pattern:
    """How a ``MEMORY.md`` in ``folder`` names ``gone``: its path from there, whole (not part of a longer name)."""
    name = gone if folder == "." else gone[len(folder) + 1:]
    if is_dir:
        forms = [name + "/"]
    else:
        stem = name.removesuffix(".md")
        forms = [name] + ([stem] if re.search(r"[^\W\d_]", stem) is None or re.search(r"[\d_-]", stem) else [])
    return re.compile(rf"(?<![\w./-])(?:{'|'.join(map(re.escape, forms))})(?![\w/-]|\.\w)")
