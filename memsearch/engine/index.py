"""One memory root's index: :class:`MemoryIndex` (checked parameters, sync, search) and its :class:`Hit` results.

Hybrid search runs BM25 (held in memory per table version, :mod:`.bm25`, or LanceDB's full-text
index) and vector search (cosine) over the same filtered rows and fuses them: by default a convex combination of min-max normalised scores,
or reciprocal rank fusion (see the constants below and benchmarks/README.md for the
measurements behind the choice). Hits of one file whose
line ranges overlap are merged, and every hit carries the nearest enclosing ``MEMORY.md``
(title and first paragraph only) and the chain of ``MEMORY.md`` paths up to the root.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
import os
import threading
import uuid
from typing import Sequence

from .. import __version__, settings
from ..location import IndexLocation
from .ingest.chunker import ChunkerConfig
from ..memory.contract import MemoryRef
from .embed.embedder import Embedder, load_embedder
from ..errors import IndexDamaged, IndexMismatch, InvalidArgument, MemsearchError
from .storage.damage import check_store, index_error
from .storage.lock import WriterLock
from .storage.remote import RemoteDB, RemoteWriterLock
from .ingest.sync import IndexReport, Progress, Sync
from .search.flat import FlatVectors
from .search.bm25 import KeywordCopy
from .search.hits import Hit, HitBuilder
from .search.args import MODES, SearchArgs, check_search
from .search.query import clean_text
from .search.cjk import keyword_text
from .search.fusion import CANDIDATE_FACTOR, FUSIONS, MIN_CANDIDATES, hybrid, merge_rows
from .storage.store import ANN_NPROBES, ANN_REFINE_FACTOR, FORMAT_VERSION, VECTOR_INDEX_MIN_ROWS, Filter, Store
from ..memory.tokens import encoding_name
from ..memory.tree import resolve_root, scan

__all__ = ["MemoryIndex", "Hit", "MemoryRef", "MODES", "FUSIONS", "DB_ENV"]

DB_ENV = settings.env_name("db")
#: Keyword scores equal to this many decimals count as a tie (float32 sums in a different order
#: differ in the last bits), broken by path and line.
KEYWORD_SCORE_DECIMALS = 6
#: What an open index holds besides its vector copy: table handles, the LanceDB connection, the
#: keyword worker thread. Measured: 40 small indexes opened and searched in one process, RSS grew
#: 0.12 MB each on local disk, 0.25 MB each on SeaweedFS (the object-store client); the full-text
#: index added under 0.1 MB per index at 30k rows. The vector copy is measured by FlatVectors.nbytes.
INDEX_OVERHEAD_BYTES = 256 * 1024
logger = logging.getLogger("memsearch.index")
_COLUMNS = ["id", "path", "dir", "heading", "start_line", "end_line", "text", "date"]


def _canonical(rows: list[dict]) -> list[dict]:
    """BM25 rows best first, equal scores (to 6 decimals) by path and line: the in-memory copy and
    LanceDB's FTS break ties differently, and the same query must rank the same on either path."""
    return sorted(rows, key=lambda r: (-round(r["score"], KEYWORD_SCORE_DECIMALS), r["path"], r["start_line"]))


def _multilingual(embedder) -> bool:
    """Whether the embedder's model reads more than English (``multilingual`` in models.toml)."""
    return bool(getattr(getattr(embedder, "spec", None), "multilingual", False))


