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
import logging
import os
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Callable, Iterable

import numpy as np
import pyarrow as pa

from .. import settings
from .chunker import Chunk, ChunkerConfig, chunk_document
from .cjk import keyword_text
from ..memory.document import Document, decode, parse_document
from .embedder import Embedder
from .store import Store, chunk_schema
from ..memory.tokens import get_encoding
from ..errors import MemsearchError
from ..memory import rootfs
from ..memory.tree import MemoryTree, parent_dir

logger = logging.getLogger("memsearch.index")

__all__ = ["IndexReport", "sync_tree", "context_header", "embedded_texts", "Progress"]

#: A write batch closes at this many chunks or BATCH_FILES files: each batch is one atomic
#: commit and one progress step. Bigger batches let the model sort more texts by length
#: (less padding); smaller ones show progress sooner and bound memory.
#: ``MEMSEARCH_BATCH_CHUNKS`` overrides BATCH_CHUNKS (smaller: more, smaller commits).
BATCH_CHUNKS = settings.SETTINGS["batch_chunks"].default
BATCH_FILES = 256
BATCH_ENV = settings.env_name("batch_chunks")
#: Chunks embedded per model call inside a batch (the model batches further internally).
EMBED_GROUP = 512
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
    #: Why the index was rebuilt from scratch during this sync (it was damaged), else None.
    repaired: str | None = None
    #: Files left out for their size (over ``MEMSEARCH_MAX_FILE_MB``).
    too_large: tuple[str, ...] = field(default=(), repr=False)

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


def _counters(encoding: str | None):
    """``count(text)`` and ``cut(text, budget)`` in tokens of ``encoding`` (the chunker's helpers)."""
    enc = get_encoding(encoding)
    count = lambda text: len(enc.encode_ordinary(text))  # noqa: E731

    def cut(text: str, budget: int) -> list[str]:
        ids = enc.encode_ordinary(text)
        return [enc.decode(ids[i : i + budget]) for i in range(0, len(ids), budget)] or [text]

    return count, cut


def embedded_texts(path: str, text: str, config: ChunkerConfig, embedder: Embedder, encoding: str | None = None) -> list[str]:
    """The texts a sync embeds for the file ``path`` holding ``text``: context header and chunk text, in order."""
    count, cut = _counters(encoding)
    _, chunks, headers = _chunk_file(path, text, count, cut, config, embedder)
    return [f"{h}\n{c.text}" for h, c in zip(headers, chunks)]


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
    count, cut = _counters(encoding)
    wanted = set(files)
    states = store.file_states()
    scope = set(only) if only is not None else None
    candidates = sorted(wanted if scope is None else wanted & scope)
    removed = sorted(p for p in states if p not in wanted and (scope is None or p in scope))

    to_index: list[tuple[str, bytes, dict, bool]] = []  # path, raw, state, is_new
    too_large: list[str] = []
    max_bytes = settings.get("max_file_mb") * 1_000_000
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
        if st.st_size > max_bytes:  # bounded memory: such a file is left out, and said
            too_large.append(path)
            logger.warning("%s is %.1f MB, over the %d MB limit (%s): not indexed", path, st.st_size / 1e6,
                           max_bytes // 1_000_000, settings.env_name("max_file_mb"))
            if path in states:
                removed.append(path)
            continue
        try:
            raw = _read(tree, path, max_bytes)
        except (MemsearchError, OSError):
            continue  # unreadable or swapped for a link: the validator reports it; keep what the index had
        digest = _hash(raw)
        state = {"path": path, "file_hash": digest, "mtime_ns": st.st_mtime_ns, "size": st.st_size, "chunks": 0}
        if old is not None and old.file_hash == digest:
            unchanged += 1
            state["chunks"] = old.chunks
            touched.append(state)
            continue
        to_index.append((path, raw, state, old is None))

    total_files = len(to_index)
    counts = {"embedded": 0, "reused": 0, "files": 0}
    if progress:
        progress("index", 0, total_files, 0)

    def flush(pending: list[_Pending], extra_paths: list[str]) -> None:
        """Embed what is new in ``pending`` and commit it (and ``extra_paths`` deletions) at once."""
        embed_texts: dict[str, str] = {}
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
                progress("embed", counts["files"], total_files, counts["embedded"] + min(i + EMBED_GROUP, len(missing)))
        rows, fresh = _rows(pending, vectors, embedder, embedded_now=set(missing))
        counts["embedded"] += len(missing)
        counts["reused"] += len(rows["id"]) - fresh
        paths = [p.path for p in pending] + extra_paths
        dimension = _dimension(store, embedder, vectors)
        if dimension is None:  # nothing to store and no table yet: remember the files only
            store.touch_states([p.state for p in pending])
        else:
            store.replace_files(pa.Table.from_pydict(rows, schema=chunk_schema(dimension)), paths, [p.state for p in pending])
        counts["files"] += len(pending)
        if progress:
            progress("index", counts["files"], total_files, counts["embedded"])

    # Batches of files: chunk, look up reusable vectors, embed the rest, commit atomically.
    pending: list[_Pending] = []
    chunk_count = 0
    deletions = list(removed)
    batch_chunks = settings.get("batch_chunks")
    for path, raw, state, _ in to_index:
        text = decode(raw)
        doc, chunks, headers = _chunk_file(path, text, count, cut, config, embedder)
        state["chunks"] = len(chunks)
        pending.append(_Pending(path, doc, chunks, headers, state))
        chunk_count += len(chunks)
        if chunk_count >= batch_chunks or len(pending) >= BATCH_FILES:
            flush(pending, deletions)
            pending, chunk_count, deletions = [], 0, []
    if pending or deletions:
        flush(pending, deletions)
    embedded, reused = counts["embedded"], counts["reused"]
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
        too_large=tuple(too_large),
    )


def _read(tree: MemoryTree, path: str, limit: int | None = None) -> bytes:
    """A file's bytes through a descriptor opened inside the root (never a second lookup by name)."""
    root_fd = rootfs.open_root(tree.root)
    try:
        with rootfs.walk(root_fd, str(tree.root), path.split("/"), path) as opened:
            return rootfs.read_fd(opened.fd, limit)
    finally:
        os.close(root_fd)


def _dimension(store: Store, embedder: Embedder, vectors: dict[str, np.ndarray]) -> int | None:
    table = store.chunks()
    if table is not None:
        return table.schema.field("vector").type.list_size
    if vectors:
        return len(next(iter(vectors.values())))
    return embedder.dimension or None


def _rows(pending: list[_Pending], vectors: dict[str, np.ndarray], embedder: Embedder, embedded_now: set[str]) -> tuple[dict, int]:
    """Row columns for the chunks of ``pending``, and how many use a vector embedded now."""
    cols: dict[str, list] = {k: [] for k in (
        "id", "path", "dir", "depth", "heading", "start_line", "end_line", "text", "search_text",
        "tokens", "file_hash", "embed_hash", "date", "mtime_ns", "model", "vector")}
    new = 0
    for item in pending:
        seen: Counter[str] = Counter()
        directory = parent_dir(item.path)
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
            cols["search_text"].append(keyword_text(text))  # CJK runs as unigrams + bigrams
            cols["tokens"].append(chunk.tokens)
            cols["file_hash"].append(item.state["file_hash"])
            cols["embed_hash"].append(h)
            cols["date"].append(item.doc.date)
            cols["mtime_ns"].append(item.state["mtime_ns"])
            cols["model"].append(embedder.name)
            cols["vector"].append(vectors[h])
    return cols, new
