"""One root's writer: :class:`Daemon` turns batches of file events into syncs under the index's writer lock.

It keeps its state file up to date (:attr:`~memsearch.location.IndexLocation.state_file`),
compacts the tables on a schedule (:mod:`memsearch.service.compaction`), and with ``idle_exit``
stops once nobody asked about its root for that long (:meth:`Daemon.touch` counts a request).
Which events matter is :class:`~memsearch.service.events.MemoryFilter`'s business;
:mod:`memsearch.service.watcher` feeds a Daemon with watchfiles' events (public as
:mod:`memsearch.watcher`), and :mod:`memsearch.service.roots` keeps one per loaded root.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterable

import watchfiles

from .. import settings
from ..engine.ingest.sync import IndexReport
from ..errors import IndexDamaged, IndexLocked, InvalidArgument, MemsearchError, StoreUnreachable, SyncDeferred
from ..location import IndexLocation
from ..memory.files import atomic_write_json, read_json
from ..memory.root import dir_identity
from ..memory.tree import resolve_root
from . import compaction
from .compaction import Schedule
from .events import MemoryFilter, ancestors

__all__ = ["Daemon", "MemoryFilter", "resolve_debounce", "read_state", "DEBOUNCE_ENV", "DEFAULT_DEBOUNCE_MS"]

logger = logging.getLogger("memsearch.watch")

DEBOUNCE_ENV = settings.env_name("debounce_ms")
#: Longest time (ms) watchfiles groups events before a sync. A lone save is synced after
#: ``STEP_MS`` of silence, so this only bounds the wait under a stream of writes; 300 ms
#: keeps the p95 time from a write to a search that sees it well under 2 s.
DEFAULT_DEBOUNCE_MS = settings.SETTINGS["debounce_ms"].default
MAX_DEBOUNCE_MS = 60_000
#: A batch is handed over once no new event arrived for this long (watchfiles' ``step``).
STEP_MS = 50
#: The watcher wakes at least this often when idle, for the compaction schedule and retries;
#: its first wake-up starts the catch-up.
TICK_MS = 500
#: After a failed sync, a full re-scan is retried this long after.
RETRY_S = 5.0
#: Damage a sync finds is repaired (rebuilt from the Markdown) this long after, at the next wake-up, unless the
#: root or its index folder is gone by then: a file vanishing mid-sync is most often ``rm -rf`` at work, and a
#: rebuild would write a new index into the folder being deleted (and make that ``rm`` fail).
REPAIR_DELAY_S = 1.0
#: A standby writer asks for the lock this often, checking between asks whether it was told to stop.
STANDBY_STEP_S = 1.0
#: ``daemon.json`` is rewritten at most this often during a long sync (progress).
STATE_EVERY_S = 1.0



def resolve_debounce(debounce: int | None = None) -> int:
    """``debounce`` (ms), else ``$MEMSEARCH_DEBOUNCE_MS``, else :data:`DEFAULT_DEBOUNCE_MS`."""
    return settings.get("debounce_ms", debounce, label="debounce")


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).astimezone().isoformat(timespec="seconds")


class _Stopped(Exception):
    """Raised from the progress hook to end a sync after the batch in hand (stop requested)."""


def read_state(where: IndexLocation | str | os.PathLike[str]) -> dict | None:
    """The last state a daemon of the index at ``where`` (a location, or its local directory) wrote, or None."""
    return read_json(IndexLocation.at(where).state_file)


class Daemon:
    """One writer keeping the index of a memory root in step with its files.

    The engine behind :func:`watch`, :func:`awatch` and :func:`serve`: ``start()`` takes the
    lock, ``process(changes)`` handles one watchfiles batch (the first call is the catch-up),
    ``close()`` releases everything. ``process`` and ``close`` may run in different threads.
    """

    def __init__(self, root, *, db=None, model=None, debounce=None, index=None, foreign=None,
                 include_core=None, stop_event=None, lock_timeout: float | None = 0.0,
                 compact: bool = True, state_file: bool = True, idle_exit: float | None = None):
        if index is None:
            from ..engine.index import MemoryIndex

            index = MemoryIndex.open_repairing(root, db=db, model=model, include_core=include_core, foreign=foreign)
        elif resolve_root(root) != index.root:
            raise InvalidArgument(f"root {str(root)!r} is not the root of the given index ({index.root})")
        self.index = index
        self.root = index.root
        self.db_path = index.db_path
        self.debounce = resolve_debounce(debounce)
        self.step = min(STEP_MS, self.debounce)
        self.stop_event = stop_event
        self.lock_timeout = lock_timeout
        self.compact = compact
        self.filter = MemoryFilter(self.root, foreign=index.foreign, include_core=index.include_core,
                                   ignore_paths=[Path(self.db_path).resolve()])
        self.syncs = 0
        self.where: IndexLocation = index.where
        self._state_path = self.where.state_file if state_file else None
        self._state: dict = {}
        self._state_written = 0.0
        self._busy = threading.RLock()
        self._owns_lock = False
        self._caught_up = False
        self._closing = False
        self._needs_rescan = False
        self._retry_at = 0.0
        self._repair = False  # the next full re-scan may rebuild a damaged index (damage found REPAIR_DELAY_S ago)
        self.compactions = Schedule()
        self._vector_build: threading.Thread | None = None
        #: The index clients' searches are served from, when not ``index`` (a server's reader): a compaction
        #: keeps its in-memory copies (:meth:`~memsearch.engine.search.searcher.Searcher.rewriting`).
        self.reader = None
        #: Seconds without a client request after which the daemon stops (None or 0: never).
        self.idle_exit = idle_exit or None
        self._idle = False
        self._last_request = time.monotonic()
        self._identity = self._folders()  # the root's and the index's folders: moved or deleted, the daemon stops
        #: The root's folder was moved, deleted or replaced: the daemon stopped (see :meth:`root_gone`).
        self.gone = False

    # --- life cycle ---------------------------------------------------------------------
    def start(self, **state) -> "Daemon":
        """Take the writer lock and write the first state (``state``: more fields, e.g. the ``socket``
        its clients reach it on)."""
        lock = self.index.lock
        if not lock.held:  # the hold records "watch" as its purpose; the lock's own comes back on release
            self._take(lock)
            self._owns_lock = True
        self._state = {"pid": os.getpid(), "root": str(self.root), "db": str(self.db_path),
                       "model": self.index.embedder.name, "debounce_ms": self.debounce, "started": _now(),
                       "state": "starting", "syncs": 0, "pending": None, "last_sync": None,
                       "last_compaction": None, "error": None, "socket": None} | state
        self._write_state(force=True)
        if self._state_path is not None:
            self.where.pid_file.write_text(f"{os.getpid()}\n")
        logger.info("watching %s (index %s, model %s, debounce %d ms, pid %d)", self.root, self.db_path,
                    self.index.embedder.name, self.debounce, os.getpid())
        return self

    def _take(self, lock) -> None:
        """Take the writer lock; a standby (``lock_timeout`` None: ``watch --standby``) waits in steps of
        STANDBY_STEP_S, so that a stop request ends its wait (:class:`IndexLocked`, as a writer that never got it)."""
        if self.lock_timeout is not None or self.stop_event is None:
            lock.acquire(timeout=self.lock_timeout, purpose="watch")
            return
        while True:
            try:
                lock.acquire(timeout=STANDBY_STEP_S, purpose="watch")
                logger.info("took the writer lock of %s: writing from its last commit", self.where.label)
                return
            except IndexLocked:
                if self.stop_event.is_set():
                    raise

    def sync_paths(self, paths: list[str]) -> dict:
        """Sync exactly ``paths`` now (a client's write), between the batches of file events."""
        with self._busy:
            if self._closing or not self._state:
                raise SyncDeferred("the daemon is stopping: the change is indexed at its next start")
            report = self._sync(sorted(set(paths)), "write")
        if report is None:
            raise SyncDeferred("the daemon could not index the change now: it retries with a full re-scan")
        return {"files": len(set(paths)), "chunks_embedded": report.chunks_embedded}

    def close(self) -> None:
        """Let a sync in flight finish its batch, then release the lock. Idempotent."""
        self._closing = True
        with self._busy:
            if not self._owns_lock and not self._state:
                return
            try:
                if self._state:
                    self._set(state="failed" if self._state.get("state") == "failed" else "stopped", stopped=_now(), force=True)
                    self._state = {}
                    if self._state_path is not None:
                        self.where.pid_file.unlink(missing_ok=True)
            finally:
                if self._owns_lock:
                    self._owns_lock = False
                    self.index.lock.release()
                    logger.info("stopped; the index lock is released")

    def request_rescan(self) -> None:
        """Re-scan the whole tree at the next batch (the watched directories changed)."""
        self._needs_rescan, self._retry_at = True, 0.0

    def fail(self, exc: BaseException) -> None:
        """Record that the daemon died of ``exc``: ``memsearch status`` and ``watch --detach`` say so."""
        logger.error("the daemon stops: %s: %s", type(exc).__name__, exc)
        if self._state:
            self._set(state="failed", error=f"{type(exc).__name__}: {str(exc)[:300]}", force=True)

    def root_gone(self) -> bool:
        """Whether the root's path no longer leads to the folder this daemon started on (moved, deleted,
        replaced): then it stops at once, with one log line, and writes nothing more (``gone``)."""
        if not self.gone and (now := self._folders()) != self._identity:
            self.gone = True
            what = (f"memory root {self.root}" if now[0] != self._identity[0] else f"its index folder {self.db_path}")
            logger.info("%s was moved or removed: stopping", what)
        return self.gone

    def _folders(self) -> tuple:
        return dir_identity(self.root), dir_identity(self.db_path)

    def stopping(self) -> bool:
        return self._closing or self._idle or self.gone or bool(self.stop_event is not None and self.stop_event.is_set())

    @contextmanager
    def exclusive(self):
        """Hold off the watcher's syncs (a client's ``index`` or ``check`` run by this process): yields the index."""
        with self._busy:
            if self._closing or not self._state:
                raise SyncDeferred("the daemon is stopping: run the command again")
            yield self.index

    def replace_index(self, index) -> None:
        """Write through ``index`` from now on (rebuilt with another model or settings); it shares the held lock."""
        with self._busy:
            index.lock = self.index.lock
            self.index = index
            self.filter = MemoryFilter(self.root, foreign=index.foreign, include_core=index.include_core,
                                       ignore_paths=[Path(self.db_path).resolve()])
            self._set(model=index.embedder.name, force=True)

    def touch(self) -> None:
        """A client asked about this root: the idle clock starts again."""
        self._last_request = time.monotonic()

    @property
    def state(self) -> dict:
        """A copy of the state the state file holds (empty once closed)."""
        return dict(self._state)

    def _check_idle(self, now: float) -> None:
        """Stop once no client asked anything for ``idle_exit`` seconds."""
        if not self.idle_exit:
            return
        if now - self._last_request >= self.idle_exit:
            logger.info("no request for %.0f s (idle exit): stopping", now - self._last_request)
            self._idle = True

    # --- work ---------------------------------------------------------------------------
    def plan(self, changes: Iterable[tuple[watchfiles.Change, str]]) -> tuple[set[str], bool]:
        """The relative paths to sync, and whether a directory event calls for a re-scan."""
        files: set[str] = set()
        rescan = False
        for change, path in changes:
            kind = self.filter.kind(change, path)
            if kind == "dir":
                rescan = True
            elif kind == "file":
                files.add(self.filter.relative(path))
        return files, rescan

    def process(self, changes: Iterable[tuple[watchfiles.Change, str]] = ()) -> IndexReport | None:
        """Handle one batch of events (empty: a timer tick). Returns the sync's report, if any."""
        with self._busy:
            if self._closing or not self._state or self.root_gone():
                return None
            if not self._caught_up:
                self._caught_up = True
                return self._catch_up()
            files, rescan = self.plan(changes)
            if self._needs_rescan and time.monotonic() >= self._retry_at:
                rescan = True
            report = None
            if rescan or files:
                report = self._sync(None if rescan else sorted(files), "rescan" if rescan else "changes")
            if report is not None and report.changed:
                self._start_vector_index()
            building = self._vector_build is not None and self._vector_build.is_alive()
            if self.compact and not building and not self.stopping() and self.compactions.due(time.monotonic()):
                self.compact_now()
            if not building and not changes:
                self._check_idle(time.monotonic())
            return report

    def _catch_up(self) -> IndexReport | None:
        report = self._sync(None, "catch-up")
        if report is not None:
            try:  # a process killed before its last sync finished may have left them unbuilt
                self.index.store.ensure_indexes()
                report = self.index.check_and_repair() or report  # damage: rebuilt from the Markdown, logged
            except Exception as exc:  # noqa: BLE001 - searches still work (flat scans); retried next start
                (logger.warning if isinstance(exc, StoreUnreachable) else logger.exception)("could not check the index: %s", exc)
        self._start_vector_index()
        return report

    def _start_vector_index(self) -> None:
        """Build the ANN index in a background thread once the table passes its threshold.

        Searches stay exact (and syncs go on) while it builds; rows written meanwhile are
        searched beside it. A failure is logged and retried after the next write.
        """
        if (self._vector_build is not None and self._vector_build.is_alive()) or self.stopping():
            return
        store = self.index.store
        try:
            if not self.index.vector_index_due():
                return
        except Exception:  # noqa: BLE001 - the next sync retries
            return

        def build() -> None:
            started = time.monotonic()
            try:
                # a counted hold of this process's lock (the daemon has one), not a thread's write:
                # syncs go on beside the build
                lock = self.index.lock.acquire(timeout=0.0)
                try:
                    store.build_vector_index()
                finally:
                    lock.release()
            except Exception:  # noqa: BLE001
                logger.exception("building the vector index failed; retried after the next write")
                return
            logger.info("vector index (ANN) built in %.1f s", time.monotonic() - started)

        self._vector_build = threading.Thread(target=build, name="memsearch-ann", daemon=True)
        self._vector_build.start()

    def _progress(self, phase: str, done: int, total: int, chunks: int) -> None:
        if phase != "index":
            return
        if 0 < done < total and self.stopping():
            raise _Stopped
        self._set(pending=total - done)

    def _sync(self, only: list[str] | None, label: str) -> IndexReport | None:
        started = time.monotonic()
        self._set(state="syncing", pending=len(only) if only is not None else None, force=True)
        repair = self._repair and only is None
        try:
            report = self.index.sync(only=only, progress=self._progress, repair=repair)
        except _Stopped:
            logger.info("stop requested: the batch in hand is committed; the rest is indexed at the next start")
            self._set(state="stopping", force=True)
            return None
        except Exception as exc:
            if self.root_gone():  # a sync racing the root's removal: no error, no traceback, no rebuild
                return None
            if isinstance(exc, IndexDamaged) and not repair:
                logger.warning("%s: rebuilt from the Markdown in %.0f s unless the root is removed meanwhile", exc.reason,
                               REPAIR_DELAY_S)
                self._needs_rescan, self._retry_at, self._repair = True, time.monotonic() + REPAIR_DELAY_S, True
                self._set(state="retrying", error=str(exc), force=True)
                return None
            if isinstance(exc, MemsearchError) and not isinstance(exc, StoreUnreachable):  # a store outage: retried
                logger.error("sync failed: %s", exc)
                self._set(state="failed", error=str(exc), force=True)
                raise
            (logger.warning if isinstance(exc, StoreUnreachable) else logger.exception)(
                "sync failed: %s; a full re-scan follows in %.0f s", exc, RETRY_S)
            self._needs_rescan, self._retry_at = True, time.monotonic() + RETRY_S
            self._set(state="retrying", error=f"{type(exc).__name__}: {exc}", force=True)
            return None
        if only is None:
            self._needs_rescan = self._repair = False
            self.filter.known_dirs = {d for p in self.index.store.file_states() for d in ancestors(p)}
        if report.changed:
            self.compactions.wrote(started, time.monotonic())
        self.syncs += 1
        self.filter.known_dirs.update(d for p in report.changed_paths for d in ancestors(p))
        files = report.files_added + report.files_changed + report.files_removed
        logger.info("sync (%s): %d files (%d added, %d changed, %d removed), %d chunks embedded, %d reused, %.2f s",
                    label, files, report.files_added, report.files_changed, report.files_removed,
                    report.chunks_embedded, report.chunks_reused, report.seconds)
        last = {k: v for k, v in report.to_dict().items() if not k.endswith("_paths")}
        self._set(state="watching", pending=0, syncs=self.syncs, error=None, last_sync=dict(last, at=_now()), force=True)
        return report

    # --- compaction -----------------------------------------------------------------------
    def compact_now(self) -> None:
        """Compact the tables, fold new rows into the indexes, prune versions older than VERSION_KEEP_S."""
        store = self.index.store
        started = time.monotonic()
        self._set(state="compacting", force=True)
        try:
            before = store.disk_bytes()  # a remote store's listing: may find the store down
            served = self.reader or self.index
            served.searcher.rewriting(lambda: store.optimize(keep=dt.timedelta(seconds=compaction.VERSION_KEEP_S)),
                                      served.build_id)
        except Exception as exc:  # noqa: BLE001 - retried after the next write; a store outage without a traceback
            (logger.warning if isinstance(exc, StoreUnreachable) else logger.exception)("compaction failed: %s", exc)
            self.compactions.failed(retry=not isinstance(exc, StoreUnreachable))  # not every tick while down
            return self._set(state="watching", force=True)
        self.compactions.compacted(time.monotonic())
        after = store.disk_bytes()
        logger.info("compacted: index %.1f MB -> %.1f MB on disk, %.2f s", before / 1e6, after / 1e6,
                    time.monotonic() - started)
        self._set(state="watching", last_compaction=_now(), disk_bytes=after, force=True)

    # --- state file -----------------------------------------------------------------------
    def _set(self, force: bool = False, **fields) -> None:
        self._state.update(fields)
        self._write_state(force)

    def _write_state(self, force: bool = False) -> None:
        if self._state_path is None or not self._state or self.gone:
            return
        now = time.monotonic()
        if not force and now - self._state_written < STATE_EVERY_S:
            return
        self._state_written = now
        self._state["updated"] = _now()
        try:
            atomic_write_json(self._state_path, self._state, indent=2)
        except OSError as exc:  # the index directory went away; the next sync reports it
            logger.warning("cannot write %s: %s", self._state_path, exc)
