"""Incremental sync of a memory tree into the store.

* A file whose size and mtime are unchanged is not opened; one whose content hash is
  unchanged is not parsed past its hash.
* A changed file is re-chunked; each chunk's *embedded text* (context header + text) is
  hashed, and a vector already stored under that hash (same model, enforced by the index
  parameters) is reused. Inserting a line at the top of a file re-embeds nothing that did
  not change; the report counts embedded and reused chunks.
* Deleted and renamed files leave the index in the same sync (a rename reuses every vector).
"""

from __future__ import annotations

import hashlib
import os
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import PurePosixPath
from typing import Callable, Iterable

import numpy as np
import pyarrow as pa

from .chunker import Chunk, ChunkerConfig, chunk_document
from .document import Document, parse_document
from .embedder import Embedder
from .store import FileState, Store, chunk_schema
from .tokens import get_encoding
from .tree import MemoryTree

__all__ = ["IndexReport", "sync_tree", "context_header", "Progress"]

#: Files per write batch: each batch is one atomic commit and one progress step.
BATCH_FILES = 64
#: Chunks embedded per model call inside a batch (the model batches further internally).
EMBED_GROUP = 256
#: When a chunk's embedded text is over the model's limit, re-chunk with this share of the budget.
RECHUNK_SHRINK = 0.75

Progress = Callable[[str, int, int, int], None]  # (phase, files done, files total, chunks done)


@dataclass(frozen=True)
class IndexReport:
    files_added: int = 0
    files_changed: int = 0
    files_removed: int = 0
    files_unchanged: int = 0
    chunks_embedded: int = 0
    chunks_reused: int = 0
    chunks_total: int = 0
    seconds: float = 0.0
    changed_paths: tuple[str, ...] = field(default=(), repr=False)
    removed_paths: tuple[str, ...] = field(default=(), repr=False)

    @property
    def changed(self) -> bool:
        return bool(self.files_added or self.files_changed or self.files_removed)

    def to_dict(self) -> dict:
        data = asdict(self)
        data["changed_paths"] = list(self.changed_paths)
        data["removed_paths"] = list(self.removed_paths)
        return data


def context_header(doc: Document, chunk: Chunk) -> str:
    """The line prepended to a chunk's text before embedding: where it sits, and when."""
    parts: list[str] = []
    for item in (doc.title, *chunk.heading):
        if item and item not in parts:
            parts.append(item)
    header = " > ".join(parts)
    if doc.date and doc.date not in header:
        header += f" ({doc.date})"
    return header


