"""A sync's files as one stream of chunks, and the store rows of a batch of that stream.

A file is read, parsed and chunked lazily (:func:`file_pieces`): its chunks flow into write
batches of ``MEMSEARCH_BATCH_CHUNKS`` whatever the file's size, so indexing memory is one
file's text plus one batch, never all of a big file's chunks, rows and vectors at once.

A file whose chunks span several batches is recorded in the files table as incomplete
(:func:`incomplete_state`) before its first rows are committed, and with its real hash only
after its last ones: a sync killed in between leaves a row that matches no file, so the next
sync indexes the file again from its first chunk (or removes it, if the file is gone). Its
old rows stay until its last batch (new rows replace equal ones by id, and old vectors stay
reusable), which then deletes the rows of every other version of the file; meanwhile a
search may see old and new chunks of that one file side by side.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Iterable, Iterator

import numpy as np

from ...memory.document import Document, parse_document, text_lines
from ...memory.tokens import get_encoding
from ...memory.tree import parent_dir
from ..embed.embedder import Embedder
from ..search.cjk import keyword_text
from ..storage.schema import TEXT_ONLY, incomplete_state
from .chunker import Chunk, ChunkerConfig, iter_chunks

__all__ = ["FileRun", "Piece", "file_pieces", "cut_batches", "incomplete_state", "batch_rows", "context_header",
           "embedded_texts", "blake", "counters", "BATCH_FILES", "CHECK_GROUP", "RECHUNK_SHRINK"]

#: A write batch closes at ``MEMSEARCH_BATCH_CHUNKS`` chunks or BATCH_FILES files: each batch is
#: one atomic commit and one progress step. Bigger batches let the model sort more texts by length
#: (less padding); smaller ones show progress sooner and bound memory, which is one file's text
#: plus one batch: a file with more chunks than a batch streams over several (:func:`cut_batches`).
BATCH_FILES = 256

#: Chunks whose model-token lengths are checked together before they go on (see RECHUNK_SHRINK).
CHECK_GROUP = 64
#: When a chunk's embedded text is over the model's limit, re-chunk the file with this share of the budget.
RECHUNK_SHRINK = 0.75
#: Attempts at shrinking the budget before the last chunking is kept as it is.
RECHUNK_ATTEMPTS = 6


def blake(data: bytes) -> str:
    """The content hash of files and embedded texts (16-byte BLAKE2b, hex)."""
    return hashlib.blake2b(data, digest_size=16).hexdigest()


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


@dataclass(eq=False)
class FileRun:
    """One pass over one file's chunks. A re-chunked file starts a new run, whose first batch
    replaces whatever rows earlier runs of the same path committed."""

    path: str
    doc: Document
    state: dict  # the files-table row written once the run is complete
    seen: Counter = field(default_factory=Counter)  # embed hash -> occurrences so far (row ids)
    chunks: int = 0
    done: bool = False
    marked: bool = False  # its incomplete row is in the files table (some of its rows are committed)
    restarted: bool = False  # re-chunked: rows of an earlier run may be committed, so replace them


@dataclass(frozen=True)
class Piece:
    """One chunk of a run, ready to embed; ``chunk`` None closes the run."""

    run: FileRun
    chunk: Chunk | None = None
    text: str = ""  # context header + chunk text: what is embedded
    embed_hash: str = ""


def file_pieces(path: str, text: str, state: dict, count, cut, config: ChunkerConfig,
                embedder: Embedder) -> Iterator[Piece]:
    """The pieces of one file: its chunks with their embedded texts, then a closing piece.

    Chunks go out in groups of CHECK_GROUP once their model-token lengths are known to fit; a
    chunk over the model's limit starts the file again with a smaller budget (a new run).
    """
    doc = parse_document(path, text)
    lines = text_lines(text)
    doc = replace(doc, text="")  # the lines are all that is kept of the text
    del text
    budget = config.max_tokens
    for attempt in range(RECHUNK_ATTEMPTS):
        run = FileRun(path, doc, state, restarted=attempt > 0)
        chunks = iter_chunks(doc, count, replace(config, max_tokens=budget), cut, lines=lines)
        restarted = False
        for group in _groups(chunks, CHECK_GROUP):
            texts = [f"{context_header(doc, c)}\n{c.text}" for c in group]
            last = attempt == RECHUNK_ATTEMPTS - 1
            if not last and any(n > embedder.max_tokens for n in embedder.token_lengths(texts)):
                budget = max(16, int(budget * RECHUNK_SHRINK))
                restarted = True
                break
            for chunk, text in zip(group, texts):
                run.chunks += 1
                yield Piece(run, chunk, text, blake(text.encode()))
        if not restarted:
            break
    run.state["chunks"] = run.chunks
    yield Piece(run)


def cut_batches(pieces: Iterable[Piece], batch_chunks: int, batch_files: int = BATCH_FILES) -> Iterator[list[Piece]]:
    """One stream of pieces cut into write batches at file ends (a batch of whole files commits
    them whole), and inside a file only once that one file has filled a batch on its own.

    Marks each run ``done`` as its closing piece goes into a batch. A re-chunked file's new run
    drops the pieces its old run left in the open batch. The last batch may be empty of chunks.
    """
    batch: list[Piece] = []
    chunk_count = files_in_batch = run_count = 0
    for piece in pieces:
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
        file_end = piece.chunk is None and (chunk_count >= batch_chunks or files_in_batch >= batch_files)
        if file_end or run_count >= batch_chunks:
            yield batch
            batch, chunk_count, files_in_batch, run_count = [], 0, 0, 0
    if batch:
        yield batch


def counters(encoding: str | None):
    """``count(text)`` and ``cut(text, budget)`` in tokens of ``encoding`` (the chunker's helpers)."""
    enc = get_encoding(encoding)

    def count(text: str) -> int:
        return len(enc.encode_ordinary(text))

    def cut(text: str, budget: int) -> list[str]:
        ids = enc.encode_ordinary(text)
        return [enc.decode(ids[i : i + budget]) for i in range(0, len(ids), budget)] or [text]

    return count, cut


def _groups(items: Iterable, size: int) -> Iterator[list]:
    group: list = []
    for item in items:
        group.append(item)
        if len(group) == size:
            yield group
            group = []
    if group:
        yield group


_COLUMNS = ("id", "path", "dir", "depth", "heading", "start_line", "end_line", "text", "search_text",
            "tokens", "file_hash", "embed_hash", "date", "mtime_ns", "model", "vector")


def batch_rows(pieces: Iterable[Piece], vectors: dict[str, np.ndarray] | np.ndarray, model: str,
               embedded_now: set[str]) -> tuple[dict, int]:
    """Row columns for the chunks of ``pieces``, and how many use a vector embedded now.

    ``vectors`` one array (zeros): text-only rows, with the embed hash :data:`TEXT_ONLY` (their
    ids are the embedded rows' own, so embedding them later replaces them row for row)."""
    text_only = isinstance(vectors, np.ndarray)
    cols: dict[str, list] = {k: [] for k in _COLUMNS}
    new = 0
    for piece in pieces:
        run, chunk, h = piece.run, piece.chunk, piece.embed_hash
        if chunk is None:
            continue
        directory = parent_dir(run.path)
        run.seen[h] += 1
        new += h in embedded_now
        cols["id"].append(blake(f"{run.path}\0{h}\0{run.seen[h]}".encode()))
        cols["path"].append(run.path)
        cols["dir"].append(directory)
        cols["depth"].append(0 if directory == "." else directory.count("/") + 1)
        cols["heading"].append(" > ".join(chunk.heading))
        cols["start_line"].append(chunk.start_line)
        cols["end_line"].append(chunk.end_line)
        cols["text"].append(chunk.text)
        cols["search_text"].append(keyword_text(piece.text))  # CJK runs as unigrams + bigrams
        cols["tokens"].append(chunk.tokens)
        cols["file_hash"].append(run.state["file_hash"])
        cols["embed_hash"].append(TEXT_ONLY if text_only else h)
        cols["date"].append(run.doc.date)
        cols["mtime_ns"].append(run.state["mtime_ns"])
        cols["model"].append(model)
        cols["vector"].append(vectors if text_only else vectors[h])
    return cols, new


def embedded_texts(path: str, text: str, config: ChunkerConfig, embedder: Embedder,
                   encoding: str | None = None) -> list[str]:
    """The texts a sync embeds for the file ``path`` holding ``text``: context header and chunk text, in order."""
    count, cut = counters(encoding)
    state = {"path": path, "file_hash": "", "mtime_ns": 0, "size": 0, "chunks": 0}
    pieces = list(file_pieces(path, text, state, count, cut, config, embedder))
    final = pieces[-1].run
    return [p.text for p in pieces if p.chunk is not None and p.run is final]
