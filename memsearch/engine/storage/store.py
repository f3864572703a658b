"""The LanceDB store: one embedded database, a ``chunks`` table keyed by directory path and
a ``files`` table of what was indexed, plus ``index.json`` with the parameters it was built with.

Reads never take a lock. Every write of a sync batch is a single LanceDB commit
(``merge_insert`` that inserts new rows and deletes the old rows of the same files), so a
reader in another process sees each file either whole-old or whole-new, never half; a file
with more chunks than one batch is the exception (``engine/batches``): while it streams in, a
reader may see its old and new chunks side by side, and its files-table row says incomplete.

Filters are built only from values this module escapes itself (:func:`sql_str`) or from
values memsearch generated (hex hashes, ISO dates it formatted): user text is never
formatted into a filter string unescaped.
"""

from __future__ import annotations

import json
import os
import shutil
import warnings
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np
import pyarrow as pa

from ...errors import Hint, IndexDamaged
from ...location import META_FILE
from ...memory.files import atomic_write_json

__all__ = ["Store", "FileState", "Filter", "sql_str", "scope_filter", "CHUNKS", "FILES", "FORMAT_VERSION",
           "FTS_TAIL_MAX_ROWS"]

CHUNKS = "chunks"
FILES = "files"
#: Bumped when the table layout changes; an older index must be rebuilt.
#: 2: the full-text index stores term positions (phrase queries such as ``"hello world"``).
#: 3: ``search_text`` holds CJK runs as unigrams + bigrams (memsearch.engine.search.cjk).
FORMAT_VERSION = 3
#: Rows from which the vector column gets an ANN index (IVF_PQ, cosine). Measured with
#: LanceDB on 2 busy cores, 384-d vectors, top 100: flat search took 19.5 ms at 10k rows,
#: 153 ms at 50k and 327 ms at 100k, IVF_PQ 8-9 ms at each size. Past ~25k rows flat
#: search alone would overrun the 25 ms query budget, so the index is built there. It is
#: built off the write path (:meth:`Store.build_vector_index`: the daemon in the background,
#: ``memsearch index`` at its end), never inside a sync; until then search stays exact.
VECTOR_INDEX_MIN_ROWS = 25_000
#: ANN search settings: partitions probed, and candidates re-ranked with exact distances
#: (refine_factor x limit) so that PQ compression costs little recall.
ANN_NPROBES = 20
ANN_REFINE_FACTOR = 5
_IN_CHUNK = 500  # values per IN (...) list


#: Rows past the full-text index (written since it was built or last folded) above which a
#: sync folds them in (``optimize()``): LanceDB scans that tail on every keyword query. Measured
#: on LoCoMo x4 (9.1k rows, 2 cores at load 23): keyword p50 15.7 ms with 2.3k rows all indexed,
#: 204 ms with 6.9k of 9.1k unindexed, about 28 us per tail row there (~4 us idle). 500 rows
#: keep the tail's share near 2 ms on an idle machine.
FTS_TAIL_MAX_ROWS = 500


def sql_str(value: str) -> str:
    """A SQL string literal for ``value`` (single quotes doubled, NUL refused)."""
    if "\x00" in value:
        raise ValueError("NUL byte in a filter value")
    return "'" + value.replace("'", "''") + "'"


def scope_filter(scope: str) -> str:
    """Rows whose directory is ``scope`` or below it (``scope`` already validated, no ``..``)."""
    return f"(dir = {sql_str(scope)} OR starts_with(dir, {sql_str(scope + '/')}))"


@dataclass(frozen=True)
class Filter:
    """Which rows a search may return: a directory subtree and a date range.

    Values are validated by the caller (``scope`` relative with no ``..``, dates ISO);
    :meth:`sql` escapes them anyway, and :mod:`memsearch.engine.search.flat` applies the same rules in numpy.
    """

    scope: str | None = None
    since: str | None = None
    until: str | None = None

    def sql(self) -> str | None:
        clauses = []
        if self.scope:
            clauses.append(scope_filter(self.scope))
        if self.since:
            clauses.append(f"date >= {sql_str(self.since)}")
        if self.until:
            clauses.append(f"date <= {sql_str(self.until)}")
        return " AND ".join(clauses) or None