def _hash(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def _dir_of(path: str) -> str:
    parent = str(PurePosixPath(path).parent)
    return "." if parent in ("", ".") else parent


@dataclass
class _Pending:
    path: str
    doc: Document
    chunks: list[Chunk]
    headers: list[str]
    state: dict


def _chunk_file(path: str, text: str, count, cut, config: ChunkerConfig, embedder: Embedder) -> tuple[Document, list[Chunk], list[str]]:
    doc = parse_document(path, text)
    budget = config.max_tokens
    for _ in range(6):
        chunks = chunk_document(doc, count, ChunkerConfig(budget, config.overlap_lines), cut)
        headers = [context_header(doc, c) for c in chunks]
        lengths = embedder.token_lengths([f"{h}\n{c.text}" for h, c in zip(headers, chunks)])
        if all(n <= embedder.max_tokens for n in lengths):
            break
        budget = max(16, int(budget * RECHUNK_SHRINK))
    return doc, chunks, headers


def sync_tree(
    tree: MemoryTree,
    store: Store,
    embedder: Embedder,
    *,
    files: Iterable[str],
    config: ChunkerConfig,
    encoding: str | None = None,
    only: Iterable[str] | None = None,
    progress: Progress | None = None,
) -> IndexReport:
    """Bring the store in line with ``files`` (relative paths) under ``tree.root``.

    ``only`` limits the work to those paths (a watcher's changed set); others are untouched.
    """
    started = time.perf_counter()
    enc = get_encoding(encoding)
    count = lambda text: len(enc.encode_ordinary(text))  # noqa: E731

    def cut(text: str, budget: int) -> list[str]:
        ids = enc.encode_ordinary(text)
        return [enc.decode(ids[i : i + budget]) for i in range(0, len(ids), budget)] or [text]

    wanted = set(files)
    states = store.file_states()
    scope = set(only) if only is not None else None
    candidates = sorted(wanted if scope is None else wanted & scope)
    removed = sorted(p for p in states if p not in wanted and (scope is None or p in scope))

    to_index: list[tuple[str, bytes, dict, bool]] = []  # path, raw, state, is_new
    touched: list[dict] = []
    unchanged = 0
    for path in candidates:
        full = tree.root / path
        try:
            st = full.stat()
        except OSError:
            if path in states:
                removed.append(path)
            continue
        old = states.get(path)
        if old is not None and old.mtime_ns == st.st_mtime_ns and old.size == st.st_size:
            unchanged += 1
            continue
        try:
            raw = full.read_bytes()
        except OSError:
            continue  # unreadable: the validator reports it; keep what the index had
        digest = _hash(raw)
        state = {"path": path, "file_hash": digest, "mtime_ns": st.st_mtime_ns, "size": st.st_size, "chunks": 0}
        if old is not None and old.file_hash == digest:
            unchanged += 1
            state["chunks"] = old.chunks
            touched.append(state)
            continue
        to_index.append((path, raw, state, old is None))

    total_files = len(to_index)
    embedded = reused = 0
    done_files = 0
    dimension = None
    if progress:
        progress("index", 0, total_files, 0)
    # Batches of files: chunk, look up reusable vectors, embed the rest, commit atomically.
    for start in range(0, max(total_files, 1 if removed else 0), BATCH_FILES):
        batch = to_index[start : start + BATCH_FILES]
        pending: list[_Pending] = []
        for path, raw, state, _ in batch:
            text = raw.decode("utf-8", errors="replace").removeprefix("\ufeff")
            doc, chunks, headers = _chunk_file(path, text, count, cut, config, embedder)
            state["chunks"] = len(chunks)
            pending.append(_Pending(path, doc, chunks, headers, state))
        embed_texts = {}
        for item in pending:
            for header, chunk in zip(item.headers, item.chunks):
                text = f"{header}\n{chunk.text}"
                embed_texts.setdefault(_hash(text.encode()), text)
        vectors = store.vectors_for(list(embed_texts))
        missing = [h for h in embed_texts if h not in vectors]
        for i in range(0, len(missing), EMBED_GROUP):
            group = missing[i : i + EMBED_GROUP]
            for h, v in zip(group, embedder.embed_documents([embed_texts[h] for h in group])):
                vectors[h] = v
            if progress:
                progress("embed", done_files, total_files, embedded + min(i + EMBED_GROUP, len(missing)))
        rows = _rows(pending, vectors, embedder, embedded_now=set(missing))
        embedded += len(missing)
        reused += sum(1 for r in rows["embed_hash"]) - rows["_new"]
        del rows["_new"]
        dimension = dimension or embedder.dimension or (len(next(iter(vectors.values()))) if vectors else None)
        paths = [p.path for p in pending] + (removed if start == 0 else [])
        if dimension:
            table = pa.Table.from_pydict(rows, schema=chunk_schema(dimension))
            store.replace_files(table, paths, [p.state for p in pending])
        elif paths:  # only deletions, table may not exist yet
            existing = store.chunks()
            if existing is not None:
                dim = existing.schema.field("vector").type.list_size
                store.replace_files(pa.Table.from_pydict(rows, schema=chunk_schema(dim)), paths, [p.state for p in pending])
        done_files += len(batch)
        if progress:
            progress("index", done_files, total_files, embedded)
    store.touch_states(touched)
    if to_index or removed:
        store.ensure_indexes()
    table = store.chunks()
    return IndexReport(
        files_added=sum(1 for *_, new in to_index if new),
        files_changed=sum(1 for *_, new in to_index if not new),
        files_removed=len(removed),
        files_unchanged=unchanged,
        chunks_embedded=embedded,
        chunks_reused=reused,
        chunks_total=table.count_rows() if table is not None else 0,
        seconds=time.perf_counter() - started,
        changed_paths=tuple(p for p, *_ in to_index),
        removed_paths=tuple(removed),
    )


def _rows(pending: list[_Pending], vectors: dict[str, np.ndarray], embedder: Embedder, embedded_now: set[str]) -> dict:
    cols: dict[str, list] = {k: [] for k in (
        "id", "path", "dir", "depth", "heading", "start_line", "end_line", "text", "search_text",
        "tokens", "file_hash", "embed_hash", "date", "mtime_ns", "model", "vector")}
    new = 0
    for item in pending:
        seen: Counter[str] = Counter()
        directory = _dir_of(item.path)
        depth = 0 if directory == "." else directory.count("/") + 1
        for header, chunk in zip(item.headers, item.chunks):
            text = f"{header}\n{chunk.text}"
            h = _hash(text.encode())
            seen[h] += 1
            new += h in embedded_now
            cols["id"].append(_hash(f"{item.path}\0{h}\0{seen[h]}".encode()))
            cols["path"].append(item.path)
            cols["dir"].append(directory)
            cols["depth"].append(depth)
            cols["heading"].append(" > ".join(chunk.heading))
            cols["start_line"].append(chunk.start_line)
            cols["end_line"].append(chunk.end_line)
            cols["text"].append(chunk.text)
            cols["search_text"].append(text)
            cols["tokens"].append(chunk.tokens)
            cols["file_hash"].append(item.state["file_hash"])
            cols["embed_hash"].append(h)
            cols["date"].append(item.doc.date)
            cols["mtime_ns"].append(item.state["mtime_ns"])
            cols["model"].append(embedder.name)
            cols["vector"].append(vectors[h])
    cols["_new"] = new
    return cols
