"""One memory root's index: :class:`MemoryIndex`, which checks the parameters an index was built
with, syncs the tree into it (:mod:`.ingest.sync`) under the writer lock, repairs it when damaged,
and routes searches (:mod:`.search.searcher`) to its :class:`~.storage.store.Store`.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
import os
import uuid
from typing import Sequence

from .. import __version__, settings
from ..errors import Hint, IndexDamaged, IndexLocked
from ..location import IndexLocation
from ..memory.contract import MemoryRef
from ..memory.tokens import encoding_name, get_encoding
from ..memory.tree import resolve_root, scan
from .embed.embedder import Embedder, load_embedder
from .ingest.chunker import ChunkerConfig
from .ingest.sync import IndexReport, Progress, Sync
from .params import check_params, index_params
from .search.args import MAX_K, MODES, SearchArgs, check_search
from .search.fusion import FUSIONS
from .search.hits import Hit, HitBuilder
from .search.query import clean_text
from .search.searcher import Searcher
from .storage.filter import Filter
from .storage.lock import Fenced, WriterLock
from .storage.remote import RemoteDB, RemoteWriterLock
from .storage.store import VECTOR_INDEX_MIN_ROWS, Store

__all__ = ["MemoryIndex", "Hit", "MemoryRef", "MODES", "FUSIONS", "MAX_K"]

#: What an open index holds besides its vector copy: table handles, the LanceDB connection, the
#: keyword worker thread. Measured: 40 small indexes opened and searched in one process, RSS grew
#: 0.12 MB each on local disk, 0.25 MB each on SeaweedFS (the object-store client); the full-text
#: index added under 0.1 MB per index at 30k rows. The vector copy is measured by FlatVectors.nbytes.
INDEX_OVERHEAD_BYTES = 256 * 1024
logger = logging.getLogger("memsearch.index")


class MemoryIndex:
    """Search index of one memory root. Collaborators may be injected; defaults are built lazily.

    ``db`` (a ``--db`` value or an :class:`~memsearch.location.IndexLocation`) defaults to
    ``$MEMSEARCH_DB``, else ``ROOT/.memsearch`` (see :mod:`memsearch.location`); ``model`` to ``MEMSEARCH_MODEL`` or the
    registry default. Opening checks the parameters the index was built with and raises
    :class:`IndexMismatch` (fix: ``memsearch index ROOT --rebuild``) rather than mix vectors.
    ``lock_purpose`` is what the writer lock records about its holder (a daemon: ``"watch"``).
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        db: str | os.PathLike[str] | None = None,
        model: str | None = None,
        *,
        embedder: Embedder | None = None,
        store: Store | None = None,
        chunker: ChunkerConfig | None = None,
        include_core: bool | None = None,
        encoding: str | None = None,
        foreign=None,
        fusion: str | None = None,
        keyword: str | None = None,
        rebuild: bool = False,
        lock_purpose: str = "index",
        read_only: bool = False,
    ):
        self.root = resolve_root(root)
        #: A read replica's index (:mod:`.storage.follow`): never writes; its follower moves its version.
        self.read_only = read_only
        #: Where the index and its files live; ``db_path``: its local directory (for a remote index,
        #: this machine's state directory for it), ``location``: its address for messages.
        self.where = IndexLocation.of(self.root, db, resolved=True)
        self.remote = RemoteDB.parse(self.where.remote) if self.where.remote else None
        self.db_path = self.where.ensure_state() if self.remote else self.where.state
        self.location = self.where.label
        self.embedder = embedder or load_embedder(model)
        self.store = store or Store(self.remote or self.db_path, root=self.root)  # typed errors (read-only root...)
        self.foreign = foreign
        self.encoding = encoding_name(encoding)
        self.keyword = settings.get("keyword", keyword)  # what runs BM25: "memory" (bm25.py) or "lancedb"
        self.lock = (RemoteWriterLock(self.db_path, self.remote, lock_purpose, root=self.root) if self.remote
                     else WriterLock(self.db_path, lock_purpose, root=self.root))
        # --rebuild drops the tables inside the first sync, under the same hold of the lock
        self._rebuild_pending = rebuild
        meta = None if rebuild else self.store.read_meta()
        try:
            self.chunker = chunker or (ChunkerConfig.recorded(meta["chunker"]) if meta and "chunker" in meta
                                       else ChunkerConfig())
        except (TypeError, ValueError) as exc:
            reason = (f"the index at {self.db_path} records chunker settings this version does not know "
                      f"({str(exc)[:100]})")
            raise IndexDamaged(reason, hint=Hint("rebuild")) from None
        self.include_core = bool(meta and meta.get("include_core")) if include_core is None else include_core
        if meta:
            self._check(meta)
        self.searcher = Searcher(self.store, self.embedder, HitBuilder(self.root),
                                 fusion=settings.get("fusion", fusion), keyword=self.keyword)
        self._indexes_checked = False
        #: While True (a serving process loading the model), hybrid and semantic searches run by keyword, their
        #: hits flagged ``partial`` (found by their words only); the service clears it once the model is loaded.
        self.keyword_only = False
        #: The build id of the index this object reads (``index.json``'s "build"): a rebuild
        #: restarts table versions, so every cache keyed by version is dropped when it changes.
        self._build = meta.get("build") if meta else None
        self._meta_stamp = self.store.meta_stamp()

    @property
    def embedder(self) -> Embedder:
        """The model that embeds this index's chunks and queries (the searcher's too)."""
        return self._embedder

    @embedder.setter
    def embedder(self, embedder: Embedder) -> None:
        self._embedder = embedder
        if "searcher" in self.__dict__:
            self.searcher.embedder = embedder

    @property
    def build_id(self) -> str | None:
        """The build this object reads (``index.json``'s "build"; a rebuild elsewhere gives a new one)."""
        return self._build

    @property
    def fusion(self) -> str:
        """How the two legs of a hybrid search are fused (a name of :data:`FUSIONS`)."""
        return self.searcher.fusion

    @fusion.setter
    def fusion(self, name: str) -> None:
        self.searcher.fusion = name

    @property
    def keywords(self):
        """The in-memory BM25 copy (:class:`~.search.bm25.KeywordCopy`)."""
        return self.searcher.keywords

    # --- parameters -----------------------------------------------------------------------
    def params(self) -> dict:
        return index_params(self.embedder, self.chunker, self.encoding, self.include_core)

    def _check(self, meta: dict) -> None:
        check_params(meta, self.params(), self.location, self.root)

    # --- indexing -------------------------------------------------------------------------
    def sync(self, *, only: Sequence[str] | None = None, progress: Progress | None = None,
             wait: float | None = 0.0, repair: bool = True, defer: bool = False) -> IndexReport:
        """Index what changed since the last sync (``only``: just these relative paths).

        Takes the index's writer lock for the calling thread, waiting ``wait`` seconds (None:
        forever) for another writer, thread or process, before raising :class:`IndexLocked`.
        A daemon's hold on the lock is shared; its syncs still queue with other threads'.
        A pending ``rebuild`` drops the tables first, under the same hold. A damaged index is
        rebuilt from the Markdown (``repair``, logged, and said in the report's ``repaired``),
        else raised as :class:`IndexDamaged`; a full disk raises
        :class:`~memsearch.errors.StorageFull` and leaves the previous index searchable. ``defer``: a
        big first build writes the files' text rows (keyword-searchable, hits ``partial``) and leaves
        their embedding to a later sync (a daemon's; see :meth:`.ingest.sync.Sync.run`).
        """
        if self.read_only:
            raise IndexLocked(f"the index at {self.location} is open read-only (a replica): its writer indexes the "
                              "files", hint=self.lock.busy)
        with self.store.guard(self.root):  # taking the lock itself may fail (full disk, permissions)
            with self.lock.writing(timeout=wait):
                if self._rebuild_pending or self.store.read_meta() is None:
                    get_encoding(self.encoding)  # a tokenizer that cannot load fails here: no index dropped, none recorded
                if self._rebuild_pending or (self.store.read_meta() is None and not self._weights_here(defer)):
                    getattr(self.embedder, "load", lambda: None)()  # a model that cannot load (offline) fails here:
                    # no index dropped, none recorded
                if self._rebuild_pending:
                    self.store.drop()
                    self._rebuild_pending = False
                try:
                    with self.store.guard(self.root):
                        return self._sync(only, progress, defer)
                except IndexDamaged as exc:
                    if not repair:
                        raise
                    return self.rebuild(exc.reason, progress)

    def _weights_here(self, defer: bool) -> bool:
        """Whether a first build that writes text rows only (``defer``: a daemon embeds them) may skip loading the
        model: its weights are a local folder and its dimension is known. Loading it (an ONNX export on a new
        machine) took a prompt hook's cold first answer from 3 s to 16-27 s on 2 cores."""
        source = str(getattr(self.embedder, "source", "") or "")
        return defer and bool(self.embedder.dimension) and bool(source) and os.path.isdir(source)

    def check(self) -> str | None:
        """Read the whole index through and query each of its indexes: the first problem found, or None."""
        return self.store.check()

    def check_and_repair(self, wait: float | None = 0.0, progress: Progress | None = None) -> IndexReport | None:
        """:meth:`check`, and when it finds damage, :meth:`rebuild` under the writer lock (its report), else None."""
        problem = self.check()
        if problem is None:
            return None
        with self.lock.writing(timeout=wait):
            return self.rebuild(f"the index is damaged ({problem})", progress)

    @classmethod
    def open_repairing(cls, root, *, on_damage=None, **options) -> "MemoryIndex":
        """A :class:`MemoryIndex`, rebuilt from scratch if its parameters are damaged: the one way to open
        an index and rebuild what cannot be read. ``on_damage(exc)`` is told of the damage (default: a
        logged warning); the rebuilt index is empty until its next sync."""
        try:
            return cls(root, **options)
        except IndexDamaged as exc:
            if on_damage is None:
                logger.warning("%s: rebuilding", exc)
            else:
                on_damage(exc)
            return cls(root, **(options | {"rebuild": True}))

    def rebuild(self, reason: str, progress: Progress | None = None) -> IndexReport:
        """Drop the index and build it again from the Markdown (the writer lock must be held)."""
        self.lock.check()  # never a new index in a folder removed meanwhile (the root being deleted)
        get_encoding(self.encoding)  # nor one that records a tokenizer that cannot load
        logger.warning("rebuilding the index at %s: %s", self.location, reason)
        self._indexes_checked = False
        self.searcher.forget()
        with self.store.guard(self.root):
            self.store.drop()
            report = self._sync(None, progress)
        return dataclasses.replace(report, repaired=reason)

    def _sync(self, only, progress, defer: bool = False) -> IndexReport:
        tree = scan(self.root, foreign=self.foreign)
        wanted = list(tree.indexed_files(self.include_core))
        self.follow_build()
        self.store.refresh()
        self.lock.check()  # a writer whose lease lapsed (paused, cut off) or whose folder went writes nothing more
        if self.store.read_meta() is None:  # a new build: record the parameters before the first write
            self._build = uuid.uuid4().hex
            self._write_meta()
        report = Sync(tree, Fenced(self.store, self.lock.check), self.embedder, config=self.chunker,
                      encoding=self.encoding, progress=progress).run(wanted, only, defer=defer)
        if not self._indexes_checked:  # once per process: repairs a build killed mid-way
            self.store.ensure_indexes()
            self._indexes_checked = True
        if report.changed:
            self.store.fold_fulltext_tail()  # keyword queries scan what the FTS index lacks
            self._write_meta()
        return report

    def vector_index_due(self) -> bool:
        """Whether the table has reached VECTOR_INDEX_MIN_ROWS without an ANN index."""
        self.store.refresh()
        return self.store.vector_index_due(VECTOR_INDEX_MIN_ROWS)

    def build_vector_index(self, *, wait: float | None = 0.0, force: bool = False) -> bool:
        """Build the ANN index when it is due (``force``: whatever the size); True when one was built.

        Slow (minutes at 100k rows on 2 cores), so never part of :meth:`sync`: ``memsearch index``
        calls it at its end. Takes the writer lock like sync (a daemon builds through the store in
        a thread of its own instead, so that its syncs go on meanwhile).
        """
        if not (force or self.vector_index_due()):
            return False
        with self.lock.writing(timeout=wait):
            self.store.build_vector_index()
        return True

    def _write_meta(self) -> None:
        meta = self.params() | {"memsearch": __version__, "dimension": self.embedder.dimension, "build": self._build,
                                "root": str(self.root), "updated": dt.datetime.now(dt.timezone.utc).isoformat()}
        self.store.write_meta(meta)
        self._meta_stamp = self.store.meta_stamp()

    def follow_build(self) -> None:
        """Follow a rebuild by another process: new build id -> re-check parameters, drop caches (before each
        search and sync; a replica's follower, :mod:`.storage.follow`, between searches)."""
        stamp = self.store.meta_stamp()
        if stamp == self._meta_stamp:
            return
        meta = self.store.read_meta()
        build = meta.get("build") if meta else None
        if build != self._build:
            if meta:
                self._check(meta)  # another model of the same dimension: refuse, never mix vectors
            self._build = build
            self.store.reopen()
            self.searcher.forget()
        self._meta_stamp = stamp

    # --- life cycle -----------------------------------------------------------------------
    def close(self) -> None:
        """Release what this index holds in the process: the worker thread and the caches.

        Idempotent; the index stays usable (what it needs is opened again on demand).
        """
        self.searcher.close()

    def resident_bytes(self) -> int:
        """An estimate of what this index holds in memory: :data:`INDEX_OVERHEAD_BYTES` plus its
        in-memory copies, of the vectors and rows (below the ANN threshold) and of BM25 (bm25.py)."""
        return INDEX_OVERHEAD_BYTES + self.searcher.nbytes

    def __enter__(self) -> "MemoryIndex":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # --- search ---------------------------------------------------------------------------
    def rows_now(self) -> int:
        """Rows in the chunks table now, read as a search reads them (a lost table is damage, not none)."""
        with self.store.guard(self.root):
            return self.searcher.snapshot()[1]

    def search(self, query: str | SearchArgs, k: int = 10, scope: str | None = None, mode: str = "hybrid",
               since=None, until=None) -> list[Hit]:
        """Ranked hits for ``query`` (or an already checked :class:`SearchArgs`; see
        :mod:`.search.searcher` for the modes and the fusion; :attr:`keyword_only` for a model still loading)."""
        args = query if isinstance(query, SearchArgs) else check_search(self.root, query, k, scope, mode, since, until)
        flt = Filter(scope=args.scope, since=args.since, until=args.until)
        words_only = self.keyword_only and args.mode != "keyword"
        with self.store.guard(self.root):
            if not self.read_only:  # a replica's follower does it between searches
                self.follow_build()
            hits = self.searcher.search(clean_text(args.query), args.k, "keyword" if words_only else args.mode, flt,
                                        self._build)
        return [dataclasses.replace(hit, partial=True) for hit in hits] if words_only else hits
