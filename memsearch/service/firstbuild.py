"""What a search sees of a tree's first build: who embeds it, the wait for its first rows, and the error before them.

A search answered in-process on a tree never indexed (the first call of the CLI, of
:func:`memsearch.search` or of MCP, with no daemon yet) writes the files' text rows itself and
leaves their embedding to the daemon it auto-started (:func:`daemon_coming`), so it answers with
keyword hits flagged ``partial`` within seconds; with no daemon coming (autostart off, ``--local``
with none running, a read-only or remote index) it embeds everything first, as a plain sync does.
When another writer got the index first (that daemon, or another client's text pass) and no row
exists yet, the search waits for the first rows (:func:`await_rows`), at most
:data:`FIRST_ROWS_WAIT_S`. A serving process asked before any row exists (loading the root, or in
its first sync) waits for them itself, at most :data:`SERVED_ROWS_WAIT_S` per request
(:func:`await_first_rows`), then answers :class:`~memsearch.errors.IndexBuilding`
(:func:`still_building`), never an empty list; its client asks again until the first rows answer
(:func:`await_daemon`), within its own bound, and only then reports it. Every first build writes
the text rows first, whatever its size (:mod:`memsearch.engine.ingest.sync`), so that wait is the
service's start (LanceDB's import, the model) and its first text batch: well under a second for a
small tree once the service runs. A root that has an index is answered at once, but a search that comes while
its first sync runs (the catch-up with what changed while nobody watched, once the model is loaded) waits for it,
at most :data:`SERVED_ROWS_WAIT_S` (:func:`await_searchable`), so that a note written between two sessions is
found by the next session's first search; an empty answer before it ends says "no hits yet" (:func:`indexing`).
"""

from __future__ import annotations

import os
import time
from typing import Callable

from ..errors import Hint, IndexBuilding
from ..location import IndexLocation, service_start_file
from ..memory.files import read_json
from ..platforms import flock_taken

__all__ = ["daemon_coming", "building", "indexing", "Hits", "still_building", "await_rows", "await_daemon", "await_first_rows",
           "await_searchable", "FIRST_ROWS_WAIT_S", "SERVED_ROWS_WAIT_S"]

#: Longest wait of a client (an in-process search, the CLI's, the library's) for the first rows another writer
#: of a cold index writes, then IndexBuilding: an auto-started service's start (LanceDB's import, the model), its
#: lock and first text batch took 5-6 s from the session's start on 2 cores at load 5-6 (docs/benchmarks.md,
#: "First call of a session"); this bound leaves that much again for a bigger tree's first batch.
FIRST_ROWS_WAIT_S = 10.0
#: Longest wait of one request to a serving process for the first rows of a root it loads or builds, then
#: IndexBuilding: with the wait for the root to open (``roots.LOAD_WAIT_S``) under the shortest client timeout
#: (the ``client_timeout`` setting, 3 s by default), so the client asks again (:func:`await_daemon`) rather
#: than giving up on the service and working in-process.
SERVED_ROWS_WAIT_S = 1.0
#: Seconds between two looks at the index (and the daemon) during that wait.
POLL_S = 0.2
#: Seconds between two looks at a catch-up (a few changed files: well under a second once the model is loaded).
CATCH_UP_POLL_S = 0.05


def daemon_coming(where: IndexLocation) -> bool:
    """Whether this user's service is starting or running, so that it will embed ``where``'s index: it
    holds the start file's flock for its whole life, from before it waits for the writer lock
    (:mod:`.autostart`), and loads a root on the first request naming it."""
    return not where.remote and flock_taken(service_start_file()) is True


class Hits(list):
    """A search's hits (JSON-ready dicts), with ``indexing``: how far the root's build still under way is (see
    :func:`indexing`), or None; so that an empty answer can say "no hits yet" rather than "no hits"."""

    def __init__(self, hits=(), indexing: dict | None = None):
        super().__init__(hits)
        self.indexing = indexing


def indexing(index, hits=(), catching_up: bool = False) -> dict | None:
    """``{"files": N, "embedded": E}`` (the tree's files to index, those embedded) while a build is under way: some
    recorded file searchable by its words only (a first build's text rows, the hits' ``partial`` flag), or, given
    ``catching_up`` (a serving process's first sync of a root it just loaded), some file added or changed since it
    was indexed; ``{"unbuilt": True, ...}`` for a read replica whose writer has committed no build yet; else None.
    Looked at for an empty answer only (``hits``), which then says "no hits yet" rather than "no hits"."""
    from ..engine.storage.schema import is_incomplete
    from ..memory.tree import scan

    if hits:
        return None
    if getattr(index, "read_only", False) and index.store.pinned is None:  # a replica before its writer's first commit
        return {"files": 0, "embedded": 0, "unbuilt": True}
    try:
        states = index.store.file_states()
        building = any(is_incomplete(s.mtime_ns, s.size) for s in states.values())
        if not building and not catching_up:
            return None
        wanted = set(scan(index.root, foreign=index.foreign).indexed_files(index.include_core))
        if building:
            done = sum(1 for path, s in states.items() if path in wanted and not is_incomplete(s.mtime_ns, s.size))
        else:
            done = sum(1 for path in wanted if path in states and states[path].same_as(os.stat(index.root / path)))
    except Exception:  # noqa: BLE001 - a note, never a failed search (a file removed meanwhile: no note)
        return None
    return {"files": len(wanted), "embedded": done} if done < len(wanted) else None  # never "30 of 30 files"


