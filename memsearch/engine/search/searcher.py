"""The two legs of a search over one store, vectors and BM25, and their fusion into :class:`~.hits.Hit` results.

Hybrid search runs BM25 (held in memory per table version, :mod:`.bm25`, or LanceDB's full-text
index) and vector search (cosine: an in-memory exact copy, :mod:`.flat`, or LanceDB's ANN index
past ``VECTOR_INDEX_MIN_ROWS``) over the same filtered rows and fuses them (:mod:`.fusion`: by
default a convex combination of min-max normalised scores, or reciprocal rank fusion; see
benchmarks/README.md for the measurements behind the choice). Hits of one file whose line ranges
overlap are merged, and every hit carries its nearest enclosing ``MEMORY.md`` (:mod:`.hits`). The
``timeline`` mode keeps the hybrid ranking's best rows within ``k`` x TIMELINE_CHARS_PER_HIT characters, a few a session, oldest first
(:mod:`.timeline`); a hybrid search for a question that spans memory (:func:`.query.spans_memory`) opens with those
rows, best first (:func:`.timeline.spread`).
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

from ..embed.embedder import Embedder
from ..storage.filter import Filter
from ..storage.schema import HIT_COLUMNS
from ..storage.store import Store
from .bm25 import KeywordCopy
from .cjk import keyword_text
from .flat import FlatVectors
from .fusion import CANDIDATE_FACTOR, MIN_CANDIDATES, hybrid
from .hits import Hit, HitBuilder
from .order import rank_order
from .query import spans_memory
from .shape import merge_rows
from .timeline import TIMELINE_CANDIDATES, spread_if_spanning, timeline

__all__ = ["Searcher", "canonical", "KEYWORD_SCORE_DECIMALS", "KEYWORD_THREAD_MIN_ROWS"]

#: Keyword scores equal to this many decimals count as a tie (float32 sums in a different order
#: differ in the last bits), broken by path and line.
KEYWORD_SCORE_DECIMALS = 6
#: From this many rows the in-memory BM25 leg of a hybrid search runs in the worker thread while the
#: query is embedded; below it, in the searching thread. The hand-over and back costs 0.03-0.05 ms of
#: CPU (more with 16 searches in flight), as much as the leg at 220 rows (0.04 ms), while the overlap
#: saves at most the leg: 0.14 ms at 10k rows, a twentieth of the encode, 0.44 ms at 50k
#: (``python -m benchmarks.perf.keyword_leg``, docs/benchmarks.md).
KEYWORD_THREAD_MIN_ROWS = 10_000
_COLUMNS = list(HIT_COLUMNS)


def canonical(rows: list[dict]) -> list[dict]:
    """BM25 rows best first, equal scores (to 6 decimals) by path and line: the in-memory copy and
    LanceDB's FTS break ties differently, and the same query must rank the same on either path."""
    return rank_order(rows, lambda r: round(r["score"], KEYWORD_SCORE_DECIMALS))


def _multilingual(embedder) -> bool:
    """Whether the embedder's model reads more than English (``multilingual`` in models.toml)."""
    return bool(getattr(getattr(embedder, "spec", None), "multilingual", False))


class _Scanned:
    """Rows already read, offered as a store's :meth:`~..storage.store.Store.read` (for :meth:`Searcher.prepare`)."""

    def __init__(self, data) -> None:
        self.data = data

    def read(self, columns):
        return self.data.select(list(columns))


