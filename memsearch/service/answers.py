"""One memory root's answers to protocol requests: the reads (search, read, ls, core, status) and the writes.

:class:`Answers` searches through a reader :class:`~memsearch.engine.index.MemoryIndex` of its
own (its own store handles and caches, as a reader in another process would have) that shares
the writer's model, so indexing never waits on a search. The writes (``sync``, ``index``,
``check``) go to the process's writer of that root (:class:`Writer`, a
:class:`~memsearch.service.roots.Root`); a server without one refuses them. More methods are
plugged in by name (``methods``): the tool calls, resources and memory-tool writes thin clients
forward (:mod:`memsearch.harness.served`, which syncs its writes through the writer).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from typing import Callable, Protocol

from . import protocol
from .firstbuild import await_searchable, building, indexing
from .protocol import PROTOCOL_VERSION, Refused

log = logging.getLogger("memsearch.service")

__all__ = ["Answers", "Writer", "ProgressSink"]

#: ``progress(phase, done, total, chunks)``, sent to the client as progress lines.
ProgressSink = Callable[[str, int, int, int], None]


class Writer(Protocol):
    """What the process holding a root's writer lock does for clients."""

    def sync_paths(self, paths: list[str]) -> dict: ...

    def run_index(self, params: dict, progress: ProgressSink | None) -> dict: ...

    def run_check(self, params: dict) -> dict: ...


