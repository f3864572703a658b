"""The harness entry point :func:`search` and the process-wide cache of open indexes."""

from __future__ import annotations

import os

from .. import settings
from ..engine.index import MemoryIndex
from ..errors import IndexLocked
from ..memory.tree import resolve_root

__all__ = ["search", "open_index"]

_OPEN: dict[tuple, MemoryIndex] = {}


def open_index(root, db=None, model=None) -> MemoryIndex:
    """A process-wide :class:`MemoryIndex` per (root, db, model): the model loads once."""
    base = resolve_root(root)
    key = (base, str(db) if db else None, settings.get("model", model))
    index = _OPEN.get(key)
    if index is None:
        index = _OPEN[key] = MemoryIndex(base, db=db, model=model)
    return index


def search(query: str, root: str | os.PathLike[str], k: int = 10, *, db=None, model=None, sync: bool = True, **options) -> list[dict]:
    """Search a memory root from harness code: JSON-ready dicts of :class:`Hit`.

    Opens (once per process) the index, syncs files changed since the last call unless a
    writer (a ``memsearch watch`` daemon) holds the index, then searches. ``options``:
    ``scope``, ``mode``, ``since``, ``until``.
    """
    index = open_index(root, db=db, model=model)
    if sync:
        try:
            index.sync(wait=0.0)
        except IndexLocked:
            pass  # a daemon holds the index and keeps it fresh
    return [hit.to_dict() for hit in index.search(query, k=k, **options)]
