"""Markdown-aware, token-bounded chunking with exact 1-based line ranges.

A file is cut at headings first; each section keeps its heading path ("Atlas > Decisions").
A section that does not fit ``max_tokens`` is packed from its blocks (paragraphs, fenced
code, tables, list runs); a block that does not fit is cut at lines, a line that does not fit
at sentences, and a sentence that does not fit at token boundaries. Fences and tables are
never cut when they fit. Where a section must be cut, the next piece repeats the last
``overlap_lines`` lines of the previous one (when they are small), so a fact on the
boundary is whole in at least one chunk. A section written in long lines (paragraphs or whole chat
turns a line) is packed at ``long_line_factor`` x the budget, so a paragraph stays whole; a line too
long even for that is cut into pieces of the usual budget. In a saved chat a user's turn opens a chunk (with
the answer after it) rather than closing one. Front matter is metadata and never chunk text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator

from ...memory.document import FENCE as _FENCE
from ...memory.document import HEADING as _HEADING
from ...memory.document import USER_MARK, Document, text_lines

__all__ = ["ChunkerConfig", "Chunk", "chunk_document", "iter_chunks", "TURN_OPENS_CHUNK"]

_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+")

#: Default chunk size in tiktoken tokens. Measured on LoCoMo with 96, 128, 160 and 200
#: (benchmarks/README.md): 128 gave the best turn recall at equal file recall; small enough
#: that a hit points at a few lines, large enough to carry context.
DEFAULT_MAX_TOKENS = 128
#: Lines repeated at the start of the next piece when a section is cut (at most
#: OVERLAP_MAX_SHARE of the budget), so a fact on a boundary is whole in one chunk.
DEFAULT_OVERLAP_LINES = 2
#: Overlap lines are repeated only while they stay under this share of ``max_tokens``.
OVERLAP_MAX_SHARE = 0.25
#: No token of a tiktoken encoding spans more characters than this (cl100k_base's longest is
#: 128 bytes), so a text over ``max_tokens * MAX_TOKEN_CHARS`` characters cannot fit and is not
#: counted whole: a section of a 50 MB file is never encoded in one piece.
MAX_TOKEN_CHARS = 1024
#: Prose runs in long lines (a paragraph a line, a chat turn a line): a section whose non-blank lines
#: average at least LONG_LINE_CHARS characters is packed with ``long_line_factor`` x ``max_tokens``, so
#: a paragraph (about 130-200 tokens) stays whole in one chunk with the turn or paragraph before it
#: instead of being cut at sentences (a line too long even for that is cut at ``max_tokens``: longer
#: pieces only dilute the sentence that answers). Chat turns of a sentence or two (LoCoMo's average
#: about 120 characters) and notes stay at ``max_tokens``. Measured: benchmarks/research/LOG.md.
LONG_LINE_CHARS = 300
DEFAULT_LONG_LINE_FACTOR = 2
#: In a saved chat a user's turn belongs with the answer after it, not with the text before it: when a
#: section is packed and the chunk being closed ends on a paragraph that opens a user's turn
#: (:data:`~memsearch.memory.document.USER_MARK`), that paragraph opens the next chunk instead, provided it
#: fits there with the paragraph that follows. Greedy packing had closed chunks on the user's line, which then
#: sat with the end of the assistant's previous answer (another topic), where neither retriever matched it
#: well, while its own answer started the next chunk. No constant to tune; measured in
#: docs/benchmarks.md (long chats: turn recall within 60 lines up on every half; notes and LoCoMo unchanged).
TURN_OPENS_CHUNK = True


@dataclass(frozen=True)
class ChunkerConfig:
    max_tokens: int = DEFAULT_MAX_TOKENS
    overlap_lines: int = DEFAULT_OVERLAP_LINES
    #: Budget multiplier for sections of long lines (:data:`LONG_LINE_CHARS`); 1: every section alike.
    long_line_factor: float = DEFAULT_LONG_LINE_FACTOR
    #: A user's turn in a saved chat opens a chunk rather than closing one (:data:`TURN_OPENS_CHUNK`).
    turn_opens_chunk: bool = TURN_OPENS_CHUNK

    def to_dict(self) -> dict:
        data = {"max_tokens": self.max_tokens, "overlap_lines": self.overlap_lines}
        # an index recorded before the factor existed chunked every section alike: it reads as factor 1
        if self.long_line_factor != 1:
            data["long_line_factor"] = self.long_line_factor
        # ... and one recorded before turns opened chunks let a chunk end on a user's turn: it reads as off
        return data | {"turn_opens_chunk": True} if self.turn_opens_chunk else data

    @classmethod
    def recorded(cls, data: dict) -> "ChunkerConfig":
        """The settings an index's ``index.json`` recorded (one written before ``long_line_factor``: 1, before
        ``turn_opens_chunk``: off), so an index keeps chunking as it was built until it is rebuilt."""
        return cls(**{"long_line_factor": 1, "turn_opens_chunk": False, **data})


def _long_lines(lines: list[str], begin: int, end: int) -> bool:
    """Whether the section's non-blank lines average at least :data:`LONG_LINE_CHARS` characters."""
    total = count = 0
    for line in lines[begin:end]:
        if line.strip():
            total, count = total + len(line), count + 1
    return bool(count) and total >= LONG_LINE_CHARS * count