def _in_list(column: str, values: Sequence[str]) -> Iterable[str]:
    for i in range(0, len(values), _IN_CHUNK):
        yield f"{column} IN ({', '.join(sql_str(v) for v in values[i : i + _IN_CHUNK])})"


@dataclass(frozen=True)
class FileState:
    file_hash: str
    mtime_ns: int
    size: int
    chunks: int


def chunk_schema(dimension: int) -> pa.Schema:
    return pa.schema([
        ("id", pa.string()),
        ("path", pa.string()),
        ("dir", pa.string()),
        ("depth", pa.int32()),
        ("heading", pa.string()),
        ("start_line", pa.int32()),
        ("end_line", pa.int32()),
        ("text", pa.string()),
        ("search_text", pa.string()),  # context header + text, CJK as unigrams + bigrams: what BM25 sees
        ("tokens", pa.int32()),
        ("file_hash", pa.string()),
        ("embed_hash", pa.string()),
        ("date", pa.string()),
        ("mtime_ns", pa.int64()),
        ("model", pa.string()),
        ("vector", pa.list_(pa.float32(), dimension)),
    ])


FILE_SCHEMA = pa.schema([
    ("path", pa.string()),
    ("file_hash", pa.string()),
    ("mtime_ns", pa.int64()),
    ("size", pa.int64()),
    ("chunks", pa.int32()),
])