class Answers:
    """Answer requests for ``index``'s root (``index``: the reader searches run on).

    ``status``: the root's writer state (its state file's fields). ``writer``: the root's
    :class:`Writer`, or None (a read-only server: writes are refused). ``sync``: a bare
    ``sync`` callable, for a server with a writer of its own making.
    """

    def __init__(self, index, *, status: Callable[[], dict] | None = None, writer: Writer | None = None,
                 sync: Callable[[list[str]], dict] | None = None, socket: str | None = None,
                 methods: dict[str, Callable] | None = None):
        self.index = index
        self.root = index.root
        self._root = str(self.root)  # resolved: a request naming it as is needs no realpath (9 us a search)
        self.db_path = index.where.state
        self.status_of = status or (lambda: {})
        self.writer = writer
        self.syncer = sync or (writer.sync_paths if writer is not None else None)
        #: The socket this root is answered on (for ``status``), set by the server.
        self.socket = socket
        self.requests = 0
        #: Searches answered and the CPU seconds of their threads (each batch's encode in its leader's):
        #: ``status`` reports them beside the query encoder's own, so that a benchmark splits a search's CPU.
        self.searches = 0
        self.search_cpu_s = 0.0
        self._counts = threading.Lock()
        self._handlers = {"search": self._search, "read": self._read, "ls": self._ls, "core": self._core,
                          "status": self._status, "sync": self._sync, "index": self._index, "check": self._check}
        self._handlers |= dict(methods or {})  # more methods (the tools' tool, resource, edit: harness/served.py)

    def dispatch(self, method: str, root: str | None, db: str | None, params: dict, progress=None):
        """A server of this root only (``memsearch watch ROOT``): a request naming another root is
        answered ``WrongRoot`` (its client then tries the per-user service)."""
        if root is not None and root != self._root and os.path.realpath(root) != self._root:
            raise Refused("WrongRoot", f"this server serves {self.root}, not {root}")
        if method in ("unload", "stop"):
            raise Refused("UnknownMethod", f"{method} is a method of the per-user service, not of a daemon of one root")
        return self.answer(method, params, progress)

    def answer(self, method: str, params: dict, progress: ProgressSink | None = None):
        """The result of ``method(**params)``; :class:`Refused` or a typed error otherwise."""
        self.requests += 1
        handler = self._handlers.get(method)
        if handler is None:
            raise Refused("UnknownMethod", f"unknown method {method!r} for a root: choose one of "
                                           f"{', '.join(m for m in protocol.METHODS if m in self._handlers)}")
        if method == "index":
            params = params | {"progress": progress}
        try:
            return handler(**params)
        except TypeError as exc:  # unknown or missing parameter names
            if "argument" not in str(exc):
                raise
            raise Refused("BadRequest", f"bad params for {method}: {exc}") from None

    # --- reads ----------------------------------------------------------------------------
    def _search(self, query, k=10, scope=None, mode="hybrid", since=None, until=None, model=None) -> dict:
        served = self.index.embedder.name
        if model is not None and model != served:
            raise Refused("WrongModel", f"this server searches {self.root} with model {served!r}, not {model!r}")
        started = time.thread_time()
        caught_up = await_searchable(self.root, self.index, self.status_of)  # a first build's rows, a catch-up
        hits = self.index.search(query, k=k, scope=scope, mode=mode, since=since, until=until)
        out = {"hits": [hit.to_dict() for hit in hits]}
        # a build or a catch-up under way: "no hits yet", not "no hits"
        if (progress := indexing(self.index, hits, catching_up=not caught_up and building(self.status_of()))) is not None:
            out["indexing"] = progress
        spent = time.thread_time() - started
        with self._counts:
            self.searches += 1
            self.search_cpu_s += spent
        return out

    def _read(self, path, lines=None) -> dict:
        from ..memory.contract import read

        if isinstance(lines, list):
            lines = tuple(lines)
        return read(self.root, path, lines).to_dict()

    def _ls(self, path=".", encoding=None) -> dict:
        from ..memory.contract import list_dir

        return list_dir(self.root, path, encoding=encoding).to_dict()

    def _core(self, encoding=None) -> dict:
        from ..memory.contract import load_core

        return load_core(self.root, encoding=encoding).to_dict()

    def _status(self) -> dict:
        from .. import __version__
        from ..engine.embed.batcher import batcher_stats

        return {"protocol": PROTOCOL_VERSION, "memsearch": __version__, "pid": os.getpid(), "uid": os.getuid(),
                "root": str(self.root), "db": str(self.db_path), "model": self.index.embedder.name,
                "socket": self.socket, "requests": self.requests,
                "searches": {"count": self.searches, "cpu_s": round(self.search_cpu_s, 6)},
                "query_encoder": batcher_stats(self.index.embedder)} | {"state": self.status_of()}

    # --- writes ---------------------------------------------------------------------------
    def _need_writer(self, method: str):
        if self.writer is None:
            raise Refused("UnknownMethod", f"this server does not write {self.root}: it has no {method} method")
        return self.writer

    def _sync(self, paths) -> dict:
        if self.syncer is None:
            raise Refused("UnknownMethod", "this server does not index: it has no sync method")
        if (not isinstance(paths, list) or len(paths) > protocol.MAX_SYNC_PATHS
                or not all(isinstance(p, str) and p and "\0" not in p for p in paths)):
            raise Refused("BadRequest", f"sync takes paths: a list of at most {protocol.MAX_SYNC_PATHS} relative paths")
        for rel in paths:
            parts = rel.split("/")
            if rel.startswith("/") or ".." in parts:
                raise Refused("BadRequest", f"sync paths are relative to the root, without '..': got {rel[:200]!r}")
        return self.syncer(paths)

    def _index(self, rebuild=False, model=None, include_core=None, check=False, wait=0.0, progress=None) -> dict:
        writer = self._need_writer("index")
        _check_types(rebuild=(rebuild, bool), check=(check, bool), model=(model, (str, type(None))),
                     include_core=(include_core, (bool, type(None))), wait=(wait, (int, float)))
        what = ("rebuild" if rebuild else "index") + (f" with model {model}" if model else "") + (
            " and check" if check else "")
        return self._logged(what, lambda: writer.run_index(
            {"rebuild": rebuild, "model": model, "include_core": include_core, "check": check, "wait": float(wait)},
            progress))

    def _check(self, repair=False, wait=0.0, model=None) -> dict:
        writer = self._need_writer("check")
        _check_types(repair=(repair, bool), model=(model, (str, type(None))), wait=(wait, (int, float)))
        job = lambda: writer.run_check({"repair": repair, "wait": float(wait), "model": model})  # noqa: E731
        return self._logged("repair", job) if repair else job()

    def _logged(self, what: str, job: Callable[[], dict]) -> dict:
        """``job`` (a client's index, rebuild or repair, carried out here) between two lines of the service's log:
        its start, and its end with what it did and how long it took, or its error."""
        log.info("%s: %s started", self.root, what)
        began = time.monotonic()
        try:
            done = job()
        except BaseException as exc:
            log.info("%s: %s failed after %.1f s: %s", self.root, what, time.monotonic() - began,
                     str(exc) or type(exc).__name__)
            raise
        log.info("%s: %s done in %.1f s: %s", self.root, what, time.monotonic() - began, _did(done))
        return done


def _did(done: dict) -> str:
    """What an index job's (or a check's) answer says it did, in a few words for the log."""
    if "rows" in done:  # a check
        return (f"{done['rows']} rows of {done['files']} files checked, {done.get('findings_total', 0)} findings; "
                f"{done.get('repaired') or 'nothing repaired'}")
    return (f"{done.get('files_added', 0)} files added, {done.get('files_changed', 0)} changed, "
            f"{done.get('files_removed', 0)} removed; {done.get('chunks_embedded', 0)} chunks embedded, "
            f"{done.get('chunks_total', 0)} in all")


def _check_types(**checks) -> None:
    for name, (value, kind) in checks.items():
        if not isinstance(value, kind) or (isinstance(value, bool) and kind == (int, float)):
            raise Refused("BadRequest", f"{name} has the wrong type ({type(value).__name__})")