@dataclass(frozen=True)
class Chunk:
    start_line: int  # 1-based, inclusive
    end_line: int  # 1-based, inclusive
    heading: tuple[str, ...]
    text: str
    tokens: int


@dataclass
class _Block:
    start: int  # index into the file's lines (0-based)
    lines: list[str]
    atomic: bool  # fence or table: cut only when it does not fit


def _blocks(lines: list[str], begin: int, end: int) -> Iterator[_Block]:
    """Split lines[begin:end] into blocks separated by blank lines; fences and tables whole."""
    i = begin
    while i < end:
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        fence = _FENCE.match(line)
        if fence:
            marker = fence.group(1)[0] * 3
            j = i + 1
            while j < end and not lines[j].lstrip().startswith(marker):
                j += 1
            j = min(j + 1, end)
            yield _Block(i, lines[i:j], True)
            i = j
            continue
        if line.lstrip().startswith("|"):
            j = i
            while j < end and lines[j].lstrip().startswith("|"):
                j += 1
            yield _Block(i, lines[i:j], True)
            i = j
            continue
        j = i
        while (j < end and lines[j].strip() and not _FENCE.match(lines[j])
               and not (j > i and lines[j].lstrip().startswith("|"))):
            j += 1
        yield _Block(i, lines[i:j], False)
        i = j


def _sections(lines: list[str], begin: int) -> Iterator[tuple[tuple[str, ...], int, int, tuple]]:
    """Yield (heading path, first line index, end index, the heading stack in force before the
    first line) for each heading section."""
    stack: list[tuple[int, str]] = []
    before: tuple = ()
    start = begin
    path: tuple[str, ...] = ()
    in_fence = False
    for i in range(begin, len(lines)):
        line = lines[i]
        if _FENCE.match(line):
            in_fence = not in_fence
            continue
        match = None if in_fence else _HEADING.match(line)
        if not match:
            continue
        if any(x.strip() for x in lines[start:i]) and not _only_headings(lines[start:i]):
            yield path, start, i, before
            start, before = i, tuple(stack)
        _push(stack, match)
        path = tuple(t for _, t in stack)
    if any(x.strip() for x in lines[start:]):
        yield path, start, len(lines), before


def _push(stack: list[tuple[int, str]], match) -> None:
    """Apply one heading (a :data:`_HEADING` match) to the stack of (level, title)."""
    level = len(match.group(1))
    while stack and stack[-1][0] >= level:
        stack.pop()
    stack.append((level, match.group(2).strip()))


