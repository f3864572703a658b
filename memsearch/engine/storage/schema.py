"""The index's table layout: the ``chunks`` and ``files`` tables' Arrow schemas and the format version."""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

__all__ = ["CHUNKS", "FILES", "FORMAT_VERSION", "HIT_COLUMNS", "FILE_SCHEMA", "FileState", "chunk_schema",
           "incomplete_state", "is_incomplete", "TEXT_ONLY"]

CHUNKS = "chunks"
FILES = "files"
#: Bumped when the table layout changes; an older index must be rebuilt.
#: 2: the full-text index stores term positions (phrase queries such as ``"hello world"``).
#: 3: ``search_text`` holds CJK runs as unigrams + bigrams (memsearch.engine.search.cjk).
FORMAT_VERSION = 3
#: The columns a search reads of each row it returns (the rest stay on disk).
HIT_COLUMNS = ("id", "path", "dir", "heading", "start_line", "end_line", "text", "date")


#: The ``embed_hash`` of a row written before its text was embedded (its vector is zeros): the vector
#: leg leaves such rows out, and no stored vector is ever reused from one (:mod:`..ingest.sync`).
TEXT_ONLY = ""


def incomplete_state(path: str) -> dict:
    """The files-table row of a file whose rows are being written: it matches no file on disk, so a
    sync killed meanwhile leaves the file for the next sync to index again."""
    return {"path": path, "file_hash": "", "mtime_ns": -1, "size": -1, "chunks": 0}


def is_incomplete(mtime_ns: int, size: int) -> bool:
    """Whether a files-table row's ``mtime_ns`` and ``size`` are :func:`incomplete_state`'s."""
    return mtime_ns == -1 and size == -1


@dataclass(frozen=True)
class FileState:
    """A files-table row: what a file was when it was indexed."""

    file_hash: str
    mtime_ns: int
    size: int
    chunks: int

    def same_as(self, st) -> bool:
        """Whether ``st`` (an ``os.stat_result`` of the file now) shows the file as it was indexed: the
        one test of "changed since indexed" (a sync's skip, a hit's ``stale``, a status count)."""
        return self.mtime_ns == st.st_mtime_ns and self.size == st.st_size


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
