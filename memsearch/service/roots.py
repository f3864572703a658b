"""The per-root state of a serving process: :class:`Root` (one root's writer, reader and answers) and :class:`Roots`.

A :class:`Root` holds its index's writer lock through a :class:`~memsearch.service.daemon.Daemon`,
searches through a reader index sharing the writer's model, and carries out the clients'
writes (``sync``, ``index``, ``check``) between the watcher's batches, with the report the CLI
would print in-process (:mod:`memsearch.engine.jobs`). A root answers searches from the moment its
index is open, before the model is loaded: by keyword, the hits flagged ``partial``
(:attr:`~memsearch.engine.index.MemoryIndex.keyword_only`), so that a session's first call, which
auto-started the service, gets hits within the hooks' budget rather than "starting".

:class:`Roots` is the per-user service's registry, after watchman: a root is loaded on the
first request that names it (opened, its writer lock taken, its watcher started in a thread of
its own), shares the process's one model per model spec (:func:`~memsearch.engine.embed.embedder.load_embedder`
keeps one embedder per spec), and is unloaded (its lock released) after ``idle_exit`` seconds
without a request; the service exits once no root is loaded.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from typing import Callable

from ..errors import IndexLocked, MemsearchError
from ..location import IndexLocation
from ..memory.root import dir_identity
from .answers import Answers
from .daemon import Daemon
from .protocol import PROTOCOL_VERSION, Refused
from .watcher import follow

__all__ = ["Root", "Roots", "LOAD_WAIT_S", "LOCK_WAIT_S", "RETRY_AFTER_S"]

log = logging.getLogger("memsearch.service")

#: How long a request waits for its root's index to open (a search; the service's first root imports
#: LanceDB: 1.5-5 s on 2 busy cores) or the whole root to load (a write) before its client is told
#: ``Loading`` (a thin client asks again, the CLI answers in-process). With the wait for a first build's
#: rows (:data:`~.firstbuild.SERVED_ROWS_WAIT_S`) under the shortest client timeout (``client_timeout``, 3 s).
LOAD_WAIT_S = 1.5
#: How long a loading root waits for another writer of its index (the client that started the
#: service may be writing the first rows in-process); a request meanwhile is told ``Loading`` at once.
LOCK_WAIT_S = 60.0
#: A root that failed to load is not tried again for this long (its requests: ``Loading`` at once).
RETRY_AFTER_S = 30.0
#: The methods that load the root they name (they need its model or its writer); the others are answered
#: for a loaded root only (read, ls and core are as quick from the files in the client's process).
LOADS = ("search", "tool", "edit")
#: A root's phases in which it answers reads (searches by keyword while the model loads); writes wait for "ready".
READS = ("keyword", "waiting", "ready")


class Root:
    """One memory root served by this process: ``open()``, then ``follow()`` (blocking) until ``stop()``."""

    def __init__(self, where: IndexLocation, *, model: str | None = None, debounce: int | None = None,
                 idle_exit: float | None = None, socket: str | None = None, lock_wait: float | None = 0.0, index=None):
        self.where, self.model, self.debounce, self.idle_exit = where, model, debounce, idle_exit
        self._index = index  # a MemoryIndex to write through (a test's), else opened by open()
        self.socket, self.lock_wait = socket, lock_wait
        self.stop_event = threading.Event()
        self.daemon: Daemon | None = None
        self.answers: Answers | None = None
        # then "keyword" (the index is open, the model loads: reads answered by keyword), "waiting" (another
        # writer holds the lock: reads answered), "ready", "closed"
        self.phase = "opening"
        self.error: BaseException | None = None
        self.loaded = time.monotonic()
        self.identity = dir_identity(where.root)  # the folder loaded: a request or status finds it moved (gone())
        self._jobs = threading.Lock()  # one index or check job at a time

    # --- life cycle ---------------------------------------------------------------------
    def open(self) -> "Root":
        """Open the index and its reader (reads answered by keyword from here), load the model, take the
        writer lock (waiting ``lock_wait`` for another writer)."""
        from ..engine.index import MemoryIndex
        from ..harness.served import Served  # the tool calls and writes thin clients forward

        index = self._index or MemoryIndex.open_repairing(self.where.root, db=self.where, model=self.model)
        self._index = None
        reader = MemoryIndex(self.where.root, db=self.where, embedder=index.embedder, foreign=index.foreign,
                             include_core=index.include_core, encoding=index.encoding, fusion=index.fusion)
        reader.keyword_only = True  # until the model is loaded
        served = Served(reader, self.sync_paths, status=self.state, refuse=Refused)
        self.answers = Answers(reader, status=self.state, writer=self, socket=self.socket, methods=served.methods())
        self.phase = "keyword"
        log.info("%s: index open, searches answered by keyword while the model loads", self.where.root)
        # the model first (the process's first root: seconds; later ones share it), then the lock: the client
        # that started the service writes a cold tree's text rows in-process meanwhile (firstbuild.py)
        index.embedder.embed_query("warm up")
        reader.keyword_only = False
        daemon = Daemon(self.where.root, index=index, debounce=self.debounce, stop_event=self.stop_event,
                        lock_timeout=0.0, idle_exit=self.idle_exit)
        extra = {"socket": self.socket, "protocol": PROTOCOL_VERSION}
        try:
            daemon.start(**extra)
        except IndexLocked:
            if self.lock_wait is not None and self.lock_wait <= 0:
                raise
            self.phase = "waiting"
            daemon.lock_timeout = self.lock_wait
            daemon.start(**extra)
        daemon.reader = reader  # its compactions keep the copies searches are served from
        self.daemon = daemon
        self.phase = "ready"
        threading.Thread(target=self._warm, name="memsearch-warm", daemon=True).start()
        return self

    def state(self) -> dict:
        """The writer's state (its daemon's), or a first one while the root loads (a first build is coming)."""
        daemon = self.daemon
        return daemon.state if daemon is not None else {"state": "starting", "syncs": 0, "pending": None}

    def _warm(self) -> None:
        """Build the reader's in-memory copies (vectors, BM25) before a client's first search needs them:
        on a 19.7k-chunk tree an auto-started daemon's first answer took 2.6 s (benchmarks.perf.coldstart --cli)."""
        try:
            self.answers.index.search("warm up", k=1)
        except Exception:  # noqa: BLE001 - the first client's search builds them instead
            log.debug("warming the reader of %s failed", self.where.root, exc_info=True)

    def follow(self) -> None:
        """Keep the index fresh until :meth:`stop` or the idle exit; the lock is released at the end."""
        try:
            for _ in follow(self.daemon):
                pass
        finally:
            self.phase = "closed"

    def stop(self) -> None:
        self.stop_event.set()

    def gone(self) -> bool:
        """Whether this root's folder was moved, deleted or replaced since it was loaded (its daemon stops on
        its own at its next wake-up; a request or status looks at once, :meth:`Roots.sweep`)."""
        daemon = self.daemon
        return (daemon is not None and daemon.gone) or dir_identity(self.where.root) != self.identity

    def touch(self) -> None:
        if self.daemon is not None:
            self.daemon.touch()

    # --- what clients ask -----------------------------------------------------------------
    def answer(self, method: str, params: dict, progress=None):
        self.touch()
        return self.answers.answer(method, params, progress)

    def sync_paths(self, paths: list[str]) -> dict:
        return self.daemon.sync_paths(paths)

    def run_index(self, params: dict, progress) -> dict:
        """``memsearch index`` for this root, done here (:func:`memsearch.engine.jobs.index_job`)."""
        from ..engine.jobs import index_job, open_for_index

        with self._jobs, self.daemon.exclusive() as index:
            wait = params["wait"]
            if not self._same(index, params["model"]) or params["rebuild"] or (
                    params["include_core"] is not None and params["include_core"] != index.include_core):
                notes: list = []
                fresh = open_for_index(self.where.root, db=self.where, model=params["model"],
                                       include_core=params["include_core"], rebuild=params["rebuild"], notes=notes)
                fresh.lock = index.lock  # the hold this process has
                job = index_job(fresh, wait=wait, check=params["check"], progress=progress, notes=notes)
                self._replace(fresh)
                return job.to_dict()
            return index_job(index, wait=wait, check=params["check"], progress=progress).to_dict()

    def run_check(self, params: dict) -> dict:
        """``memsearch check`` (``--repair``) for this root, done here."""
        from ..engine.jobs import check_job

        with self._jobs, self.daemon.exclusive() as index:
            if not self._same(index, params["model"]):
                raise Refused("WrongModel", f"{self.where.root} is served with model {index.embedder.name!r}, "
                                            f"not {params['model']!r}")
            return check_job(index, repair=params["repair"], wait=params["wait"]).to_dict()

    @staticmethod
    def _same(index, model: str | None) -> bool:
        from ..engine.embed.embedder import load_embedder

        return model is None or model == index.embedder.name or load_embedder(model) is index.embedder

    def _replace(self, index) -> None:
        from ..engine.index import MemoryIndex

        self.daemon.replace_index(index)
        self.model = index.embedder.name
        old = self.answers.index
        self.answers.index = MemoryIndex(self.where.root, db=self.where, embedder=index.embedder,
                                         foreign=index.foreign, include_core=index.include_core,
                                         encoding=old.encoding, fusion=old.fusion)

    def info(self) -> dict:
        """What ``memsearch status`` lists for a loaded root: path, files, chunks, pending, memory, and while it
        loads what it waits for (``waiting_for``: its index, the model, or the writer lock and its holder)."""
        info = {"root": str(self.where.root), "db": self.where.label, "phase": self.phase, "model": None,
                "files": None, "chunks": None, "pending": None, "memory_bytes": None, "waiting_for": self.waiting_for()}
        daemon, answers = self.daemon, self.answers
        if answers is None:
            return info
        info["model"] = answers.index.embedder.name
        if daemon is not None:
            state = daemon.state
            info.update(model=daemon.index.embedder.name, state=state.get("state"), pending=state.get("pending"),
                        last_sync=(state.get("last_sync") or {}).get("at"),
                        idle_s=round(time.monotonic() - daemon._last_request, 1))
        try:
            store = answers.index.store
            info.update(files=len(store.file_states()), chunks=store.row_count(),
                        memory_bytes=int(answers.index.searcher.nbytes
                                         + (daemon.index.searcher.nbytes if daemon is not None else 0)))
        except Exception:  # noqa: BLE001 - a status line never fails on one root
            log.debug("counting %s failed", self.where.root, exc_info=True)
        return info

    def waiting_for(self) -> str | None:
        """What a root still loading waits for, in words (None once it serves)."""
        if self.phase == "opening":
            return "its index to open"
        if self.phase == "keyword":
            name = self.answers.index.embedder.name if self.answers is not None else self.model
            return f"the model {name} to load (searches answered by keyword)" if name else "the model to load"
        if self.phase != "waiting":
            return None
        from ..engine.storage.lock import holder_text
        from .process import verified_holder

        holder = verified_holder(self.where)
        if holder is None:
            return "the writer lock of its index"
        if holder.get("pid") == os.getpid():
            return "the writer lock of its index, held by this service under another path (released within a second)"
        return f"the writer lock of its index, held by {holder_text(holder)}"


