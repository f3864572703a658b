"""A damaged or full index: recognise the failure, name the fix, and check an index end to end.

The index is derived data: while the Markdown exists nothing in it is lost, so every kind
of damage (a truncated or deleted data file, missing manifests or ``_indices``, garbage in a
table, an ``index.json`` that is not the object we wrote) becomes either
:class:`~memsearch.errors.IndexDamaged`, naming ``memsearch index ROOT --rebuild``, or a
rebuild on its own by a writer (``memsearch index``, the daemon, a sync before a search).
A full disk is :class:`~memsearch.errors.StorageFull`: the previous index stays searchable.
"""

from __future__ import annotations

import errno
import re

from ...errors import Hint, IndexDamaged, MemsearchError, StorageFull

__all__ = ["disk_full", "index_error", "check_store", "reason_of", "CHECK_BATCH_ROWS"]

#: Rows read per batch when :func:`check_store` reads a table through (bounded memory).
CHECK_BATCH_ROWS = 4096
_FULL_ERRNOS = (errno.ENOSPC, errno.EDQUOT)
_FULL_TEXT = ("no space left on device", "os error 28", "disk quota exceeded", "os error 122", "file too large", "os error 27")
_RUST_PATH = re.compile(r",?\s*/(?:rustc|root/\.cargo)/\S+")


def disk_full(exc: BaseException) -> bool:
    """Whether ``exc`` says the disk (or quota, or file size limit) is exhausted."""
    if isinstance(exc, OSError) and exc.errno in (*_FULL_ERRNOS, errno.EFBIG):
        return True
    return any(marker in str(exc).lower() for marker in _FULL_TEXT)


def reason_of(exc: BaseException, limit: int = 160) -> str:
    """One short line saying what failed (no Rust source paths, no multi-line dumps)."""
    text = _RUST_PATH.sub("", str(exc)).strip().splitlines()
    line = (text[0] if text else type(exc).__name__).strip()
    return line if len(line) <= limit else line[:limit] + "..."


def index_error(exc: BaseException, db_path, root) -> MemsearchError:
    """The typed error for a failure of the store at ``db_path`` (a MemsearchError passes through)."""
    if isinstance(exc, MemsearchError):
        return exc
    if disk_full(exc):
        return StorageFull(f"the disk holding the index {db_path} is full ({reason_of(exc, 80)}): free some space, or put "
                           "the index elsewhere with --db, then run the command again; searches keep answering from the "
                           "index as it was")
    if isinstance(exc, PermissionError):
        return StorageFull(f"cannot write the index at {db_path}: permission denied. Pass --db DIR (or set MEMSEARCH_DB) "
                           "to a directory you can write")
    return IndexDamaged(f"the index at {db_path} is damaged ({reason_of(exc)}). It is derived from your Markdown, which is "
                        "untouched", hint=Hint("rebuild"))


def check_store(store) -> str | None:
    """Read every table of ``store`` through (in batches) and query every index; the first problem, or None."""
    try:
        names = store._table_names()
    except Exception as exc:  # noqa: BLE001 - any failure to list is damage
        return reason_of(exc)
    checks = [("files", store.files), ("chunks", store.chunks)]
    for name, opener in checks:
        if name not in names:
            continue
        try:
            table = opener()
            if table is None:
                return f"the {name} table cannot be opened"
            rows = table.count_rows()
            seen = 0
            for batch in table.search().limit(None).to_batches(CHECK_BATCH_ROWS):
                seen += batch.num_rows
            if seen != rows:
                return f"the {name} table holds {seen} readable rows of {rows}"
            if name == "chunks" and rows:
                _check_indexes(table)
        except Exception as exc:  # noqa: BLE001 - whatever LanceDB raises, the table is unusable
            return f"{name} table: {reason_of(exc)}"
    if "chunks" not in names and store.file_states() and any(s.chunks for s in store.file_states().values()):
        return "the chunks table is missing while the files table lists indexed chunks"
    return None


def _check_indexes(table) -> None:
    for ix in table.list_indices():
        columns = tuple(ix.columns)
        if columns == ("search_text",):
            table.search("memsearch index check", query_type="fts", fts_columns="search_text").limit(1).to_list()
        elif columns in (("path",), ("dir",)):
            table.search().where(f"{columns[0]} = 'memsearch-index-check'", prefilter=True).limit(1).to_list()
        table.index_stats(ix.name)
