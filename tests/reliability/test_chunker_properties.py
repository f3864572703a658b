"""Property tests of the chunker on generated Markdown (hypothesis), with the real tokenizer.

For any document: every non-blank line is in a chunk, line ranges are valid and ordered, no
chunk exceeds the token bound, heading paths match the headings above, and a fenced block
that fits the bound is never split.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memsearch.engine.ingest.chunker import ChunkerConfig, chunk_document
from memsearch.memory.document import parse_document
from memsearch.memory.tokens import get_encoding

ENC = get_encoding(None)
_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$")
_FENCE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})")


def count(text: str) -> int:
    return len(ENC.encode_ordinary(text))


def cut(text: str, budget: int) -> list[str]:
    ids = ENC.encode_ordinary(text)
    return [ENC.decode(ids[i : i + budget]) for i in range(0, len(ids), budget)] or [text]


WORDS = st.sampled_from("atlas billing stripe heron warehouse decided because the a of to in on 2026 Q3 naïve 東京 données"
                        " -- kafka p95 latency schema, rollback. why? yes! note; id=42 e-mail".split())
SENTENCE = st.lists(WORDS, min_size=1, max_size=14).map(" ".join)
LONG_LINE = st.lists(SENTENCE, min_size=12, max_size=30).map(lambda s: ". ".join(s) + ".")
HEADING = st.tuples(st.integers(1, 4), st.lists(WORDS, min_size=1, max_size=4).map(" ".join)).map(lambda t: f"{'#' * t[0]} {t[1]}")
PARAGRAPH = st.lists(st.one_of(SENTENCE, SENTENCE, SENTENCE, LONG_LINE), min_size=1, max_size=5)
#: A chat turn: a paragraph whose first line is the user's ("**User:** ..."), which may open the next chunk.
TURN = st.tuples(st.sampled_from(["**User:** ", "User: ", "> Human: ", "**Assistant:** "]), PARAGRAPH).map(
    lambda t: [t[0] + t[1][0], *t[1][1:]])
CODE_LINE = st.lists(WORDS, min_size=0, max_size=8).map(lambda w: "    " + " ".join(w) + " = 1" if w else "")
FENCE = st.lists(CODE_LINE, min_size=0, max_size=12).map(lambda body: ["```python", *body, "```"])
TABLE = st.lists(st.tuples(WORDS, WORDS), min_size=1, max_size=8).map(
    lambda rows: ["| key | value |", "|---|---|", *[f"| {a} | {b} |" for a, b in rows]])
LIST = st.lists(SENTENCE.map(lambda s: f"- {s}"), min_size=1, max_size=8)
BLOCK = st.one_of(HEADING.map(lambda h: [h]), PARAGRAPH, PARAGRAPH, TURN, TURN, FENCE, TABLE, LIST, st.just([""]))
DOCUMENT = st.lists(BLOCK, min_size=1, max_size=16).map(lambda blocks: "\n".join(line for b in blocks for line in [*b, ""]))
CONFIG = st.builds(ChunkerConfig, max_tokens=st.sampled_from([32, 64, 128, 256]), overlap_lines=st.integers(0, 3),
                   long_line_factor=st.sampled_from([1, 2]), turn_opens_chunk=st.booleans())


def _chunks(text: str, config: ChunkerConfig):
    doc = parse_document("notes/generated.md", text)
    return doc, chunk_document(doc, count, config, cut)


def _structure(lines: list[str]):
    """Per line: (inside a fence?, heading path after this line), and the fenced blocks (first, last) 0-based."""
    stack: list[tuple[int, str]] = []
    paths, fenced, fences = [], [], []
    in_fence, opened = False, 0
    for i, line in enumerate(lines):
        if _FENCE.match(line):
            if not in_fence:
                opened = i
            else:
                fences.append((opened, i))
            in_fence = not in_fence
            fenced.append(True)
        else:
            match = None if in_fence else _HEADING.match(line)
            if match:
                level = len(match.group(1))
                while stack and stack[-1][0] >= level:
                    stack.pop()
                stack.append((level, match.group(2).strip()))
            fenced.append(in_fence)
        paths.append(tuple(t for _, t in stack))
    return paths, fenced, fences


COMMON = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@pytest.mark.slow
@COMMON
@given(DOCUMENT, CONFIG)
def test_every_nonblank_line_is_in_a_chunk(text, config):
    doc, chunks = _chunks(text, config)
    covered = set()
    for c in chunks:
        covered.update(range(c.start_line, c.end_line + 1))
    for number, line in enumerate(doc.lines, 1):
        if number >= doc.body_start and line.strip():
            assert number in covered, (number, line)


@COMMON
@given(DOCUMENT, CONFIG)
def test_line_ranges_are_valid_and_ordered(text, config):
    doc, chunks = _chunks(text, config)
    total = len(doc.lines)
    for c in chunks:
        assert 1 <= c.start_line <= c.end_line <= total
        assert c.text.strip()
    starts = [c.start_line for c in chunks]
    assert starts == sorted(starts)
    for c in chunks:  # a chunk's text is its lines (or, for a cut line, a piece of that one line)
        body = "\n".join(doc.lines[c.start_line - 1 : c.end_line])
        assert c.text == body or (c.start_line == c.end_line and c.text.strip() in body) or c.text.strip() in body


@COMMON
@given(DOCUMENT, CONFIG)
def test_no_chunk_exceeds_the_token_bound(text, config):
    _, chunks = _chunks(text, config)
    for c in chunks:
        assert c.tokens == count(c.text)
        assert c.tokens <= config.max_tokens * config.long_line_factor, (c.tokens, c.text[:80])


@COMMON
@given(DOCUMENT, CONFIG)
def test_heading_paths_match_the_headings_above(text, config):
    doc, chunks = _chunks(text, config)
    paths, fenced, _ = _structure(doc.lines)
    for c in chunks:
        # The path in force at the chunk's first line of body (a heading run merges into its body).
        first_body = next((i for i in range(c.start_line - 1, c.end_line)
                           if doc.lines[i].strip() and (fenced[i] or not _HEADING.match(doc.lines[i]))), c.end_line - 1)
        assert c.heading == paths[first_body], (c.start_line, c.heading, paths[first_body])


@COMMON
@given(DOCUMENT, CONFIG)
def test_fences_are_not_split_when_they_fit(text, config):
    doc, chunks = _chunks(text, config)
    _, _, fences = _structure(doc.lines)
    for first, last in fences:
        block = "\n".join(doc.lines[first : last + 1])
        if count(block) > config.max_tokens:
            continue
        assert any(c.start_line <= first + 1 and c.end_line >= last + 1 for c in chunks), (first + 1, last + 1)
