"""Incremental sync of a memory tree into the store: :class:`Sync` plans, streams and flushes.

* A file whose size and mtime are unchanged is not opened; one whose content hash is
  unchanged is not parsed past its hash (:meth:`Sync.plan`).
* A changed file is re-chunked (:meth:`Sync.stream`); each chunk's *embedded text* (context
  header + text) is hashed, and a vector already stored under that hash (same model, enforced
  by the index parameters) is reused. Inserting a line at the top of a file re-embeds nothing
  that did not change; the report counts embedded and reused chunks.
* Deleted and renamed files leave the index in the same sync (a rename reuses every vector).
* Files stream through in batches of chunks, however big one file is (:mod:`.batches`), and
  each batch is embedded (:meth:`Sync.embed`) then written in one commit (:meth:`Sync.write`):
  a sync killed at any moment leaves what the next sync completes, never half a file taken
  for whole.
* On a first build (an index with no file recorded yet), whatever its size, and whenever
  ``MEMSEARCH_TEXT_FIRST_FILES`` or more files are new, their rows are
  written first with no model call (:meth:`Sync.write_text`: zero vectors, embed hash
  :data:`~..storage.schema.TEXT_ONLY`, each file recorded incomplete), so BM25 finds them within
  seconds (hits say ``partial``) while the vector leg leaves them out; the usual pass then
  embeds and replaces them row for row, and records each file complete. The end state is
  the one-pass build's; a sync killed in between leaves incomplete files the next one redoes.
  A first build limited to some paths (``only``: a write indexed before the first full pass)
  writes every new file's text rows too, so that no search of it is silently incomplete: the
  files not embedded yet are found by keyword, their hits ``partial``, until a full sync.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import asdict, dataclass, field, fields
from typing import Callable, Iterable, Iterator

import numpy as np
import pyarrow as pa

from ... import settings
from ...errors import MemsearchError
from ...memory import rootfs
from ...memory.document import decode
from ...memory.tree import MemoryTree, printable
from ..embed.embedder import Embedder
from ..storage.schema import chunk_schema, incomplete_state, is_incomplete
from ..storage.store import Store
from .batches import Piece, batch_rows, blake, counters, cut_batches, file_pieces
from .chunker import ChunkerConfig

logger = logging.getLogger("memsearch.index")

__all__ = ["IndexReport", "Sync", "Plan", "Pending", "Progress", "EMBED_GROUP", "max_file_bytes"]

#: Chunks embedded per model call inside a batch (the model batches further internally).
EMBED_GROUP = 512

#: (phase, files done, files total, chunks embedded); phases: "index", "embed", and "text" once the
#: text-first pass has written every new file's rows.
Progress = Callable[[str, int, int, int], None]


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
    #: Files left to embed by another sync (``defer``): new ones written text only, changed ones untouched.
    deferred: int = 0

    @property
    def changed(self) -> bool:
        return bool(self.files_added or self.files_changed or self.files_removed)

    def to_dict(self) -> dict:
        data = asdict(self)
        data["changed_paths"] = list(self.changed_paths)
        data["removed_paths"] = list(self.removed_paths)
        return data

    @classmethod
    def from_dict(cls, data: dict) -> "IndexReport":
        """The report :meth:`to_dict` gave (keys it does not know are left out)."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in data.items() if k in names})


@dataclass(frozen=True)
class Pending:
    """A file to index: its path, the files-table row it will get, whether it is new (no files-table row), and
    whether a sync left it unfinished (its row :func:`~memsearch.engine.storage.schema.incomplete_state`'s: the
    text-first pass wrote it text only, or a sync stopped inside it)."""

    path: str
    state: dict  # its file_hash is set again when the file is read for indexing
    new: bool
    unfinished: bool = False

    @property
    def added(self) -> bool:
        """Whether the report counts it added: no whole version of it was in the index before this sync."""
        return self.new or self.unfinished


