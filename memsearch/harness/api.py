"""The harness entry point :func:`search` and the process-wide cache of open indexes.

Importing it stays light: the engine (model, LanceDB) loads only when a search is answered
in-process, so a harness whose searches a daemon answers never loads a model of its own.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING

from .. import settings
from ..errors import IndexLocked, StorageFull
from ..memory.tree import resolve_root

if TYPE_CHECKING:  # the engine loads on the first open, not at import
    from ..engine.index import MemoryIndex

__all__ = ["search", "open_index", "close_indexes", "MAX_OPEN_INDEXES"]

#: Open indexes kept per process, least recently used closed first. Each holds a table handle,
#: a worker thread and (below the ANN threshold) an in-memory copy of its vectors (about 1.5 kB
#: a chunk); the model itself is shared by all of them (one per model and device).
MAX_OPEN_INDEXES = 16

_OPEN: OrderedDict[tuple, MemoryIndex] = OrderedDict()
_OPEN_LOCK = threading.Lock()


def open_index(root, db=None, model=None) -> MemoryIndex:
    """A process-wide :class:`MemoryIndex` per root, index, model and settings: the model loads once.

    The key holds everything that changes what the index returns (the foreign directories and
    the fusion from the environment too), so a changed setting opens a new index.
    """
    from ..engine.index import MemoryIndex, default_db_path
    from ..engine.remote import is_remote

    base = resolve_root(root)
    db_path = settings.get("db", db) if db else default_db_path(base)
    db_path = db_path if is_remote(db_path) else Path(db_path).absolute()  # s3://... stays a URI
    key = (base, db_path, settings.get("model", model), settings.get("foreign"), settings.get("fusion"))
    with _OPEN_LOCK:
        index = _OPEN.get(key)
        if index is not None:
            _OPEN.move_to_end(key)
            return index
    index = MemoryIndex(base, db=db_path, model=model)
    with _OPEN_LOCK:
        index = _OPEN.setdefault(key, index)
        _OPEN.move_to_end(key)
        evicted = [_OPEN.popitem(last=False)[1] for _ in range(len(_OPEN) - MAX_OPEN_INDEXES)]
    for old in evicted:
        old.close()
    return index


def close_indexes() -> None:
    """Close every index :func:`open_index` holds (tests, or a harness shutting down)."""
    with _OPEN_LOCK:
        indexes = list(_OPEN.values())
        _OPEN.clear()
    for index in indexes:
        index.close()


def search(query: str, root: str | os.PathLike[str], k: int = 10, *, db=None, model=None, sync: bool = True,
           local: bool = False, **options) -> list[dict]:
    """Search a memory root from harness code: JSON-ready dicts of :class:`~memsearch.engine.index.Hit`.

    A running daemon of the index (``memsearch watch``) answers, so the process loads no
    model; otherwise (or with ``local=True``) it opens the index once per process, syncs
    files changed since the last call unless a writer holds the index, then searches.
    ``options``: ``scope``, ``mode``, ``since``, ``until``.
    """
    if not local:
        from ..service.client import ask

        params = {"query": query, "k": k, **options, "model": settings.get("model", model)}
        answer = ask(root, "search", params, db=db)
        if answer is not None:
            return answer["hits"]
    index = open_index(root, db=db, model=model)
    if sync:
        try:
            index.sync(wait=0.0)
        except (IndexLocked, StorageFull):
            pass  # a daemon holds the index and keeps it fresh; or the disk is full: search what is there
    return [hit.to_dict() for hit in index.search(query, k=k, **options)]
