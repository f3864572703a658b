"""The harness entry point :func:`search` and the process-wide cache of open indexes.

Importing it stays light: the engine (model, LanceDB) loads only when a search is answered
in-process, so a harness whose searches a daemon answers never loads a model of its own.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from contextlib import contextmanager
from typing import TYPE_CHECKING, Iterator

from .. import settings
from ..argcheck import refuse_keywords
from ..engine.search.args import check_search
from ..location import IndexLocation
from ..service import route

if TYPE_CHECKING:  # the engine loads on the first open, not at import
    from ..engine.index import MemoryIndex

__all__ = ["search", "open_index", "using_index", "close_indexes", "open_indexes", "trim"]


class _Entry:
    """One open index and how many calls are using it right now (guarded by ``_OPEN_LOCK``)."""

    __slots__ = ("index", "users", "evicted")

    def __init__(self, index: MemoryIndex):
        self.index, self.users, self.evicted = index, 0, False


_OPEN: OrderedDict[tuple, _Entry] = OrderedDict()
_OPEN_LOCK = threading.Lock()  # held only around the table's bookkeeping, never across a search or a close


def _key(root, db, model) -> tuple:
    where = IndexLocation.of(root, db)
    return (where.root, where.db, settings.get("model", model), settings.get("foreign"), settings.get("fusion"))


def _acquire(root, db, model) -> _Entry:
    key = _key(root, db, model)
    with _OPEN_LOCK:
        entry = _OPEN.get(key)
        if entry is not None:
            _OPEN.move_to_end(key)
            entry.users += 1
            return entry
    from ..engine.index import MemoryIndex

    index = MemoryIndex(key[0], db=key[1], model=model)  # outside the lock: opening may take round trips
    with _OPEN_LOCK:
        entry = _OPEN.setdefault(key, _Entry(index))
        _OPEN.move_to_end(key)
        entry.users += 1
    if entry.index is not index:
        index.close()  # another thread opened the same index meanwhile
    return entry


def _release(entry: _Entry) -> None:
    with _OPEN_LOCK:
        entry.users -= 1
        done = [entry] if entry.evicted and entry.users == 0 else []
        done += _evict(settings.get("max_open"), settings.get("open_mb") * 2**20)
    for old in done:
        old.index.close()


def _evict(max_open: int, max_bytes: int) -> list[_Entry]:
    """Take least recently used entries out of the table (``_OPEN_LOCK`` held) until both bounds
    hold; the most recently used always stays. Unused ones are returned to be closed; one in use
    is marked and closed by its last :func:`_release`, so a search never races its own close."""
    sizes = {key: entry.index.resident_bytes() for key, entry in _OPEN.items()}
    total, closing = sum(sizes.values()), []
    while len(_OPEN) > 1 and (len(_OPEN) > max_open or total > max_bytes):
        key, entry = _OPEN.popitem(last=False)
        total -= sizes[key]
        entry.evicted = True
        if entry.users == 0:
            closing.append(entry)
    return closing


@contextmanager
def using_index(root, db=None, model=None) -> Iterator[MemoryIndex]:
    """The process-wide open :class:`MemoryIndex` of ``root`` for the ``with`` block: it is not closed
    while the block runs, even if evicted meanwhile; on leaving, the table is trimmed to its bounds
    (``max_open`` indexes, ``open_mb`` megabytes estimated by ``MemoryIndex.resident_bytes``)."""
    entry = _acquire(root, db, model)
    try:
        yield entry.index
    finally:
        _release(entry)


def open_index(root, db=None, model=None) -> MemoryIndex:
    """A process-wide :class:`MemoryIndex` per root, index, model and settings: the model loads once.

    The key holds everything that changes what the index returns (the foreign directories and
    the fusion from the environment too), so a changed setting opens a new index. An index
    this returns may be evicted (closed) later by other opens; ``close`` leaves it usable, but
    only what :func:`using_index` holds is kept open for the length of a call.
    """
    entry = _acquire(root, db, model)
    _release(entry)
    return entry.index


def trim(max_open: int | None = None, max_bytes: int | None = None) -> int:
    """Close least recently used indexes until at most ``max_open`` stay open, estimated at most
    ``max_bytes`` (defaults: the ``max_open`` and ``open_mb`` settings); how many were taken out."""
    limit = settings.get("open_mb") * 2**20 if max_bytes is None else max_bytes
    with _OPEN_LOCK:
        before = len(_OPEN)
        done = _evict(settings.get("max_open", max_open), limit)
        after = len(_OPEN)
    for old in done:
        old.index.close()
    return before - after


def open_indexes() -> list[dict]:
    """What the process holds open, least recently used first: root, index and estimated bytes."""
    with _OPEN_LOCK:
        items = list(_OPEN.items())
    return [{"root": str(key[0]), "db": str(key[1]), "bytes": entry.index.resident_bytes(), "users": entry.users}
            for key, entry in items]


def close_indexes() -> None:
    """Close every index :func:`open_index` holds (tests, or a harness shutting down)."""
    with _OPEN_LOCK:
        entries = list(_OPEN.values())
        _OPEN.clear()
        for entry in entries:
            entry.evicted = True
        idle = [entry for entry in entries if entry.users == 0]
    for entry in idle:
        entry.index.close()


def search(query: str, root: str | os.PathLike[str], k: int = 10, *, scope: str | None = None, mode: str = "hybrid",
           since: str | None = None, until: str | None = None, db=None, model=None, sync: bool = True,
           local: bool = False, autostart: bool | None = None, **unknown) -> list[dict]:
    """Search a memory root from harness code: JSON-ready dicts of :class:`~memsearch.engine.index.Hit`.

    A running daemon of the index (``memsearch watch``) answers, so the process loads no
    model; otherwise (or with ``local=True``) it opens the index once per process, syncs
    files changed since the last call unless a writer holds the index, then searches; and,
    unless ``autostart`` (``MEMSEARCH_AUTOSTART``) is off, starts a daemon in the background
    for the calls that follow. ``scope``: a memory directory (relative to the root); one that is not
    (a file, a missing, hidden or foreign directory) raises :class:`~memsearch.errors.MemoryFileNotFound`
    or :class:`~memsearch.errors.NotMemoryFile`, as the tools refuse it, rather than finding nothing.
    A keyword it does not take is a ``TypeError`` naming ``memsearch.search()``'s parameters.
    """
    refuse_keywords(search, "memsearch.search()", unknown)
    where = IndexLocation.of(root, db)
    args = check_search(where.root, query, k, scope, mode, since, until, scope_must_exist=True)
    return route.search(where, args, model=model, local=local, sync=sync, start=autostart,
                        using=lambda: using_index(where.root, db=where, model=model))