class Store:
    """One LanceDB database: a directory, or an object-store prefix (``s3://...``, see :mod:`.remote`)."""

    def __init__(self, path):
        import lancedb

        from .remote import RemoteDB, is_remote

        self.remote = path if isinstance(path, RemoteDB) else RemoteDB.parse(path) if is_remote(path) else None
        if self.remote is not None:
            self.path = self.remote.uri
            self.db = self.remote.connect()
        else:
            self.path = Path(path)
            self.path.mkdir(parents=True, exist_ok=True)
            self.db = lancedb.connect(str(self.path))
        self._chunks = None
        self._files = None

    # --- parameters -------------------------------------------------------------------
    @property
    def meta_path(self) -> Path:
        return self.path / META_FILE

    def read_meta(self) -> dict | None:
        if self.remote is not None:
            return self.remote.read_meta()
        try:
            meta = json.loads(self.meta_path.read_text())
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as err:
            raise IndexDamaged(f"the index parameters in {self.meta_path} are unreadable ({str(err)[:120]})",
                               hint=Hint("rebuild")) from None
        if not isinstance(meta, dict) or not isinstance(meta.get("chunker", {}), dict):
            raise IndexDamaged(f"the index parameters in {self.meta_path} are not the object memsearch writes",
                               hint=Hint("rebuild"))
        return meta

    def write_meta(self, meta: dict) -> None:
        if self.remote is not None:
            return self.remote.write_meta(meta)
        atomic_write_json(self.meta_path, meta, indent=2, sort_keys=True)

    def drop(self) -> None:
        """Remove both tables and the parameters (``--rebuild``)."""
        for name in (CHUNKS, FILES):
            try:
                if name in self._table_names():
                    self.db.drop_table(name)
            except Exception:  # noqa: BLE001 - a damaged table LanceDB cannot drop: remove its files
                if self.remote is not None:
                    raise
                shutil.rmtree(self.path / f"{name}.lance", ignore_errors=True)
            if self.remote is None:
                shutil.rmtree(self.path / f"{name}.lance", ignore_errors=True)
        if self.remote is not None:
            self.remote.delete(META_FILE)
        else:
            self.meta_path.unlink(missing_ok=True)
        self._chunks = self._files = None

    def reopen(self) -> None:
        """Forget the open table handles (the tables were dropped and created again elsewhere)."""
        self._chunks = self._files = None

    def _table_names(self) -> list[str]:
        result = self.db.list_tables() if hasattr(self.db, "list_tables") else self.db.table_names()
        return list(getattr(result, "tables", result))

    # --- tables -----------------------------------------------------------------------
    def chunks(self, dimension: int | None = None):
        """The chunks table; created (with ``dimension``) when missing, else None."""
        if self._chunks is None:
            if CHUNKS in self._table_names():
                self._chunks = self.db.open_table(CHUNKS)
            elif dimension:
                self._chunks = self.db.create_table(CHUNKS, schema=chunk_schema(dimension))
        return self._chunks

    def files(self, create: bool = False):
        if self._files is None:
            if FILES in self._table_names():
                self._files = self.db.open_table(FILES)
            elif create:
                self._files = self.db.create_table(FILES, schema=FILE_SCHEMA)
        return self._files

    def chunks_stamp(self) -> tuple | None:
        """What changes whenever the chunks table commits a version (its ``_versions`` folder's
        entries), read with one ``stat``; None when unknown (a remote index, no table yet)."""
        if self.remote is not None:
            return None
        try:
            st = os.stat(self.path / f"{CHUNKS}.lance" / "_versions")
        except OSError:
            return None
        return (st.st_ino, st.st_mtime_ns, st.st_size, st.st_nlink)

    def refresh(self) -> None:
        """See the latest committed version (another process may have written)."""
        for table in (self._chunks, self._files):
            if table is not None:
                table.checkout_latest()

    def file_states(self) -> dict[str, FileState]:
        table = self.files()
        if table is None:
            return {}
        data = table.to_arrow().to_pydict()
        return {
            p: FileState(h, m, s, c)
            for p, h, m, s, c in zip(data["path"], data["file_hash"], data["mtime_ns"], data["size"], data["chunks"])
        }

    def vectors_for(self, embed_hashes: Sequence[str]) -> dict[str, np.ndarray]:
        """Stored vectors by embed hash (memsearch-made hex strings), for reuse."""
        table = self.chunks()
        if table is None or not embed_hashes:
            return {}
        found: dict[str, np.ndarray] = {}
        for where in _in_list("embed_hash", list(embed_hashes)):
            data = table.search().where(where).select(["embed_hash", "vector"]).limit(None).to_arrow()
            if data.num_rows:
                vectors = data.column("vector").combine_chunks().flatten().to_numpy().reshape(data.num_rows, -1)
                for h, v in zip(data.column("embed_hash").to_pylist(), vectors):
                    found[h] = v
        return found

    def replace_files(self, rows: pa.Table, paths: Sequence[str], states: Sequence[dict], *,
                      appended: Sequence[str] = (), completed: Sequence[str] = ()) -> None:
        """Make ``rows`` the only chunks of ``paths`` (deleted files: no rows) in one commit.

        Paths past the first ``_IN_CHUNK`` (long deletion lists) are deleted in further
        commits; they must hold no new rows, so callers put the re-indexed paths first.
        ``appended`` paths (a file streamed over several batches) keep their other rows: their
        rows in ``rows`` are upserted by id; for those in ``completed`` (their last batch) the
        rows of any other version of the file are then deleted. The ``states`` of all these
        paths are written last.
        """
        if not paths and not appended:
            return
        if set(rows.column("path").to_pylist()) - set(paths[:_IN_CHUNK]) - set(appended):
            raise ValueError("replace_files: the re-indexed paths must come first in paths")
        table = self.chunks(dimension=rows.schema.field("vector").type.list_size)
        wheres = list(_in_list("path", list(paths))) or [None]
        for i, where in enumerate(wheres):
            part = rows if i == 0 else rows.slice(0, 0)
            if table.count_rows() == 0 and i == 0:
                if part.num_rows:
                    table.add(part)
                continue
            merge = table.merge_insert("id").when_matched_update_all().when_not_matched_insert_all()
            if where is not None:
                merge = merge.when_not_matched_by_source_delete(where)
            if part.num_rows or where is not None:
                merge.execute(part)
        hashes = {s["path"]: s["file_hash"] for s in states}
        for path in completed:
            table.delete(f"path = {sql_str(path)} AND file_hash != {sql_str(hashes[path])}")
        self._write_states(list(paths) + [p for p in appended if p in hashes], states)

    def mark_incomplete(self, states: Sequence[dict]) -> None:
        """Write files-table rows for files whose chunks are about to be written in several
        commits (rows that match no file: a sync killed meanwhile leaves them to redo)."""
        if states:
            files = self.files(create=True)
            (files.merge_insert("path").when_matched_update_all().when_not_matched_insert_all()
             .execute(pa.Table.from_pylist(list(states), schema=FILE_SCHEMA)))

    def _write_states(self, paths: Sequence[str], states: Sequence[dict]) -> None:
        files = self.files(create=True)
        present = pa.Table.from_pylist(list(states), schema=FILE_SCHEMA)
        for i, where in enumerate(_in_list("path", list(paths))):
            part = present if i == 0 else present.slice(0, 0)
            (files.merge_insert("path").when_matched_update_all().when_not_matched_insert_all()
             .when_not_matched_by_source_delete(where).execute(part))

    def touch_states(self, states: Sequence[dict]) -> None:
        """Record new mtimes of files whose content did not change."""
        if states:
            self._write_states([s["path"] for s in states], states)

    # --- indexes and maintenance --------------------------------------------------------
    def ensure_indexes(self) -> None:
        """The full-text and scalar indexes (quick); the vector index is :meth:`build_vector_index`."""
        table = self.chunks()
        if table is None or table.count_rows() == 0:
            return
        existing = {tuple(ix.columns) for ix in table.list_indices()}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if ("search_text",) not in existing:
                table.create_fts_index("search_text", use_tantivy=False, replace=True, with_position=True)
            for column in ("path", "dir"):
                if (column,) not in existing:
                    table.create_scalar_index(column)

    def fulltext_tail(self) -> int:
        """Rows the full-text index does not cover yet (searched by a scan beside it)."""
        table = self.chunks()
        if table is None:
            return 0
        name = next((ix.name for ix in table.list_indices() if tuple(ix.columns) == ("search_text",)), None)
        stats = table.index_stats(name) if name else None
        return int(getattr(stats, "num_unindexed_rows", 0) or 0)

    def fold_fulltext_tail(self, max_rows: int | None = None) -> bool:
        """Fold new rows into the indexes (and compact) when more than ``max_rows`` (default
        FTS_TAIL_MAX_ROWS) sit outside the full-text index; old versions are kept (LanceDB's
        default week) for readers. True if folded."""
        if self.fulltext_tail() <= (FTS_TAIL_MAX_ROWS if max_rows is None else max_rows):
            return False
        self.chunks().optimize()
        return True

    def vector_index_due(self, min_rows: int = VECTOR_INDEX_MIN_ROWS) -> bool:
        """Whether the chunks table has ``min_rows`` rows and no vector index yet."""
        table = self.chunks()
        return table is not None and table.count_rows() >= min_rows and not self.has_vector_index()

    def build_vector_index(self, *, num_partitions: int | None = None, num_sub_vectors: int | None = None) -> None:
        """Build the ANN index (IVF_PQ, cosine) over the rows there now: minutes at 100k rows on 2 cores.

        One commit at the end; rows written meanwhile or later are searched exactly beside it
        (LanceDB scans the unindexed fragments) until :meth:`optimize` folds them in.
        """
        table = self.chunks()
        if table is None:
            return
        extra = {k: v for k, v in (("num_partitions", num_partitions), ("num_sub_vectors", num_sub_vectors)) if v}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            table.create_index(metric="cosine", vector_column_name="vector", index_type="IVF_PQ", replace=True, **extra)

    def has_vector_index(self) -> bool:
        table = self.chunks()
        return table is not None and any(tuple(ix.columns) == ("vector",) for ix in table.list_indices())

    def optimize(self, keep: timedelta = timedelta(minutes=1)) -> None:
        """Compact small fragments, fold new rows into the indexes, prune old versions."""
        for table in (self.chunks(), self.files()):
            if table is not None:
                table.optimize(cleanup_older_than=keep)

    def dimension(self) -> int | None:
        """The vector width of the chunks table, None while there is no table."""
        table = self.chunks()
        return table.schema.field("vector").type.list_size if table is not None else None

    def scan_rows(self, columns: Sequence[str], batch_rows: int = 4096) -> Iterable[pa.RecordBatch]:
        """Every row of the chunks table (``columns`` only), in record batches of at most ``batch_rows``."""
        table = self.chunks()
        if table is None:
            return iter(())
        return table.search().select(list(columns)).limit(None).to_batches(batch_rows)

    def row_count(self) -> int:
        """Chunks stored (0 while there is no table)."""
        table = self.chunks()
        return table.count_rows() if table is not None else 0

    def version(self) -> int:
        table = self.chunks()
        return table.version if table is not None else 0

    def disk_bytes(self) -> int:
        if self.remote is not None:
            return self.remote.size()
        return sum(f.stat().st_size for f in self.path.rglob("*") if f.is_file())