def building(state: dict | None) -> bool:
    """Whether a daemon's state (its state file, or :class:`~.daemon.Daemon`'s own) says its first sync runs."""
    return bool(state) and not state.get("syncs") and state.get("state") in ("starting", "syncing")


def still_building(root, state: dict | None) -> IndexBuilding:
    """The error of a search that finds no row while the index's first build runs."""
    pending = (state or {}).get("pending")
    files = f"{pending} files pending" if isinstance(pending, int) and pending > 0 else "counting the files"
    return IndexBuilding(f"still indexing {root}: {files}, none searchable yet", hint=Hint("wait"))


def await_first_rows(root, rows: Callable[[], int], state: Callable[[], dict | None],
                     wait: float = SERVED_ROWS_WAIT_S) -> None:
    """Return once ``rows()`` (the serving process's reader) counts rows or ``state()`` (its writer's) says no
    first build runs; :class:`IndexBuilding` after ``wait`` seconds."""
    deadline = time.monotonic() + wait
    while not rows() and building(state()):
        if time.monotonic() >= deadline:
            raise still_building(root, state())
        time.sleep(POLL_S)


def await_searchable(root, index, state: Callable[[], dict | None], wait: float = SERVED_ROWS_WAIT_S) -> bool:
    """Before a serving process searches ``index`` (its reader of ``root``): with no row yet, the wait for the first
    build's first rows (:func:`await_first_rows`); else, once the model is loaded, a wait for the writer's first sync,
    the catch-up with what changed while nobody watched, so that a root's first search finds the note written before
    the service loaded it. Each wait at most ``wait`` seconds. Whether that catch-up is over (False: an empty answer
    says "no hits yet", :func:`indexing`)."""
    rows = index.rows_now
    if not rows():
        await_first_rows(root, rows, state, wait)
        return True
    deadline = time.monotonic() + wait
    while building(state()):
        if index.keyword_only or time.monotonic() >= deadline:  # the model loads: no catch-up can end meanwhile
            return False
        time.sleep(CATCH_UP_POLL_S)
    return True


def await_rows(where: IndexLocation, search: Callable[[], list], rows: Callable[[], int],
               ask: Callable[[], list | None] | None = None, wait: float = FIRST_ROWS_WAIT_S) -> list:
    """The hits of ``search()`` once the index has rows, or ``ask()``'s (the daemon's) once it answers,
    while another writer builds it: ``[]`` as soon as no writer is building (an empty tree), else
    :class:`IndexBuilding` after ``wait`` seconds."""
    from .process import verified_holder

    deadline = time.monotonic() + wait
    while True:
        if ask is not None:
            try:
                answer = ask()
            except IndexBuilding:
                answer = None
            if answer is not None:
                return answer
        hits = search()
        if hits or rows():
            return hits
        holder = verified_holder(where)
        state = read_json(where.state_file) if holder is not None and holder.get("purpose") == "watch" else None
        state = state if state is not None and state.get("pid") == holder["pid"] else None  # not a stale one
        if holder is None or (state is not None and not building(state)):
            return hits  # nobody is building: the index is what it is
        if time.monotonic() >= deadline:
            raise still_building(where.root, state)
        time.sleep(POLL_S)


def await_daemon(ask: Callable[[], dict | None], first: IndexBuilding, wait: float | None = None) -> dict | None:
    """``ask()``'s answer once the daemon building a first index has rows, after its ``first`` answer was
    :class:`IndexBuilding`: asked again every :data:`POLL_S` seconds for at most ``wait`` seconds, then
    the last such error is raised (default :data:`FIRST_ROWS_WAIT_S`). None when the daemon went away
    meanwhile (then answer in-process)."""
    deadline = time.monotonic() + (FIRST_ROWS_WAIT_S if wait is None else wait)
    while time.monotonic() < deadline:
        time.sleep(POLL_S)
        try:
            return ask()
        except IndexBuilding as exc:
            first = exc
    raise first