class MemoryIndex:
    """Search index of one memory root. Collaborators may be injected; defaults are built lazily.

    ``db`` (a ``--db`` value or an :class:`~memsearch.location.IndexLocation`) defaults to
    ``$MEMSEARCH_DB``, else ``ROOT/.memsearch`` (see :mod:`memsearch.location`); ``model`` to ``MEMSEARCH_MODEL`` or the
    registry default. Opening checks the parameters the index was built with and raises
    :class:`IndexMismatch` (fix: ``memsearch index ROOT --rebuild``) rather than mix vectors.
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
    ):
        self.root = resolve_root(root)
        #: Where the index and its files live; ``db_path``: its local directory (for a remote index,
        #: this machine's state directory for it), ``location``: its address for messages.
        self.where = IndexLocation.of(self.root, db, resolved=True)
        self.remote = RemoteDB.parse(self.where.remote) if self.where.remote else None
        self.db_path = self.where.ensure_state() if self.remote else self.where.state
        self.location = self.where.label
        self.embedder = embedder or load_embedder(model)
        try:
            self.store = store or Store(self.remote or self.db_path)
        except (OSError, RuntimeError) as exc:  # e.g. a read-only memory root and no --db
            raise index_error(exc, self.db_path, self.root) from None
        self.foreign = foreign
        self.encoding = encoding_name(encoding)
        self.fusion = settings.get("fusion", fusion)
        self.keyword = settings.get("keyword", keyword)  # what runs BM25: "memory" (bm25.py) or "lancedb"
        self.lock = RemoteWriterLock(self.db_path, self.remote) if self.remote else WriterLock(self.db_path)
        # --rebuild drops the tables inside the first sync, under the same hold of the lock
        self._rebuild_pending = rebuild
        meta = None if rebuild else self.store.read_meta()
        try:
            self.chunker = chunker or (ChunkerConfig(**meta["chunker"]) if meta and "chunker" in meta else ChunkerConfig())
        except (TypeError, ValueError) as exc:
            raise IndexDamaged(f"the index at {self.db_path} records chunker settings this version does not know "
                               f"({str(exc)[:100]}): rebuild it with `memsearch index {self.root} --rebuild`") from None
        if include_core is None:
            include_core = bool(meta and meta.get("include_core"))
        self.include_core = include_core
        if meta:
            self._check(meta)
        self._hits = HitBuilder(self.root)
        self._indexes_checked = False
        self._executor = None
        self._pool_lock = threading.Lock()
        self._keyword_idle = threading.Lock()  # held while the worker runs a search's keyword leg
        self._ann, self._ann_version = False, None
        self._flat: FlatVectors | None = None
        self._flat_lock = threading.Lock()
        self._snap: tuple | None = None  # (chunks stamp, table, version, rows) of the last search
        #: BM25 over the latest table version held in memory (``keyword`` "memory"), built in the background
        self.keywords = KeywordCopy(_COLUMNS, enabled=self.keyword == "memory")
        #: The build id of the index this object reads (``index.json``'s "build"): a rebuild
        #: restarts table versions, so every cache keyed by version is dropped when it changes.
        self._build = meta.get("build") if meta else None
        self._meta_stamp = self._stamp()

    # --- parameters -----------------------------------------------------------------------
    def params(self) -> dict:
        return {
            "format": FORMAT_VERSION,
            "model": self.embedder.name,
            "fingerprint": self.embedder.fingerprint,
            "chunker": self.chunker.to_dict(),
            "tokenizer": self.encoding,
            "include_core": self.include_core,
        }

    def _check(self, meta: dict) -> None:
        mine = self.params()
        for key, label in (("format", "index format"), ("fingerprint", "embedding model"), ("chunker", "chunker settings"), ("tokenizer", "tokenizer")):
            if meta.get(key) != mine[key]:
                theirs = meta.get("model") if key == "fingerprint" else meta.get(key)
                ours = mine["model"] if key == "fingerprint" else mine[key]
                raise IndexMismatch(
                    f"the index at {self.location} was built with {label} {theirs!r}, not {ours!r}; vectors are never mixed. "
                    f"Fix: `memsearch index {self.root} --rebuild` (or pass the same --model as before)"
                )

    # --- indexing -------------------------------------------------------------------------
    def sync(self, *, only: Sequence[str] | None = None, progress: Progress | None = None,
             wait: float | None = 0.0, repair: bool = True) -> IndexReport:
        """Index what changed since the last sync (``only``: just these relative paths).

        Takes the index's writer lock for the calling thread, waiting ``wait`` seconds (None:
        forever) for another writer, thread or process, before raising :class:`IndexLocked`.
        A daemon's hold on the lock is shared; its syncs still queue with other threads'.
        A pending ``rebuild`` drops the tables first, under the same hold. A damaged index is
        rebuilt from the Markdown (``repair``, logged, and said in the report's ``repaired``),
        else raised as :class:`IndexDamaged`; a full disk raises
        :class:`~memsearch.errors.StorageFull` and leaves the previous index searchable.
        """
        try:
            with self.lock.writing(timeout=wait):
                if self._rebuild_pending:
                    self.store.drop()
                    self._rebuild_pending = False
                return self._guarded(only, progress, repair)
        except (OSError, RuntimeError) as exc:  # taking the lock itself failed (full disk, permissions)
            if isinstance(exc, MemsearchError):
                raise
            raise index_error(exc, self.db_path, self.root) from None

    def check(self) -> str | None:
        """Read the whole index through and query each of its indexes: the first problem found, or None."""
        return check_store(self.store)

    def check_and_repair(self, wait: float | None = 0.0, progress: Progress | None = None) -> IndexReport | None:
        """:meth:`check`, and when it finds damage, :meth:`rebuild` under the writer lock (its report), else None."""
        problem = self.check()
        if problem is None:
            return None
        with self.lock.writing(timeout=wait):
            return self.rebuild(f"the index is damaged ({problem})", progress)

    @classmethod
    def open_repairing(cls, root, **options) -> "MemoryIndex":
        """A :class:`MemoryIndex`, rebuilt from scratch (and logged) if its parameters are damaged."""
        try:
            return cls(root, **options)
        except IndexDamaged as exc:
            logger.warning("%s: rebuilding", exc)
            return cls(root, **(options | {"rebuild": True}))

    def _guarded(self, only, progress, repair: bool) -> IndexReport:
        try:
            return self._sync(only, progress)
        except (OSError, RuntimeError, ValueError) as exc:
            if isinstance(exc, MemsearchError):
                raise
            error = index_error(exc, self.db_path, self.root)
        except IndexDamaged as exc:
            error = exc
        if not repair or not isinstance(error, IndexDamaged):
            raise error from None
        return self.rebuild(str(error).split(". It is derived")[0].split(": run `")[0].split(": rebuild it with")[0], progress)

    def rebuild(self, reason: str, progress: Progress | None = None) -> IndexReport:
        """Drop the index and build it again from the Markdown (the writer lock must be held)."""
        logger.warning("rebuilding the index at %s: %s", self.db_path, reason)
        self._indexes_checked = False
        self._flat, self._ann_version, self._snap = None, None, None
        self.keywords.forget()
        try:
            self.store.drop()
            report = self._sync(None, progress)
        except (OSError, RuntimeError, ValueError) as exc:
            if isinstance(exc, MemsearchError):
                raise
            raise index_error(exc, self.db_path, self.root) from None
        return dataclasses.replace(report, repaired=reason)

    def _sync(self, only, progress) -> IndexReport:
        tree = scan(self.root, foreign=self.foreign)
        wanted = list(tree.external_files) + (list(tree.core_files) if self.include_core else [])
        self._follow_build()
        self.store.refresh()
        if self.store.read_meta() is None:  # a new build: record the parameters before the first write
            self._build = uuid.uuid4().hex
            self._write_meta()
        report = Sync(tree, self.store, self.embedder, config=self.chunker, encoding=self.encoding,
                      progress=progress).run(wanted, only)
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
        self._meta_stamp = self._stamp()

    def _stamp(self) -> tuple | None:
        """What changes whenever ``index.json`` is replaced (it is written by rename)."""
        if self.store.remote is not None:
            return self.store.remote.stamp()  # the object's etag: a new PUT, a new etag
        try:
            st = os.stat(self.store.meta_path)
        except OSError:
            return None
        return (st.st_ino, st.st_mtime_ns, st.st_size)

    def _follow_build(self) -> None:
        """Follow a rebuild by another process: new build id -> re-check parameters, drop caches."""
        stamp = self._stamp()
        if stamp == self._meta_stamp:
            return
        meta = self.store.read_meta()
        build = meta.get("build") if meta else None
        if build != self._build:
            if meta:
                self._check(meta)  # another model of the same dimension: refuse, never mix vectors
            self._build = build
            self.store.reopen()
            self._flat, self._ann, self._ann_version, self._snap = None, False, None, None
            self.keywords.forget()
            self._hits.forget()
        self._meta_stamp = stamp

    # --- life cycle -----------------------------------------------------------------------
    def close(self) -> None:
        """Release what this index holds in the process: the worker thread and the caches.

        Idempotent; the index stays usable (what it needs is opened again on demand).
        """
        executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True)
        self._flat, self._ann_version, self._snap = None, None, None
        self.keywords.forget()
        self.keywords.wait()
        self._hits.forget()

    def resident_bytes(self) -> int:
        """An estimate of what this index holds in memory: :data:`INDEX_OVERHEAD_BYTES` plus its
        in-memory copies, of the vectors and rows (below the ANN threshold) and of BM25 (bm25.py)."""
        flat = self._flat
        return INDEX_OVERHEAD_BYTES + (flat.nbytes if flat is not None else 0) + self.keywords.nbytes

    def __enter__(self) -> "MemoryIndex":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # --- search ---------------------------------------------------------------------------
    def search(self, query: str | SearchArgs, k: int = 10, scope: str | None = None, mode: str = "hybrid",
               since=None, until=None) -> list[Hit]:
        """Ranked hits for ``query`` (or an already checked :class:`SearchArgs`); see the module docstring."""
        args = query if isinstance(query, SearchArgs) else check_search(self.root, query, k, scope, mode, since, until)
        query, k, mode = clean_text(args.query), args.k, args.mode
        flt = Filter(scope=args.scope, since=args.since, until=args.until)
        try:
            return self._search(query, k, mode, flt)
        except (OSError, RuntimeError, ValueError) as exc:
            if isinstance(exc, MemsearchError):
                raise
            raise index_error(exc, self.db_path, self.root) from None

    def _search(self, query: str, k: int, mode: str, flt: Filter) -> list[Hit]:
        self._follow_build()
        table, version, rows = self._snapshot()
        if table is None or rows == 0:
            return []
        n = max(k * CANDIDATE_FACTOR, MIN_CANDIDATES)
        if mode == "keyword":
            return self._merge(self._keyword(table, query, n, flt), k)
        if mode == "vector":
            return self._merge(self._vector(table, query, n, flt), k)
        # BM25 runs in a worker thread while the query is embedded (both release the GIL), unless
        # the worker is busy with another search's: then here, after the vector leg (searches in
        # flight together overlap one another's legs anyway, and a queue behind one worker would
        # serialise them).
        keyword = None
        if self._keyword_idle.acquire(blocking=False):
            try:
                keyword = self._pool().submit(self._keyword_released, table, query, n, flt)
            except RuntimeError:  # closed by another thread meanwhile: run it here
                self._keyword_idle.release()
        vector = self._vector(table, query, n, flt)
        bm25 = keyword.result() if keyword is not None else self._keyword(table, query, n, flt)
        return self._merge(hybrid(self.fusion, query, vector, bm25, multilingual=_multilingual(self.embedder)), k)

    def _snapshot(self) -> tuple:
        """(chunks table, its latest version, its rows), asking LanceDB only when the table's versions
        on disk moved since the last search: each LanceDB call is a round trip through its event-loop
        thread, six per search before (2.0 of 2.7 s in 400 searches at load 14, all threads waiting)."""
        stamp = self.store.chunks_stamp()
        snap = self._snap
        if snap is not None and stamp is not None and snap[0] == stamp:
            return snap[1:]
        self.store.refresh()
        table = self.store.chunks()
        snap = (stamp, table, table.version, table.count_rows()) if table is not None else (stamp, None, None, 0)
        if table is not None:
            self._snap = snap
        return snap[1:]

    def _keyword_released(self, table, query: str, n: int, flt: Filter) -> list[dict]:
        try:
            return self._keyword(table, query, n, flt)
        finally:
            self._keyword_idle.release()

    def _pool(self):
        with self._pool_lock:
            if self._executor is None:
                from concurrent.futures import ThreadPoolExecutor

                self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memsearch-bm25")
            return self._executor

    def _vector(self, table, query: str, n: int, flt: Filter) -> list[dict]:
        vector = self.embedder.embed_query(query)
        version = self._snapshot()[1]
        if self._ann_version != version:  # an ANN index appears past VECTOR_INDEX_MIN_ROWS
            self._ann, self._ann_version = self.store.has_vector_index(), version
        if not self._ann:  # exact search over an in-memory copy of this table version
            flat = self._flat  # one read: close() in another thread may drop it meanwhile
            if flat is None or flat.version != version:
                with self._flat_lock:  # concurrent searches build one copy, not one each
                    flat = self._flat
                    if flat is None or flat.version != version:
                        flat = self._flat = FlatVectors(table, _COLUMNS)
            return flat.search(vector, n, flt)
        q = table.search(vector, vector_column_name="vector").distance_type("cosine").limit(n).select(_COLUMNS + ["_distance"])
        q = q.nprobes(ANN_NPROBES).refine_factor(ANN_REFINE_FACTOR)
        if flt.sql():
            q = q.where(flt.sql(), prefilter=True)
        rows = q.to_list()
        for row in rows:
            row["score"] = 1.0 - float(row.pop("_distance"))
        return rows

    def _keyword(self, table, query: str, n: int, flt: Filter) -> list[dict]:
        query = keyword_text(query)  # CJK runs as unigrams + bigrams, as in search_text
        copy = self.keywords.get(table, (self._build, self._snapshot()[1]))  # a rebuild restarts versions
        if copy is not None:  # this very version's BM25 in memory; else LanceDB while it is built
            return _canonical(copy.search(query, n, flt))
        try:
            rows = self._fts(table, query, n, flt)
        except (ValueError, RuntimeError, OSError) as exc:
            if '"' not in query or "position" not in str(exc).lower():
                raise
            # An index built without term positions (older lancedb) refuses phrases: match the words instead.
            rows = self._fts(table, query.replace('"', " "), n, flt)
        for row in rows:
            row["score"] = float(row.pop("_score"))
        return _canonical(rows)

    def _fts(self, table, query: str, n: int, flt: Filter) -> list[dict]:
        q = table.search(query, query_type="fts", fts_columns="search_text").limit(n).select(_COLUMNS + ["_score"])
        if flt.sql():
            q = q.where(flt.sql(), prefilter=True)
        return q.to_list()  # a query of stop words only gives no rows, not an error

    def _merge(self, ranked: list[dict], k: int) -> list[Hit]:
        return self._hits.build(merge_rows(ranked, k), self._hits.recorded(self.store, self._build))

    # --- MEMORY.md discovery --------------------------------------------------------------
    def memory_chain(self, directory: str) -> tuple[str, ...]:
        """``MEMORY.md`` paths from the nearest enclosing one up to the root's."""
        return self._hits.chain(directory)

    def memory_ref(self, rel: str) -> MemoryRef:
        """The summary of ``MEMORY.md`` ``rel`` (cached while the file stays the same)."""
        return self._hits.ref(rel)
