"""Read replicas: a read-only :class:`~memsearch.engine.index.MemoryIndex` kept on the latest version its
writer committed, by a thread that polls the store, so that searches never ask the store themselves.

LanceDB's model is many readers of immutable table versions and one writer per commit. A replica
(``memsearch serve ROOT --http --db s3://... --read-only``) opens the index read-only: it holds no
writer lease, never syncs, and its store is *pinned* (:attr:`Store.pinned`) to the versions of the
``chunks`` and ``files`` tables it serves. Every :data:`follow_s <memsearch.settings>` seconds
(``MEMSEARCH_FOLLOW_S``, default 0.5) the :class:`Follower` asks the store for the latest versions
(``checkout_latest``: a listing of each table's ``_versions``, plus a HEAD of ``index.json`` to follow a
rebuild). When they moved, :func:`advance` builds the new version's in-memory copies (the vectors below
the ANN threshold, BM25, the files' records) while searches go on answering from the old ones, then
switches the pin: a search sees one committed version or the next, never a commit half-applied.
Between versions a search makes no request to the store at all.

A commit is therefore searchable on a replica about ``follow_s`` plus the time to load the version after
the writer made it (measured in ``tests/s3/test_replicas.py`` and ``benchmarks/perf/replicas.py``;
figures in docs/benchmarks.md). When the store cannot be reached, the replica keeps answering from the
version it holds and says so in its status; it catches up at the first poll that succeeds.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Callable, Iterable

from ... import settings

__all__ = ["advance", "Follower"]

logger = logging.getLogger("memsearch.replica")


def advance(index) -> float | None:
    """Move read-only ``index`` to the latest committed versions of its tables, its in-memory copies built
    before searches use them. When it moved (or was pinned for the first time): the seconds the copies took
    to build (the rest of a poll is the store's answer); else None."""
    store = index.store
    with store.guard(index.root):
        build = index.build_id
        index.follow_build()  # a rebuild by the writer: parameters checked again, caches dropped
        if index.build_id != build:
            store.pinned = None
        store.refresh(pinned_too=True)
        if store.chunks() is None:  # nothing committed yet: searches find no rows until the first build
            return None
        stamp = (store.version(), store.files_version())
        if stamp == store.pinned:
            return None
        started = time.monotonic()
        index.searcher.prepare(stamp, index.build_id)
        store.pinned = stamp
    return time.monotonic() - started


class Follower:
    """A thread keeping read-only indexes on their writer's latest commit. ``indexes``: one index, or a
    callable giving those to follow now (a server's open indexes); ``interval``: seconds between polls
    (default: the ``follow_s`` setting)."""

    def __init__(self, indexes, interval: float | None = None):
        self._indexes: Callable[[], Iterable] = indexes if callable(indexes) else (lambda: (indexes,))
        self.interval = settings.get("follow_s", interval)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        #: What :meth:`status` reports: polls made, versions loaded, the last error and when the last poll succeeded
        self.polls = self.advances = self.errors = 0
        self.last_error: str | None = None
        self.last_ok: float | None = None

    def start(self) -> "Follower":
        """Pin every index now (the caller serves once this returns), then poll in the background."""
        self.poll()
        self._thread = threading.Thread(target=self._run, name="memsearch-follow", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.poll()

    def poll(self) -> int:
        """One round: each index moved to its latest version; how many moved. Errors are logged and kept."""
        moved = 0
        with self._lock:
            for index in list(self._indexes()):
                started = time.monotonic()
                try:
                    copies = advance(index)
                    if copies is not None:
                        moved += 1
                        chunks, files = index.store.pinned
                        logger.info("replica of %s: version %d (files %d), %d rows, loaded in %.0f ms (copies %.0f ms)",
                                    index.location, chunks, files, index.searcher.snapshot()[1],
                                    1000 * (time.monotonic() - started), 1000 * copies)
                except Exception as exc:  # noqa: BLE001 - the store is down or slow: serve the version held
                    self.errors += 1
                    text = f"{type(exc).__name__}: {exc}"
                    if text != self.last_error:
                        logger.warning("replica of %s: cannot follow the writer (%s); serving version %s meanwhile",
                                       index.location, text, index.store.pinned)
                    self.last_error = text
                    continue
                self.last_ok = time.time()
            self.polls += 1
            self.advances += moved
        return moved

    def status(self) -> dict:
        """Polls, versions loaded, errors, the last error and the age of the last successful poll (seconds)."""
        age = None if self.last_ok is None else round(time.time() - self.last_ok, 3)
        return {"role": "replica", "follow_s": self.interval, "polls": self.polls, "advances": self.advances,
                "errors": self.errors, "last_error": self.last_error, "last_ok_age_s": age}

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