@dataclass(frozen=True)
class Plan:
    """What a sync has to do, decided from sizes, mtimes and content hashes alone."""

    to_index: tuple[Pending, ...] = ()
    removed: tuple[str, ...] = ()
    touched: tuple[dict, ...] = ()  # files-table rows of files whose content did not change
    unchanged: int = 0
    too_large: tuple[str, ...] = ()
    first: bool = False  # no file recorded yet: a first build


def max_file_bytes() -> int:
    """The size limit of a file a sync indexes (``max_file_mb``), in bytes: a file over it is left out, and said."""
    return settings.get("max_file_mb") * 1_000_000


class Sync:
    """One sync of ``tree`` into ``store``: :meth:`plan`, then :meth:`stream` the changed files'
    chunks into batches, each :meth:`flush`\\ ed (:meth:`embed`, then :meth:`write`); :meth:`run`
    does all three and reports."""

    def __init__(self, tree: MemoryTree, store: Store, embedder: Embedder, *, config: ChunkerConfig,
                 encoding: str | None = None, progress: Progress | None = None):
        self.tree, self.store, self.embedder = tree, store, embedder
        self.config = config
        self.count, self.cut = counters(encoding)
        self.progress = progress
        self.max_bytes = max_file_bytes()
        self.total_files = 0
        self.files_done = self.embedded = self.reused = 0
        self.skipped: set[str] = set()  # files gone or swapped between plan and stream
        self.grown: set[str] = set()  # of them, those grown past the size limit (being written)

    def run(self, files: Iterable[str], only: Iterable[str] | None = None, *, defer: bool = False) -> IndexReport:
        """Bring the store in line with ``files`` (relative paths) under ``tree.root``.

        ``only`` limits the work to those paths (a watcher's changed set); others are untouched.
        ``defer``: on a first build, or when ``MEMSEARCH_TEXT_FIRST_FILES`` or more files need
        embedding, write the new ones' text rows and stop there (the report's ``deferred`` counts
        what is left): a search answered in-process on a cold tree leaves the embedding to the
        daemon it started.
        """
        started = time.perf_counter()
        files = list(files)
        plan = self.plan(files, only)
        self.total_files = len(plan.to_index)
        if self.progress:
            self.progress("index", 0, self.total_files, 0)
        new = [p for p in plan.to_index if p.new]
        text_first = settings.get("text_first_files")
        deferred = bool(defer and text_first and (plan.first or len(plan.to_index) >= text_first))
        if text_first and plan.first and only is not None:  # every new file, not only these: none goes unseen
            scope = {p.path for p in plan.to_index}
            new += [p for p in self.plan(files).to_index if p.new and p.path not in scope]
        texted = self.write_texts(new) if new and text_first and (deferred or plan.first or len(new) >= text_first) \
            else set()
        deletions = list(plan.removed)
        for batch in cut_batches(self.stream(plan) if not deferred else iter(()), settings.get("batch_chunks")):
            self.flush(batch, deletions)
            deletions = []
        deletions += sorted(texted & self.skipped)  # text written, then gone before it was embedded
        if deletions:
            self.flush([], deletions)
        self.store.touch_states(plan.touched)
        if plan.to_index or plan.removed:
            self.store.ensure_indexes()
        indexed = [p for p in plan.to_index if p.path not in self.skipped and (not deferred or p.path in texted)]
        return IndexReport(
            files_added=sum(1 for p in indexed if p.added),
            files_changed=sum(1 for p in indexed if not p.added),
            files_removed=len(plan.removed),
            files_unchanged=plan.unchanged,
            chunks_embedded=self.embedded,
            chunks_reused=self.reused,
            chunks_total=self.store.row_count(),
            seconds=time.perf_counter() - started,
            changed_paths=tuple(p.path for p in indexed),
            removed_paths=plan.removed,
            too_large=plan.too_large + tuple(sorted(self.grown)),
            bad_names=tuple(printable(p) for p in self.tree.unnamed),
            deferred=len(plan.to_index) - len(self.skipped) if deferred else 0,
        )

    def plan(self, files: Iterable[str], only: Iterable[str] | None = None) -> Plan:
        """Which of ``files`` (limited to ``only``) changed, which are gone, which only moved in time."""
        wanted = set(files)
        states = self.store.file_states()
        scope = set(only) if only is not None else None
        candidates = sorted(wanted if scope is None else wanted & scope)
        removed = sorted(p for p in states if p not in wanted and (scope is None or p in scope))
        to_index: list[Pending] = []
        too_large: list[str] = []
        touched: list[dict] = []
        unchanged = 0
        for path in candidates:
            try:
                st = (self.tree.root / path).stat()
            except OSError:
                if path in states:
                    removed.append(path)
                continue
            old = states.get(path)
            if old is not None and old.same_as(st):
                unchanged += 1
                continue
            raw = None
            if st.st_size <= self.max_bytes:
                try:
                    raw = self._read(path)
                except (MemsearchError, OSError):
                    continue  # unreadable or swapped for a link: the validator reports it; keep what the index had
            if raw is None or len(raw) > self.max_bytes:  # a file this big is left out, and said (also one that grew
                too_large.append(path)                    # past the limit since its stat: it is being written)
                self._too_large(path, st.st_size if raw is None else len(raw))
                if path in states:
                    removed.append(path)
                continue
            digest = blake(raw)
            del raw
            state = {"path": path, "file_hash": digest, "mtime_ns": st.st_mtime_ns, "size": st.st_size, "chunks": 0}
            if old is not None and old.file_hash == digest:
                unchanged += 1
                state["chunks"] = old.chunks
                touched.append(state)
                continue
            to_index.append(Pending(path, state, old is None, old is not None and is_incomplete(old.mtime_ns, old.size)))
        return Plan(tuple(to_index), tuple(removed), tuple(touched), unchanged, tuple(too_large), not states)

    def stream(self, plan: Plan) -> Iterator[Piece]:
        """The pieces of every file ``plan`` indexes, one file's text held at a time."""
        for pending in plan.to_index:
            try:  # read again: only one file's text is held at a time
                raw = self._read(pending.path)
            except (MemsearchError, OSError):
                self.skipped.add(pending.path)  # gone or swapped since: keep what the index had
                continue
            if len(raw) > self.max_bytes:  # it grew past the limit since it was planned: left out, said; kept as it was
                if pending.path not in self.grown:
                    self._too_large(pending.path, len(raw))
                self.skipped.add(pending.path)
                self.grown.add(pending.path)
                continue
            pending.state["file_hash"] = blake(raw)  # what is indexed now (the file may have changed since)
            stream = file_pieces(pending.path, decode(raw), pending.state, self.count, self.cut, self.config,
                                 self.embedder)
            del raw  # the stream holds the text until it has split it into lines
            yield from stream

    def write_texts(self, pending: list[Pending]) -> set[str]:
        """The first pass over ``pending`` (new files): their rows, text only, in batches; the paths written."""
        written: set[str] = set()
        for batch in cut_batches(self.stream(Plan(to_index=tuple(pending))), settings.get("batch_chunks")):
            self.write_text(batch)
            written.update(p.run.path for p in batch)
            self.store.ensure_indexes()  # the full-text index exists from the first batch on
        if written:
            self.store.fold_fulltext_tail()
        if self.progress:  # every new file is keyword-searchable now; nothing embedded yet
            self.progress("text", 0, self.total_files, 0)
        return written

    def write_text(self, batch: list[Piece]) -> None:
        """Commit ``batch``'s rows with zero vectors (embedded later), each file recorded as incomplete
        before its rows; a run's first batch replaces the file's rows, later ones add to them."""
        runs = list(dict.fromkeys(p.run for p in batch))
        dimension = self.store.dimension() or self.embedder.dimension
        if not dimension:
            getattr(self.embedder, "load", lambda: None)()
            dimension = self.embedder.dimension
        rows, _ = batch_rows(batch, np.zeros(dimension, np.float32), self.embedder.name, embedded_now=set())
        fresh = [run for run in runs if not run.marked]
        self.store.mark_incomplete([incomplete_state(run.path) for run in fresh])
        replaced, appended = [run.path for run in fresh], [run.path for run in runs if run.marked]
        self.store.replace_files(pa.Table.from_pydict(rows, schema=chunk_schema(dimension)), replaced,
                                 [incomplete_state(path) for path in replaced + appended], appended=appended)
        for run in runs:
            run.marked = True

    def flush(self, batch: list[Piece], deletions: list[str]) -> None:
        """Embed what is new in ``batch``, then commit it (and ``deletions``)."""
        vectors, embedded_now = self.embed(batch)
        self.write(batch, vectors, embedded_now, deletions)

    def embed(self, batch: list[Piece]) -> tuple[dict[str, np.ndarray], set[str]]:
        """Vectors for ``batch``'s chunks by embed hash, stored ones reused; and the hashes embedded now."""
        texts: dict[str, str] = {}
        for piece in batch:
            if piece.chunk is not None:
                texts.setdefault(piece.embed_hash, piece.text)
        vectors = self.store.vectors_for(list(texts))
        missing = [h for h in texts if h not in vectors]
        for i in range(0, len(missing), EMBED_GROUP):
            group = missing[i : i + EMBED_GROUP]
            for h, v in zip(group, self.embedder.embed_documents([texts[h] for h in group])):
                vectors[h] = v
            if self.progress:
                done = self.embedded + min(i + EMBED_GROUP, len(missing))
                self.progress("embed", self.files_done, self.total_files, done)
        return vectors, set(missing)

    def write(self, batch: list[Piece], vectors: dict[str, np.ndarray], embedded_now: set[str],
              deletions: list[str]) -> None:
        """Commit ``batch`` (and ``deletions``) in one write: files the batch starts replace their
        old rows, files it continues add to theirs, and a file still unfinished is recorded as
        incomplete before any of its rows (see :mod:`.batches`)."""
        runs = list(dict.fromkeys(p.run for p in batch))
        rows, fresh = batch_rows(batch, vectors, self.embedder.name, embedded_now=embedded_now)
        self.embedded += len(embedded_now)
        self.reused += len(rows["id"]) - fresh
        fresh_runs = [run for run in runs if not run.done and not run.marked]
        if fresh_runs:  # recorded as incomplete before any of their rows is committed
            self.store.mark_incomplete([incomplete_state(run.path) for run in fresh_runs])
        replaced = [run.path for run in runs if not run.marked and (run.done or run.restarted)] + deletions
        appended = [run.path for run in runs if run.path not in replaced]
        completed = [run.path for run in runs if run.done and run.path in appended]
        states = [run.state for run in runs if run.done] + [
            incomplete_state(run.path) for run in runs if not run.done and run.path in replaced]
        dimension = self.store.dimension() or (len(next(iter(vectors.values()))) if vectors else None) \
            or self.embedder.dimension or None
        if dimension is None:  # nothing to store and no table yet: remember the files only
            self.store.touch_states(states)
        else:
            self.store.replace_files(pa.Table.from_pydict(rows, schema=chunk_schema(dimension)), replaced, states,
                                     appended=appended, completed=completed)
        for run in runs:
            run.marked = not run.done
        self.files_done += sum(run.done for run in runs)
        if self.progress:
            self.progress("index", self.files_done, self.total_files, self.embedded)

    def _too_large(self, path: str, size: int) -> None:
        logger.warning("%s is %.1f MB, over the %d MB limit (%s): not indexed", path, size / 1e6,
                       self.max_bytes // 1_000_000, settings.env_name("max_file_mb"))

    def _read(self, path: str) -> bytes:
        """A file's bytes through a descriptor opened inside the root (never a second lookup by name); at most one
        byte past the size limit, so that a file grown past it since its stat is seen to be (the callers skip it)."""
        root_fd = rootfs.open_root(self.tree.root)
        try:
            with rootfs.walk(root_fd, str(self.tree.root), path.split("/"), path) as opened:
                return rootfs.read_fd(opened.fd, self.max_bytes + 1)
        finally:
            os.close(root_fd)
