"""Incremental sync of a memory tree into the store.

* A file whose size and mtime are unchanged is not opened; one whose content hash is
  unchanged is not parsed past its hash.
* A changed file is re-chunked; each chunk's *embedded text* (context header + text) is
  hashed, and a vector already stored under that hash (same model, enforced by the index
  parameters) is reused. Inserting a line at the top of a file re-embeds nothing that did
  not change; the report counts embedded and reused chunks.
* Deleted and renamed files leave the index in the same sync (a rename reuses every vector).
* Files stream through in batches of chunks, however big one file is (:mod:`.batches`): a
  sync killed at any moment leaves what the next sync completes, never half a file taken
  for whole.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import asdict, dataclass, field
from typing import Callable, Iterable, Iterator

import numpy as np
import pyarrow as pa

from ... import settings
from . import batches
from .batches import RECHUNK_SHRINK, Piece, batch_rows, blake, context_header, file_pieces, incomplete_state
from .chunker import ChunkerConfig
from ...memory.document import decode
from ..embed.embedder import Embedder
from ..storage.store import Store, chunk_schema
from ...memory.tokens import get_encoding
from ...errors import MemsearchError
from ...memory import rootfs
from ...memory.tree import MemoryTree, printable

logger = logging.getLogger("memsearch.index")

__all__ = ["IndexReport", "sync_tree", "context_header", "embedded_texts", "Progress", "RECHUNK_SHRINK"]

#: A write batch closes at this many chunks or BATCH_FILES files: each batch is one atomic
#: commit and one progress step. Bigger batches let the model sort more texts by length
#: (less padding); smaller ones show progress sooner and bound memory, which is one file's
#: text plus one batch: a file with more chunks than this streams over several batches
#: (:mod:`.batches`). ``MEMSEARCH_BATCH_CHUNKS`` overrides BATCH_CHUNKS.
BATCH_CHUNKS = settings.SETTINGS["batch_chunks"].default
BATCH_FILES = 256
BATCH_ENV = settings.env_name("batch_chunks")
#: Chunks embedded per model call inside a batch (the model batches further internally).
EMBED_GROUP = 512

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
    #: Markdown whose name is not valid UTF-8 (the tree walk's ``unnamed``, shown with ``\\xNN``): never indexed.
    bad_names: tuple[str, ...] = field(default=(), repr=False)

    @property
    def changed(self) -> bool:
        return bool(self.files_added or self.files_changed or self.files_removed)

    def to_dict(self) -> dict:
        data = asdict(self)
        data["changed_paths"] = list(self.changed_paths)
        data["removed_paths"] = list(self.removed_paths)
        return data


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
    return batches.embedded_texts(path, text, config, embedder, _counters(encoding))


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

    to_index: list[tuple[str, dict, bool]] = []  # path, state, is_new (bytes are read again when indexed)
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
        if st.st_size > max_bytes:  # a file this big is left out, and said
            too_large.append(path)
            logger.warning("%s is %.1f MB, over the %d MB limit (%s): not indexed", path, st.st_size / 1e6,
                           max_bytes // 1_000_000, settings.env_name("max_file_mb"))
            if path in states:
                removed.append(path)
            continue
        try:
            digest = blake(_read(tree, path, max_bytes))
        except (MemsearchError, OSError):
            continue  # unreadable or swapped for a link: the validator reports it; keep what the index had
        state = {"path": path, "file_hash": digest, "mtime_ns": st.st_mtime_ns, "size": st.st_size, "chunks": 0}
        if old is not None and old.file_hash == digest:
            unchanged += 1
            state["chunks"] = old.chunks
            touched.append(state)
            continue
        to_index.append((path, state, old is None))

    total_files = len(to_index)
    counts = {"embedded": 0, "reused": 0, "files": 0}
    skipped: set[str] = set()
    if progress:
        progress("index", 0, total_files, 0)

    def pieces() -> Iterator[Piece]:
        for path, state, _ in to_index:
            try:  # read again: only one file's text is held at a time
                raw = _read(tree, path, max_bytes)
            except (MemsearchError, OSError):
                skipped.add(path)  # gone or swapped since: keep what the index had
                continue
            state["file_hash"] = blake(raw)  # what is indexed now (the file may have changed since)
            stream = file_pieces(path, decode(raw), state, count, cut, config, embedder)
            del raw  # the stream holds the text until it has split it into lines
            yield from stream

    def flush(batch: list[Piece], deletions: list[str]) -> None:
        """Embed what is new in ``batch`` and commit it (and ``deletions``): files the batch
        starts replace their old rows, files it continues add to theirs, and a file still
        unfinished is recorded as incomplete before any of its rows (see :mod:`.batches`)."""
        runs = list(dict.fromkeys(p.run for p in batch))
        embed_texts: dict[str, str] = {}
        for piece in batch:
            if piece.chunk is not None:
                embed_texts.setdefault(piece.embed_hash, piece.text)
        vectors = store.vectors_for(list(embed_texts))
        missing = [h for h in embed_texts if h not in vectors]
        for i in range(0, len(missing), EMBED_GROUP):
            group = missing[i : i + EMBED_GROUP]
            for h, v in zip(group, embedder.embed_documents([embed_texts[h] for h in group])):
                vectors[h] = v
            if progress:
                progress("embed", counts["files"], total_files, counts["embedded"] + min(i + EMBED_GROUP, len(missing)))
        rows, fresh = batch_rows(batch, vectors, embedder.name, embedded_now=set(missing))
        counts["embedded"] += len(missing)
        counts["reused"] += len(rows["id"]) - fresh
        fresh_runs = [run for run in runs if not run.done and not run.marked]
        if fresh_runs:  # recorded as incomplete before any of their rows is committed
            store.mark_incomplete([incomplete_state(run.path) for run in fresh_runs])
        replaced = [run.path for run in runs if not run.marked and (run.done or run.restarted)] + deletions
        appended = [run.path for run in runs if run.path not in replaced]
        completed = [run.path for run in runs if run.done and run.path in appended]
        states = [run.state for run in runs if run.done] + [
            incomplete_state(run.path) for run in runs if not run.done and run.path in replaced]
        dimension = _dimension(store, embedder, vectors)
        if dimension is None:  # nothing to store and no table yet: remember the files only
            store.touch_states(states)
        else:
            store.replace_files(pa.Table.from_pydict(rows, schema=chunk_schema(dimension)), replaced, states,
                                appended=appended, completed=completed)
        for run in runs:
            run.marked = not run.done
        counts["files"] += sum(run.done for run in runs)
        if progress:
            progress("index", counts["files"], total_files, counts["embedded"])

    # One stream of chunks, cut into batches at file ends (a batch of whole files commits them
    # whole), and inside a file only once that one file has filled a batch on its own.
    batch: list[Piece] = []
    chunk_count = files_in_batch = run_count = 0
    deletions = list(removed)
    batch_chunks = settings.get("batch_chunks")
    for piece in pieces():
        if batch and batch[-1].run is not piece.run:
            run_count = 0
            if batch[-1].run.path == piece.run.path:  # re-chunked: the new run replaces the old one
                batch = [p for p in batch if p.run.path != piece.run.path]
                chunk_count = sum(p.chunk is not None for p in batch)
        batch.append(piece)
        if piece.chunk is None:
            piece.run.done = True
            files_in_batch += 1
        else:
            chunk_count += 1
            run_count += 1
        if (piece.chunk is None and (chunk_count >= batch_chunks or files_in_batch >= BATCH_FILES)) or run_count >= batch_chunks:
            flush(batch, deletions)
            batch, chunk_count, files_in_batch, run_count, deletions = [], 0, 0, 0, []
    if batch or deletions:
        flush(batch, deletions)
    embedded, reused = counts["embedded"], counts["reused"]
    store.touch_states(touched)
    if to_index or removed:
        store.ensure_indexes()
    table = store.chunks()
    indexed = [(p, new) for p, _, new in to_index if p not in skipped]
    return IndexReport(
        files_added=sum(1 for _, new in indexed if new),
        files_changed=sum(1 for _, new in indexed if not new),
        files_removed=len(removed),
        files_unchanged=unchanged,
        chunks_embedded=embedded,
        chunks_reused=reused,
        chunks_total=table.count_rows() if table is not None else 0,
        seconds=time.perf_counter() - started,
        changed_paths=tuple(p for p, _ in indexed),
        removed_paths=tuple(removed),
        too_large=tuple(too_large),
        bad_names=tuple(printable(p) for p in tree.unnamed),
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
