"""Memory writes from harness code: :func:`edit`, :func:`open_editor`, and :class:`IndexSync`, which makes every
write searchable before it returns.

Read-your-writes: after a write, :class:`IndexSync` brings the index in line with exactly the
paths it changed. Without a daemon it syncs those paths itself (``MemoryIndex.sync(only=...)``:
only the changed chunks are embedded). When a daemon (``memsearch watch``) holds the index, the
daemon owns every index write: this asks it over its socket to sync those paths now (``via``
"daemon"); a daemon that cannot be asked still sees the file events, and this waits until the
index records the new state of each path (size and mtime), up to ``timeout`` seconds (``via``
"daemon-events"). Either way the
result says how (``via``), how long it took, and whether the index holds the change (``synced``).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Callable, Sequence

from ..errors import DaemonUnavailable, IndexLocked, MemsearchError
from ..location import IndexLocation
from ..memory.editor import Editor, EditResult

__all__ = ["edit", "edit_served", "open_editor", "IndexSync", "INDEX_WAIT_S"]

#: Longest wait for the index to hold a write (another writer's sync, or the daemon's).
INDEX_WAIT_S = 30.0
#: How often the index is checked while a daemon syncs a write.
POLL_S = 0.01
#: The index report of a write made while a sync begun before it (the server's start-up sync) runs on past the wait.
BUSY_NOTE = (
    "the index is still busy with a sync that began before this write (the server's start-up sync): the "
    "file is written and memory_read reads it now; the next sync, which each search runs first, indexes it"
)


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 1)


class IndexSync:
    """Called with the relative paths one write changed; returns once the index holds them.

    ``index``: a :class:`~memsearch.engine.index.MemoryIndex`, or a callable returning one (opened
    on the first write). ``guard``: a lock held while syncing (a :class:`~memsearch.harness.tools.ToolBox`'s,
    so a search and a write never sync the same index at once). A write that cannot take it within
    ``timeout`` (a long start-up sync holds it) returns at once with ``synced: false``, ``via: "busy"``.
    ``syncer``: the process holding the index's writer lock is this one (the daemon serving a client's write,
    :mod:`memsearch.harness.served`): it syncs the paths (``Daemon.sync_paths``), ``via`` "daemon".
    """

    def __init__(self, index, *, timeout: float | None = None, guard=None,
                 syncer: Callable[[list[str]], dict] | None = None):
        self._index = index
        self.timeout = INDEX_WAIT_S if timeout is None else timeout
        self.guard = guard
        self.syncer = syncer

    @property
    def index(self):
        if callable(self._index) and not hasattr(self._index, "sync"):
            self._index = self._index()
        return self._index

    def __call__(self, paths: Sequence[str]) -> dict:
        started = time.perf_counter()
        index = self.index
        wanted = sorted({p for p in paths if "/" in p or index.include_core})
        if not wanted:
            return {
                "synced": True,
                "via": "none",
                "files": 0,
                "ms": 0.0,
                "note": "core memory is always in context and is not indexed",
            }
        if self.guard is not None:
            if not self.guard.acquire(
                timeout=self.timeout
            ):  # a sync begun before this write (the server's start-up sync)
                return {"synced": False, "via": "busy", "files": len(wanted), "ms": _ms(started), "note": BUSY_NOTE}
            try:
                synced, via, embedded = self._sync(index, wanted)
            finally:
                self.guard.release()
        else:
            synced, via, embedded = self._sync(index, wanted)
        result = {"synced": synced, "via": via, "files": len(wanted), "ms": _ms(started)}
        if index.include_core and any("/" not in p for p in wanted):
            result["core_indexed"] = True  # this index searches core memory too (--include-core)
        if embedded is not None:
            result["chunks_embedded"] = embedded
        if not synced:
            result["note"] = (
                f"the index did not show this write within {self.timeout:g} s; the daemon indexes it "
                "when it catches up; memory_read and `memsearch status` see the file now"
            )
        return result

    def _sync(self, index, wanted: list[str]) -> tuple[bool, str, int | None]:
        if self.syncer is not None:
            try:
                return True, "daemon", self.syncer(wanted).get("chunks_embedded")
            except MemsearchError:  # stopping, or a failed sync: its file events (or next start) index it
                return False, "daemon", None
        from ..engine.storage.lock import lock_holder

        holder = lock_holder(index.db_path) if not index.lock.held else None
        if not (holder and holder.get("purpose") == "watch"):
            try:
                return True, "sync", index.sync(only=wanted, wait=self.timeout).chunks_embedded
            except IndexLocked:
                pass  # a daemon took the index meanwhile: it syncs the change
        answered = _daemon_sync(index, wanted, self.timeout)
        if answered is not None:
            return True, "daemon", answered.get("chunks_embedded")
        return wait_indexed(index, wanted, self.timeout), "daemon-events", None


def _daemon_sync(index, paths: list[str], timeout: float) -> dict | None:
    """Ask the daemon serving ``index`` to sync ``paths`` now; None when it cannot (then wait for its events)."""
    from ..service.client import Client

    try:
        return Client(index.root, index.where, timeout=timeout).call("sync", paths=paths)
    except (DaemonUnavailable, MemsearchError):
        return None


def _matches(index, states: dict, rel: str) -> bool:
    try:
        st = os.stat(index.root / rel)
    except FileNotFoundError:
        return rel not in states
    state = states.get(rel)
    return state is not None and state.same_as(st)


def wait_indexed(index, paths: Sequence[str], timeout: float) -> bool:
    """Wait until the index records the current state of every path (a removed one: no record)."""
    deadline = time.monotonic() + timeout
    while True:
        index.store.refresh()
        states = index.store.file_states()
        if all(_matches(index, states, p) for p in paths):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(POLL_S)


def _protected(root, db) -> tuple[Path, ...]:
    """The index's local directory (for a remote index: this machine's state for it), never written as memory."""
    return (IndexLocation.of(root, db).state,)


def open_editor(
    root: str | os.PathLike[str],
    *,
    db=None,
    model=None,
    index=None,
    budget: int | None = None,
    sync: bool = True,
    timeout: float | None = None,
    guard=None,
    on_change: Callable[[tuple[str, ...]], dict | None] | None = None,
    **options,
) -> Editor:
    """An :class:`~memsearch.memory.editor.Editor` on ``root`` whose writes are searchable when they return.

    ``index``: the :class:`~memsearch.engine.index.MemoryIndex` to keep in line (default: the
    process-wide one of ``open_index(root, db, model)``, opened on the first write). ``sync=False``
    leaves the index alone (a daemon, or the next search, catches up). ``options`` go to the editor
    (``encoding``, ``foreign``, ``lock_timeout``).
    """
    if on_change is None and sync:
        if index is None:

            def index():  # noqa: E306 - opened on the first write only
                from .api import open_index

                return open_index(root, db=db, model=model)

        on_change = IndexSync(index, timeout=timeout, guard=guard)
    protect = _protected(root, db) + ((Path(index.db_path),) if index is not None and hasattr(index, "db_path") else ())
    return Editor(root, budget=budget, protect=protect, on_change=on_change, **options)


def edit(
    root: str | os.PathLike[str],
    command: str,
    *,
    db=None,
    model=None,
    index=None,
    budget: int | None = None,
    sync: bool = True,
    **arguments,
) -> EditResult:
    """Run one command of Claude's memory tool on ``root``; when it returns, search sees the change.

        >>> memsearch.edit("memory", "create", path="/memories/notes/standup.md", file_text="# Standup\\n...")

    ``arguments`` are the tool's: ``path``, ``view_range``, ``file_text``, ``old_str``, ``new_str``,
    ``insert_line``, ``insert_text``, ``old_path``, ``new_path``. Raises the typed errors of
    :mod:`memsearch.errors` (nothing is written then).
    """
    if index is None and sync and command != "view":
        served = edit_served(root, db, command, arguments, budget=budget, model=model)
        if served is not None:
            return EditResult.from_dict(served)
    editor = open_editor(root, db=db, model=model, index=index, budget=budget, sync=sync and command != "view")
    return editor.run(command, **arguments)


def edit_served(root, db, command: str, arguments: dict, *, budget: int | None = None, model=None) -> dict | None:
    """One memory-tool write carried out by the daemon serving ``root``'s index, which indexes it before it
    replies (``EditResult.to_dict()``); None when none serves it (or one with another model than ``model``):
    then write in-process."""
    from .forward import edit as forward_edit

    return forward_edit(root, db, command, arguments, budget=budget, model=model)
