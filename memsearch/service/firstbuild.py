"""What a search sees of a tree's first build: who embeds it, the wait for its first rows, and the error before them.

A search answered in-process on a tree never indexed (the first call of the CLI, of
:func:`memsearch.search` or of MCP, with no daemon yet) writes the files' text rows itself and
leaves their embedding to the daemon it auto-started (:func:`daemon_coming`), so it answers with
keyword hits flagged ``partial`` within seconds; with no daemon coming (autostart off, ``--local``
with none running, a read-only or remote index) it embeds everything first, as a plain sync does.
When another writer got the index first (that daemon, or another client's text pass) and no row
exists yet, the search waits for the first rows (:func:`await_rows`), at most
:data:`FIRST_ROWS_WAIT_S`. A daemon asked during its first sync, before any row exists,
answers :class:`~memsearch.errors.IndexBuilding` (:func:`still_building`), never an empty list;
its client asks again until the first rows answer (:func:`await_daemon`), within the same bound,
and only then reports it. Every first build writes the text rows first, whatever its size
(:mod:`memsearch.engine.ingest.sync`), so that wait is the daemon's first text batch: well
under a second for a small tree.
"""

from __future__ import annotations

import time
from typing import Callable

from ..errors import Hint, IndexBuilding
from ..location import IndexLocation, service_start_file
from ..memory.files import read_json
from ..platforms import flock_taken

__all__ = ["daemon_coming", "building", "still_building", "await_rows", "await_daemon", "FIRST_ROWS_WAIT_S"]

#: Longest wait of an in-process search for the first rows another writer of a cold index writes
#: (a daemon's model load then its first text batch: 5-8 s on 2 cores at load 4); then IndexBuilding.
FIRST_ROWS_WAIT_S = 30.0
#: Seconds between two looks at the index (and the daemon) during that wait.
POLL_S = 0.2


def daemon_coming(where: IndexLocation) -> bool:
    """Whether this user's service is starting or running, so that it will embed ``where``'s index: it
    holds the start file's flock for its whole life, from before it waits for the writer lock
    (:mod:`.autostart`), and loads a root on the first request naming it."""
    return not where.remote and flock_taken(service_start_file()) is True


def building(state: dict | None) -> bool:
    """Whether a daemon's state (its state file, or :class:`~.daemon.Daemon`'s own) says its first sync runs."""
    return bool(state) and not state.get("syncs") and state.get("state") in ("starting", "syncing")


def still_building(root, state: dict | None) -> IndexBuilding:
    """The error of a search that finds no row while the index's first build runs."""
    pending = (state or {}).get("pending")
    files = f"{pending} files pending" if isinstance(pending, int) and pending > 0 else "counting the files"
    return IndexBuilding(f"still indexing {root}: {files}, none searchable yet", hint=Hint("wait"))


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