class _RunPaths:
    """Heading paths inside a section's leading run of headings, for a section too long for one
    chunk: a chunk of that run alone carries the path in force at its last line (the path of
    the whole section belongs to headings it does not hold). Scans forward once per section."""

    def __init__(self, lines: list[str], begin: int, before: tuple) -> None:
        self.lines, self.pos, self.stack = lines, begin, list(before)

    def at(self, last: int, heading: tuple[str, ...]) -> tuple[str, ...]:
        if self.pos > last + 1 or not _only_headings(self.lines[self.pos : last + 1]):
            return heading  # the chunk holds body (or the run is behind us): the section's path
        for i in range(self.pos, last + 1):
            if match := _HEADING.match(self.lines[i]):
                _push(self.stack, match)
        self.pos = last + 1
        return tuple(t for _, t in self.stack)


def _only_headings(lines: list[str]) -> bool:
    """A run of headings with no body merges into the section that follows it."""
    return all(not x.strip() or _HEADING.match(x) for x in lines)


def _split_text(text: str, budget: int, count: Callable[[str], int],
                encode_cut: Callable[[str, int], list[str]]) -> list[str]:
    """Cut one over-long line at sentence ends, then at token boundaries."""
    pieces: list[str] = []
    current = ""
    for sentence in _SENTENCE_END.split(text):
        candidate = f"{current} {sentence}" if current else sentence
        if count(candidate) <= budget:
            current = candidate
            continue
        if current:
            pieces.append(current)
        if count(sentence) <= budget:
            current = sentence
        else:
            parts = encode_cut(sentence, budget)
            pieces.extend(parts[:-1])
            current = parts[-1]
    if current:
        pieces.append(current)
    return pieces


def chunk_document(
    doc: Document,
    count: Callable[[str], int],
    config: ChunkerConfig = ChunkerConfig(),
    encode_cut: Callable[[str, int], list[str]] | None = None,
) -> list[Chunk]:
    """Chunk one document. ``count`` gives a text's token count; ``encode_cut`` cuts a text
    into pieces of at most N tokens (defaults to a character-halving fallback)."""
    return list(iter_chunks(doc, count, config, encode_cut))


def iter_chunks(
    doc: Document,
    count: Callable[[str], int],
    config: ChunkerConfig = ChunkerConfig(),
    encode_cut: Callable[[str, int], list[str]] | None = None,
    *,
    lines: list[str] | None = None,
) -> Iterator[Chunk]:
    """The chunks of :func:`chunk_document`, one at a time: a big file's chunks are never all
    held at once (sections, blocks and units are produced lazily too). ``lines``: the
    document's :func:`~memsearch.memory.document.text_lines` when the caller has them (and dropped the text)."""
    cut = encode_cut or _halving_cut(count)
    lines = text_lines(doc.text) if lines is None else lines
    budget = config.max_tokens

    def fits(first: int, end: int, strip: bool = True) -> bool:
        if sum(len(line) + 1 for line in lines[first:end]) > budget * MAX_TOKEN_CHARS:
            return False
        text = "\n".join(lines[first:end])
        return count(text.rstrip() if strip else text) <= budget

    def emit(heading: tuple[str, ...], first: int, last: int, text: str | None = None) -> Chunk | None:
        if text is None:
            while first < last and not lines[first].strip():
                first += 1
        body = "\n".join(lines[first : last + 1]) if text is None else text
        return Chunk(first + 1, last + 1, heading, body, count(body)) if body.strip() else None

    for heading, begin, end, before in _sections(lines, doc.body_start - 1):
        budget = int(config.max_tokens * (config.long_line_factor if _long_lines(lines, begin, end) else 1))
        if fits(begin, end):
            last = end - 1
            while last > begin and not lines[last].strip():
                last -= 1
            chunk = emit(heading, begin, last)
            if chunk is not None:
                yield chunk
            continue
        run = _RunPaths(lines, begin, before)
        units = _units(lines, begin, end, budget, count, cut, fits, config.max_tokens)
        yield from _pack(units, lines, heading, budget, count, config,
                         lambda path, first, last, text=None, run=run: emit(run.at(last, path), first, last, text))