class Searcher:
    """Searches of one store: the in-memory copies of its latest table version, the BM25 worker
    thread, and the fusion (``fusion``: a name of :data:`~.fusion.FUSIONS`). ``keyword`` says what
    runs BM25: ``"memory"`` (:mod:`.bm25`) or ``"lancedb"``."""

    def __init__(self, store: Store, embedder: Embedder, hits: HitBuilder, *, fusion: str, keyword: str):
        self.store, self.embedder, self.hits = store, embedder, hits
        self.fusion = fusion
        #: BM25 over the latest table version held in memory (``keyword`` "memory"), built in the background
        self.keywords = KeywordCopy(_COLUMNS, enabled=keyword == "memory")
        self._executor: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()
        self._keyword_idle = threading.Lock()  # held while the worker runs a search's keyword leg
        self._ann, self._ann_version = False, None
        self._text_only = False  # rows written text-first (not embedded) in this version: the ANN leg skips them
        self._flat: FlatVectors | None = None
        self._flat_lock = threading.Lock()
        self._snap: tuple | None = None  # (tables' stamp, version, rows) of the last search

    def search(self, query: str, k: int, mode: str, flt: Filter, build=None) -> list[Hit]:
        """The ``k`` best hits for ``query`` (checked and cleaned) in ``mode`` among the rows ``flt``
        allows; ``build`` is the index build id the caches are keyed by (a rebuild restarts versions)."""
        version, rows = self.snapshot()
        if rows == 0:
            return []
        # a timeline, or a hybrid search for a question that spans memory, fetches the timeline's depth
        # (TIMELINE_CANDIDATES, measured as such); every other search at least MIN_CANDIDATES, so its order does
        # not depend on k (fusion.NORM_DEPTH)
        spanning = mode == "hybrid" and spans_memory(query)  # asked once: a regex over the query
        n = max(k * CANDIDATE_FACTOR, TIMELINE_CANDIDATES if spanning or mode == "timeline" else MIN_CANDIDATES)
        if mode == "keyword":
            return self._merge(self.keyword(query, n, flt, (build, version)), k, build)
        if mode == "vector":
            return self._merge(self.vector(query, n, flt, version), k, build)
        # BM25 runs in a worker thread while the query is embedded (both release the GIL), unless the
        # table is small and its copy in memory (KEYWORD_THREAD_MIN_ROWS) or the worker is busy with
        # another search's: then here, after the vector leg (searches in flight together overlap one
        # another's legs anyway, and a queue behind one worker would serialise them).
        keyword = None
        inline = rows < KEYWORD_THREAD_MIN_ROWS and self.keywords.holds((build, version))
        if not inline and self._keyword_idle.acquire(blocking=False):
            try:
                keyword = self._pool().submit(self._keyword_released, query, n, flt, (build, version))
            except RuntimeError:  # closed by another thread meanwhile: run it here
                self._keyword_idle.release()
        vector = self.vector(query, n, flt, version)
        bm25 = keyword.result() if keyword is not None else self.keyword(query, n, flt, (build, version))
        ranked = hybrid(self.fusion, query, vector, bm25, multilingual=_multilingual(self.embedder))
        if mode == "timeline":  # the best rows within k x TIMELINE_CHARS_PER_HIT characters, oldest first: all are hits
            ranked = timeline(ranked, query, k)
            return self._merge(ranked, len(ranked), build)
        # a summary, an order, everything about X: its first hits reach over the sessions (timeline.spread)
        return self._merge(spread_if_spanning(ranked, query, spanning), k, build)

    def snapshot(self) -> tuple[int, int]:
        """(latest version, rows) of the chunks table, asking LanceDB only when the tables' versions
        on disk moved since the last search: each LanceDB call is a round trip through its event-loop
        thread, six per search before (2.0 of 2.7 s in 400 searches at load 14, all threads waiting)."""
        stamp = self.store.versions_stamp()
        snap = self._snap
        if snap is not None and stamp is not None and snap[0] == stamp:
            return snap[1:]
        self.store.refresh()
        rows = self.store.row_count()
        snap = (stamp, self.store.version(), rows)
        if self.store.chunks() is not None:
            self._snap = snap
        return snap[1:]

    def prepare(self, stamp: tuple, build=None) -> None:
        """Build the in-memory copies of the store's tables as they are now (a replica's next version, keyed
        by ``stamp``), then make them what searches use: no search waits for them (:mod:`..storage.follow`)."""
        version, rows = self.store.version(), self.store.row_count()
        flat = None
        if rows:  # one scan of the rows for both copies (each a round trip to the store per fragment)
            exact, bm25 = not self.store.has_vector_index(), self.keywords.enabled
            columns = _COLUMNS + (["vector"] if exact else []) + (["search_text"] if bm25 else [])
            data = self.store.read(columns) if exact or bm25 else None
            if exact:
                flat = FlatVectors(data.select(_COLUMNS + ["vector"]), version)
            if bm25:
                self.keywords.ensure(_Scanned(data), (build, version))
            self.hits.recorded(self.store, build, stamp)
        with self._flat_lock:
            if flat is not None:
                self._flat = flat
            self._snap = (stamp, version, rows)

    def rewriting(self, rewrite: Callable[[], object], build=None):
        """Run ``rewrite``, a change of the tables' versions that keeps their rows (a compaction), while
        searches go on with the in-memory copies of the version before it, moved to the new version before
        searches see it: else the first search after a compaction ran on LanceDB while the copies were
        built again, and the same query's keyword scores differed in the 7th digit."""
        snap, store = self._snap, self.store
        if snap is None or snap[0] is None or store.pinned is not None or snap[0] != store.versions_stamp():
            return rewrite()  # no copy of the latest version to keep: the next search builds them
        store.pinned = snap[0]  # searches stay on this snapshot meanwhile
        try:
            result = rewrite()
            store.refresh(pinned_too=True)
            self.prepare((store.version(), store.files_version()), build)
            return result
        finally:
            store.pinned = None

    def vector(self, query: str, n: int, flt: Filter, version: int | None = None) -> list[dict]:
        """The ``n`` rows nearest the query's embedding, each with its cosine ``score``."""
        version = self.snapshot()[0] if version is None else version
        vector = self.embedder.embed_query(query)
        if self._ann_version != version:  # an ANN index appears past VECTOR_INDEX_MIN_ROWS
            self._ann, self._ann_version = self.store.has_vector_index(), version
            self._text_only = self._ann and self.store.text_only_rows() > 0
        if self._ann:
            return self.store.vector_search(vector, n, flt, _COLUMNS, embedded_only=self._text_only)
        flat = self._flat  # exact search over an in-memory copy; one read: close() may drop it meanwhile
        if flat is None or flat.version != version:
            with self._flat_lock:  # concurrent searches build one copy, not one each
                flat = self._flat
                if flat is None or flat.version != version:
                    flat = self._flat = FlatVectors(self.store.read(_COLUMNS + ["vector"]), version)
        return flat.search(vector, n, flt)

    def _keyword_released(self, query: str, n: int, flt: Filter, key) -> list[dict]:
        try:
            return self.keyword(query, n, flt, key)
        finally:
            self._keyword_idle.release()

    def keyword(self, query: str, n: int, flt: Filter, key=None) -> list[dict]:
        """The ``n`` best BM25 rows for ``query``, in :func:`canonical` order; ``key``: (build id, version)."""
        query = keyword_text(query)  # CJK runs as unigrams + bigrams, as in search_text
        key = (None, self.snapshot()[0]) if key is None else key
        copy = self.keywords.get(self.store, key)
        if copy is not None:  # this very version's BM25 in memory; else LanceDB while it is built
            return canonical(copy.search(query, n, flt))
        return canonical(self.store.keyword_search(query, n, flt, _COLUMNS))

    def _merge(self, ranked: list[dict], k: int, build) -> list[Hit]:
        """The ``k`` best hits, each saying whether its file changed since it was indexed (``stale``) or is
        still being indexed (``partial``)."""
        snap = self._snap  # the files table is read again only when its versions moved (as the chunks')
        return self.hits.build(merge_rows(ranked, k), self.hits.recorded(self.store, build, snap[0] if snap else None))

    def _pool(self) -> ThreadPoolExecutor:
        with self._pool_lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memsearch-bm25")
            return self._executor

    @property
    def nbytes(self) -> int:
        """What the in-memory copies hold (estimated)."""
        flat = self._flat
        return (flat.nbytes if flat is not None else 0) + self.keywords.nbytes

    def forget(self) -> None:
        """Drop the in-memory copies and what is known of the indexes (the tables were rebuilt)."""
        self._flat, self._ann, self._ann_version, self._snap = None, False, None, None
        self.keywords.forget()
        self.hits.forget()

    def close(self) -> None:
        """Stop the worker thread and drop the caches; searching again starts them anew."""
        executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True)
        self._flat, self._ann_version, self._snap = None, None, None
        self.keywords.forget()
        self.keywords.wait()
        self.hits.forget()