class Roots:
    """The roots one service process serves, loaded on demand (see the module docstring).

    ``socket``: the service's socket (recorded in each root's state file). ``on_empty``: called
    when the last root is unloaded.
    """

    def __init__(self, *, socket: str, idle_exit: float | None = None, debounce: int | None = None,
                 lock_wait: float = LOCK_WAIT_S, on_empty: Callable[[], None] | None = None,
                 on_stop: Callable[[], None] | None = None):
        self.socket, self.idle_exit, self.debounce, self.lock_wait = socket, idle_exit, debounce, lock_wait
        self.on_empty = on_empty or (lambda: None)
        self.on_stop = on_stop or (lambda: None)
        self._roots: dict[tuple[str, str], Root] = {}
        self._failed: dict[tuple[str, str], float] = {}
        self._threads: dict[tuple[str, str], threading.Thread] = {}
        self._lock = threading.Lock()
        self.started = time.time()
        self.served = False  # a root was opened and served: this process did not fail to start

    @staticmethod
    def key(where: IndexLocation) -> tuple[str, str]:
        return str(where.root), where.label

    def __len__(self) -> int:
        with self._lock:
            return len(self._roots)

    # --- loading --------------------------------------------------------------------------
    def load(self, where: IndexLocation, model: str | None = None) -> Root:
        """The root of ``where``, loading it in the background if it is not loaded (see :meth:`get`)."""
        key = self.key(where)
        with self._lock:
            root = self._roots.get(key)
            if root is not None:
                return root
            failed = self._failed.get(key)
            if failed is not None and time.monotonic() - failed < RETRY_AFTER_S:
                raise Refused("Loading", f"{where.root} failed to load less than {RETRY_AFTER_S:.0f} s ago "
                                         "(the service's log says why): answered in-process")
            root = Root(where, model=model, debounce=self.debounce, idle_exit=self.idle_exit, socket=self.socket,
                        lock_wait=self.lock_wait)
            self._roots[key] = root
            thread = threading.Thread(target=self._run, args=(key, root), name=f"memsearch-root-{len(self._roots)}",
                                      daemon=True)
            self._threads[key] = thread
        log.info("loading %s (index %s)", where.root, where.label)
        thread.start()
        return root

    def _run(self, key, root: Root) -> None:
        try:
            root.open()
        except BaseException as exc:  # noqa: BLE001 - logged; its clients work in-process
            root.error, root.phase = exc, "closed"
            if root.gone():
                self._forget(key, root, "%s: root removed or moved while loading, unloaded")
                return
            level = logging.INFO if isinstance(exc, MemsearchError) else logging.ERROR
            log.log(level, "cannot serve %s: %s: %s", root.where.root, type(exc).__name__, exc)
            with self._lock:
                self._failed[key] = time.monotonic()
            self._forget(key, root)
            return
        log.info("serving %s", root.where.root)
        self.served = True
        try:
            root.follow()
        except Exception:  # noqa: BLE001 - the daemon recorded it in its state file
            if not root.gone():
                log.exception("the watcher of %s stopped", root.where.root)
        self._forget(key, root, "%s: root removed or moved, unloaded" if root.gone() else "unloaded %s")

    def sweep(self) -> None:
        """Unload every root whose folder was moved or deleted (:meth:`Root.gone`): dropped from the registry at
        once (status never lists a ghost, a request for its new path loads it), its lock released by its thread."""
        with self._lock:
            gone = [(key, root) for key, root in self._roots.items() if root.gone()]
        for key, root in gone:
            root.stop()
            self._forget(key, root, "%s: root removed or moved, unloaded")

    def _forget(self, key, root: Root, said: str | None = None) -> None:
        """Drop ``root`` from the registry; whoever drops it logs ``said`` (before the service may exit, empty)."""
        with self._lock:
            dropped = self._roots.get(key) is root
            if dropped:
                del self._roots[key]
                self._threads.pop(key, None)
            empty = not self._roots
        if dropped and said:
            log.info(said, root.where.root)
        if empty:
            self.on_empty()

    def get(self, where: IndexLocation, model: str | None = None, wait: float = LOAD_WAIT_S, *,
            reads: bool = False) -> Root:
        """The loaded root of ``where``, loading it first; :class:`Refused` ``Loading`` when it is not
        ready within ``wait`` seconds (or waits for another writer): the client asks again or answers
        in-process. ``reads``: a search or another read-only tool call, answered from the moment the
        root's index is open (by keyword while the model loads)."""
        root = self.load(where, model)
        deadline = time.monotonic() + wait
        waiting = ("opening",) if reads else ("opening", "keyword")
        while root.phase in waiting and time.monotonic() < deadline:
            time.sleep(0.02)
        if root.phase not in (READS if reads else ("ready",)):
            why = {"waiting": "waits for another writer of its index", "closed": "could not be loaded"}.get(
                root.phase, "is still loading")
            raise Refused("Loading", f"the memsearch service {why}: {where.root}")
        return root

    # --- requests ---------------------------------------------------------------------------
    def dispatch(self, method: str, root: str | None, db: str | None, params: dict, progress=None):
        """A request of the per-user service: ``stop``, ``status`` without a root, or a root's method."""
        if method == "stop":
            return self.stop_all()
        self.sweep()
        if root is None:
            if method == "status":
                return self.status()
            raise Refused("BadRequest", f"{method} is asked of one memory root: send its path as root")
        where = IndexLocation.of(root, db)  # a root that is not one raises its typed error
        if method == "unload":
            return {"unloaded": self.unload(where)}
        if method not in LOADS:  # only of a root this process holds already
            root_state = self.loaded(where)
            if root_state is None:
                raise Refused("NotLoaded", f"the memsearch service does not hold {where.root}")
            return root_state.answer(method, params, progress)
        model = params.get("model") if method in LOADS else None
        log.debug("%s of %s", method, where.root)
        reads = method == "search" or (method == "tool" and params.get("name") != "memory")
        return self.get(where, model if isinstance(model, str) else None, reads=reads).answer(method, params, progress)

    def loaded(self, where: IndexLocation) -> Root | None:
        """The root of ``where`` if it is loaded and ready, else None (nothing is loaded)."""
        with self._lock:
            root = self._roots.get(self.key(where))
        return root if root is not None and root.phase == "ready" else None

    def status(self) -> dict:
        """The service itself: pid, socket, memory, and each loaded root's :meth:`Root.info`."""
        from .. import __version__

        with self._lock:
            roots = list(self._roots.values())
        return {"protocol": PROTOCOL_VERSION, "memsearch": __version__, "pid": os.getpid(), "uid": os.getuid(),
                "socket": self.socket, "started": self.started, "rss_bytes": rss_bytes(),
                "roots": [r.info() for r in sorted(roots, key=lambda r: str(r.where.root))]}

    def unload(self, where: IndexLocation, timeout: float = 60.0) -> bool:
        """Stop serving ``where``'s root (its lock released); False when it was not loaded."""
        key = self.key(where)
        with self._lock:
            root, thread = self._roots.get(key), self._threads.get(key)
        if root is None:
            return False
        root.stop()
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
        return True

    def stop_all(self) -> dict:
        """Unload every root, then let the process end (``on_stop``)."""
        with self._lock:
            roots = list(self._roots.values())
        threading.Thread(target=self.close, name="memsearch-stop", daemon=True).start()
        return {"roots": len(roots)}

    def close(self, timeout: float = 60.0) -> None:
        """Unload every root (each finishes the batch in hand), then call ``on_stop``."""
        with self._lock:
            items = list(self._roots.items())
            threads = dict(self._threads)
        for _, root in items:
            root.stop()
        deadline = time.monotonic() + timeout
        for key, _ in items:
            thread = threads.get(key)
            if thread is not None and thread is not threading.current_thread():
                thread.join(max(0.0, deadline - time.monotonic()))
        self.on_stop()


def rss_bytes() -> int | None:
    """This process's resident memory (Linux ``/proc``), or None."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None
