"""The indexing daemon: follow file events under a memory root and keep its index fresh.

A tiny API in the manner of watchfiles::

    for report in watch("memory/", stop_event=event):   # a generator of IndexReport, one per sync
        ...
    async for report in awatch("memory/"):               # the same, for asyncio
        ...

How it works:

* It takes the index's writer lock (:class:`~memsearch.lock.WriterLock`) for its whole life;
  a second writer is refused with a message naming this process. Readers never lock.
* The first step is a catch-up: one incremental sync of everything changed while nobody
  watched (unchanged files are skipped by size and mtime). The file watcher is already
  running by then, so nothing written during the catch-up is missed.
* Then it follows watchfiles events (debounced by watchfiles itself). :class:`MemoryFilter`
  asks :func:`memsearch.memory.tree.classify` what each path is and drops hidden, foreign and
  non-Markdown entries (editor swap, backup and temporary files among them). A batch of
  plain file events syncs only those paths; any directory event (a folder created, renamed,
  deleted) re-scans the whole tree incrementally, which is cheap and always right.
* On a schedule (:mod:`memsearch.service.compaction`) it compacts the
  tables and prunes old LanceDB versions, so disk use stays bounded; never so early that a
  search still running in another process could lose the version it reads.
* A stop request (``stop_event``, or SIGINT/SIGTERM under :func:`serve`) lets the batch in
  hand commit, then releases the lock; whatever is left is caught up at the next start.
* State for ``memsearch status`` goes to ``DB/daemon.json`` (written atomically), logs go
  through :mod:`logging` (logger ``memsearch.watch``), one line per sync.
* Answering clients on a socket while it watches is :mod:`memsearch.service.host`'s business
  (``memsearch watch ROOT`` and the per-user service).
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import threading
import time
from typing import AsyncIterator, Iterator

import watchfiles

from ..engine.ingest.sync import IndexReport
from ..location import LOG_FILE, PID_FILE, STATE_FILE
from ..memory import rootfs
from .compaction import COMPACT_EVERY_SYNCS, COMPACT_MAX_INTERVAL_S, COMPACT_QUIET_S, VERSION_KEEP_S
from .daemon import (
    DEBOUNCE_ENV,
    DEFAULT_DEBOUNCE_MS,
    TICK_MS,
    Daemon,
    MemoryFilter,
    read_state,
    resolve_debounce,
)

__all__ = ["watch", "awatch", "serve", "follow", "watch_dirs", "Daemon", "MemoryFilter", "resolve_debounce", "read_state",
           "DEBOUNCE_ENV", "DEFAULT_DEBOUNCE_MS", "STATE_FILE", "PID_FILE", "LOG_FILE", "COMPACT_QUIET_S",
           "COMPACT_EVERY_SYNCS", "COMPACT_MAX_INTERVAL_S", "VERSION_KEEP_S"]

logger = logging.getLogger("memsearch.watch")


def _events(daemon: Daemon, stop_event, watcher=watchfiles.watch, dirs=None, **extra):
    # Each real directory watched on its own (recursive=False): watchfiles' recursive walk follows
    # directory links (into / or /proc) and dies on a permission error; ours never follows one.
    return watcher(*(dirs or watch_dirs(daemon)), watch_filter=daemon.filter, debounce=daemon.debounce, step=daemon.step,
                   stop_event=stop_event, rust_timeout=TICK_MS, yield_on_timeout=True, recursive=False,
                   ignore_permission_denied=True, **extra)


def watch_dirs(daemon: Daemon) -> list[str]:
    """The directories to watch: the root and every real directory below it that may hold memory
    (links, hidden and foreign directories and the index itself left out), listed through
    descriptors (:func:`~memsearch.memory.rootfs.walk_dirs`): a folder swapped for a link is never entered."""
    root = str(daemon.root)
    foreign = set(daemon.filter.foreign)

    def descend(rel: str, entry: rootfs.Entry) -> bool:
        return (not entry.name.startswith(".") and rel not in foreign
                and daemon.filter.relative(os.path.join(root, rel)) is not None)  # not the index directory

    root_fd = rootfs.open_root(daemon.root)
    try:
        return sorted(root if listed.rel == "." else os.path.join(root, listed.rel)
                      for listed in rootfs.walk_dirs(root_fd, root, [], descend))
    finally:
        os.close(root_fd)


def _dir_events(changes, daemon: Daemon) -> bool:
    return any(daemon.filter.kind(change, path) == "dir" for change, path in changes)


#: After watchfiles fails on an event it cannot read (a file name that is not valid UTF-8: "Unable to decode path"),
#: the root is watched again and re-scanned after this pause, so that a program writing such a file without a pause
#: costs one re-scan a second at most, and the watcher never ends on it.
UNREADABLE_EVENT_PAUSE_S = 1.0


def _unreadable_event(exc: BaseException, daemon: Daemon, told: bool) -> bool:
    """Whether ``exc`` is watchfiles failing on an event whose path it cannot decode (then the watch starts again:
    the name is never memory, and the re-scan reports it as a bad name); logged unless ``told`` already."""
    errors = exc.exceptions if isinstance(exc, BaseExceptionGroup) else (exc,)  # awatch's comes in a task group's
    if not all(type(e).__name__ == "WatchfilesRustInternalError" and "decode path" in str(e) for e in errors):
        return False
    exc = errors[0]
    if not told:
        logger.warning("%s: a file event names a path that is not valid UTF-8 (%s): such a name is never memory, rename "
                       "it; watching again", daemon.root, exc)
    return True


def watch(root: str | os.PathLike[str], *, db=None, model=None, debounce: int | None = None, stop_event=None,
          index=None, foreign=None, include_core: bool | None = None, lock_timeout: float | None = 0.0,
          compact: bool = True, state_file: bool = True, idle_exit: float | None = None) -> Iterator[IndexReport]:
    """Keep the index of ``root`` fresh; yield an :class:`IndexReport` per sync (the catch-up first).

    ``index``: a :class:`~memsearch.engine.index.MemoryIndex` to use (else one is opened from ``db``,
    ``model``, ``foreign``, ``include_core``). ``debounce`` (ms): see :func:`resolve_debounce`.
    ``stop_event`` (anything with ``is_set()``, e.g. :class:`threading.Event`) ends the
    generator after the batch in hand. ``lock_timeout``: seconds to wait for another writer
    (None: forever) before raising :class:`~memsearch.errors.IndexLocked`. The lock is held
    until the generator ends or is closed. ``state_file``: write the daemon's state file. ``idle_exit``:
    end after this many seconds without a :meth:`Daemon.touch` (None: never).
    """
    daemon = Daemon(root, db=db, model=model, debounce=debounce, index=index, foreign=foreign,
                    include_core=include_core, stop_event=stop_event, lock_timeout=lock_timeout,
                    compact=compact, state_file=state_file, idle_exit=idle_exit)
    daemon.start()
    yield from follow(daemon)


def follow(daemon: Daemon) -> Iterator[IndexReport]:
    """Run a started :class:`Daemon` on file events until its stop event; closes it at the end."""
    stop_event = daemon.stop_event
    events = None
    told = False  # of an event watchfiles could not read
    try:
        dirs = watch_dirs(daemon)
        while True:
            events = _events(daemon, stop_event, dirs=dirs)
            restart = False
            try:
                for changes in events:
                    report = daemon.process(changes)
                    if report is not None:
                        yield report
                    if daemon.stopping():
                        break
                    if _dir_events(changes, daemon) and (now := watch_dirs(daemon)) != dirs:
                        dirs, restart = now, True  # folders came or went: watch the new set, then re-scan
                        break
            except Exception as exc:
                if not _unreadable_event(exc, daemon, told):
                    raise
                told, restart = True, _pause(daemon)
            events.close()
            events = None
            if not restart:
                break
            daemon.request_rescan()
    except Exception as exc:
        daemon.fail(exc)
        raise
    finally:
        if events is not None:
            events.close()
        daemon.close()


def _pause(daemon: Daemon) -> bool:
    """Wait :data:`UNREADABLE_EVENT_PAUSE_S` before watching again; False when the daemon is told to stop meanwhile."""
    deadline = time.monotonic() + UNREADABLE_EVENT_PAUSE_S
    while time.monotonic() < deadline:
        if daemon.stopping():
            return False
        time.sleep(0.05)
    return not daemon.stopping()


async def awatch(root: str | os.PathLike[str], *, db=None, model=None, debounce: int | None = None,
                 stop_event=None, index=None, foreign=None, include_core: bool | None = None,
                 lock_timeout: float | None = 0.0, compact: bool = True,
                 state_file: bool = True) -> AsyncIterator[IndexReport]:
    """:func:`watch` for asyncio: syncs run in a worker thread, the event loop stays free.

    ``stop_event``: an :class:`asyncio.Event` (or anything with ``is_set()``); cancelling the
    consuming task also stops it (a sync in flight finishes its batch first).
    """
    daemon = await asyncio.to_thread(
        Daemon, root, db=db, model=model, debounce=debounce, index=index, foreign=foreign, include_core=include_core,
        stop_event=stop_event, lock_timeout=lock_timeout, compact=compact, state_file=state_file)
    await asyncio.to_thread(daemon.start)
    events = None
    told = False
    try:
        dirs = await asyncio.to_thread(watch_dirs, daemon)
        while True:
            events = _events(daemon, stop_event, watcher=watchfiles.awatch, dirs=dirs)
            restart = False
            try:
                async for changes in events:
                    report = await asyncio.to_thread(daemon.process, changes)
                    if report is not None:
                        yield report
                    if daemon.stopping():
                        break
                    if _dir_events(changes, daemon) and (now := await asyncio.to_thread(watch_dirs, daemon)) != dirs:
                        dirs, restart = now, True
                        break
            except Exception as exc:
                if not _unreadable_event(exc, daemon, told):
                    raise
                told, restart = True, await asyncio.to_thread(_pause, daemon)
            await events.aclose()
            events = None
            if not restart:
                break
            daemon.request_rescan()
    except Exception as exc:
        daemon.fail(exc)
        raise
    finally:
        if events is not None:
            await events.aclose()
        # close() waits for a sync still running in the worker thread: never on the event loop
        await asyncio.shield(asyncio.to_thread(daemon.close))


def serve(root: str | os.PathLike[str], **options) -> int:
    """Run :func:`watch` in the foreground until SIGINT or SIGTERM (main thread only).

    A signal lets the batch in hand commit, then the lock is released and 0 returned.
    ``options`` are those of :func:`watch` (``stop_event`` excepted).
    """
    stop = threading.Event()

    def request_stop(signum, frame) -> None:
        if stop.is_set():
            if signum == signal.SIGINT:  # a second Ctrl-C: quit now (the next start recovers)
                raise KeyboardInterrupt
            return
        logger.info("%s received: finishing the batch in hand%s", signal.Signals(signum).name,
                    " (Ctrl-C again quits at once)" if signum == signal.SIGINT else "")
        stop.set()

    previous = {sig: signal.signal(sig, request_stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        for _ in watch(root, stop_event=stop, **options):
            pass
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0