def _units(lines, begin, end, budget, count, cut, fits, piece_budget) -> Iterator[tuple[int, int, str | None]]:
    """Units of an over-long section: whole blocks when they fit, else their lines, else pieces of a
    line of at most ``piece_budget`` (a line that cannot stay whole gains nothing from long pieces, which
    only dilute the sentence that answers), as (first index, last index, text override)."""
    for block in _blocks(lines, begin, end):
        block_last = block.start + len(block.lines) - 1
        if fits(block.start, block_last + 1, strip=False):
            yield block.start, block_last, None
            continue
        for offset, line in enumerate(block.lines):
            idx = block.start + offset
            if not line.strip():
                continue
            if count(line) <= budget:
                yield idx, idx, None
            else:
                yield from ((idx, idx, piece) for piece in _split_text(line, piece_budget, count, cut))


def _pack(units: Iterable, lines, heading, budget, count, config, emit) -> Iterator[Chunk]:
    """Greedily pack units into chunks under ``budget``; overlap by whole lines when cut."""
    current: list[tuple[int, int, str | None]] = []

    def text_of(group) -> str:
        if len(group) == 1 and group[0][2] is not None:
            return group[0][2]
        return "\n".join(lines[group[0][0] : group[-1][1] + 1])

    def flush() -> list[Chunk]:
        if current:
            override = text_of(current) if current[0][2] is not None else None
            chunk = emit(heading, current[0][0], current[-1][1], override)
            return [chunk] if chunk is not None else []
        return []

    for unit in units:
        if unit[2] is not None:  # a piece of a cut line: a chunk of its own
            yield from flush()
            current = [unit]
            yield from flush()
            current = []
            continue
        candidate = current + [unit]
        if current and count(text_of(candidate)) > budget:
            turn = current[-1]
            if (config.turn_opens_chunk and len(current) > 1 and turn[2] is None and USER_MARK.match(lines[turn[0]])
                    and count(text_of([turn, unit])) <= budget):
                current.pop()  # the user's turn goes with the answer that follows it, not the text before it
                yield from flush()
                current = [turn, unit]
                continue
            yield from flush()
            tail = _overlap(current, lines, budget, count, config)
            current = tail + [unit] if tail and count(text_of(tail + [unit])) <= budget else [unit]
        else:
            current = candidate
    yield from flush()


def _overlap(group, lines, budget, count, config) -> list[tuple[int, int, None]]:
    """The last ``overlap_lines`` lines of a cut piece, if they are small enough to repeat."""
    if config.overlap_lines <= 0 or group[-1][2] is not None:
        return []
    last = group[-1][1]
    first = max(group[0][0], last - config.overlap_lines + 1)
    opens_block = lines[group[-1][0]].lstrip().startswith(("```", "~~~", "|"))
    if first > group[-1][0] and group[-1][0] != group[-1][1] and opens_block:
        return []  # never start a chunk in the middle of a fence or table
    while first <= last:  # drop lines from the front until the overlap is small enough
        text = "\n".join(lines[first : last + 1])
        if text.strip() and count(text) <= budget * OVERLAP_MAX_SHARE:
            return [(first, last, None)]
        first += 1
    return []


def _halving_cut(count: Callable[[str], int]) -> Callable[[str, int], list[str]]:
    def cut(text: str, budget: int) -> list[str]:
        if count(text) <= budget or len(text) < 2:
            return [text]
        mid = len(text) // 2
        space = text.rfind(" ", 0, mid)
        mid = space if space > 0 else mid
        return cut(text[:mid], budget) + cut(text[mid:].lstrip(), budget)

    return cut
