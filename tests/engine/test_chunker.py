"""Chunk boundaries, line ranges, heading paths and token bounds."""

from __future__ import annotations

import pytest

from memsearch.engine.ingest.chunker import LONG_LINE_CHARS, ChunkerConfig, chunk_document
from memsearch.memory.document import parse_document
from memsearch.memory.tokens import count_tokens

DOC = """---
title: Atlas
date: 2026-09-01
tags: [pipeline]
---
# Atlas

Intro paragraph about the pipeline.

## Decisions

- 2026-09-01: chose ClickHouse for the warehouse.
- 2026-09-03: Kafka stays.

```python
def ingest():
    return "## not a heading"
```

| key | value |
|-----|-------|
| a   | 1     |

### Open questions
What about retention?
"""


def chunks_of(text: str, path: str = "projects/atlas.md", **config):
    doc = parse_document(path, text)
    return doc, chunk_document(doc, count_tokens, ChunkerConfig(**config) if config else ChunkerConfig())


def test_line_ranges_are_exact_and_front_matter_is_not_text():
    doc, chunks = chunks_of(DOC)
    lines = DOC.splitlines()
    for c in chunks:
        assert c.text == "\n".join(lines[c.start_line - 1 : c.end_line])
        assert c.tokens == count_tokens(c.text)
    assert all("tags:" not in c.text for c in chunks)
    assert chunks[0].start_line == 6  # the first line after front matter
    assert doc.date == "2026-09-01" and doc.title == "Atlas"


def test_heading_paths_and_fence_headings_ignored():
    _, chunks = chunks_of(DOC)
    assert [c.heading for c in chunks] == [("Atlas",), ("Atlas", "Decisions"), ("Atlas", "Decisions", "Open questions")]
    decisions = chunks[1]
    assert "## not a heading" in decisions.text and "| a   | 1     |" in decisions.text


def test_fence_is_never_cut_when_it_fits():
    body = (
        "# T\n\n"
        + "\n\n".join(f"para {i} " + "word " * 30 for i in range(6))
        + "\n\n```\n"
        + "\n".join(f"code line {i}" for i in range(20))
        + "\n```\n"
    )
    _, chunks = chunks_of(body, max_tokens=120)
    fence = [c for c in chunks if "```" in c.text]
    assert len(fence) == 1 and fence[0].text.count("```") == 2
    assert all(c.tokens <= 120 for c in chunks)


def test_long_sections_split_with_overlap_and_bound():
    body = "# Log\n" + "\n".join(f"entry {i}: " + "alpha beta gamma " * 5 for i in range(60))
    _, chunks = chunks_of(body, max_tokens=80, overlap_lines=1)
    assert len(chunks) > 5
    assert all(c.tokens <= 80 for c in chunks)
    covered = set()
    for c in chunks:
        covered.update(range(c.start_line, c.end_line + 1))
    assert covered == set(range(1, 62))
    # consecutive pieces share exactly the overlap line
    assert chunks[1].start_line == chunks[0].end_line


def test_overlong_line_is_cut_at_sentences():
    sentence = "This is one sentence about the pipeline and its many stages."
    body = "# One\n" + " ".join([sentence] * 40) + "\n"
    for factor in (1, 2):  # a line too long to stay whole is cut at max_tokens, whatever the factor
        _, chunks = chunks_of(body, max_tokens=50, long_line_factor=factor)
        pieces = [c for c in chunks if c.start_line == 2]
        assert len(pieces) > 3
        assert all(c.tokens <= 50 for c in pieces)
        assert all(p.text.endswith(".") for p in pieces)


def test_paragraphs_in_long_lines_stay_whole_and_short_turns_keep_the_budget():
    paragraph = " ".join(["The long run went well today and the pacing felt controlled throughout."] * 8)
    assert len(paragraph) > LONG_LINE_CHARS
    prose = "# Chat\n\n**User:** How did it go?\n\n" + "\n\n".join([paragraph] * 4) + "\n"
    _, chunks = chunks_of(prose, max_tokens=64)
    assert all(c.tokens <= 128 for c in chunks)
    assert any(c.text == paragraph for c in chunks)  # about 105 tokens: whole, not cut at 64
    _, cut = chunks_of(prose, max_tokens=64, long_line_factor=1)
    assert not any(c.text == paragraph for c in cut)
    turns = "# Chat\n\n" + "\n".join(f"Ana: turn {i} about the long run and the pacing." for i in range(60)) + "\n"
    _, short = chunks_of(turns, max_tokens=64)
    assert short == chunks_of(turns, max_tokens=64, long_line_factor=1)[1]  # a sentence a line: unchanged
    assert all(c.tokens <= 64 for c in short)


def test_settings_recorded_before_the_factor_read_as_factor_one():
    old = ChunkerConfig(long_line_factor=1, turn_opens_chunk=False)
    assert ChunkerConfig.recorded({"max_tokens": 128, "overlap_lines": 2}) == old
    assert old.to_dict() == {"max_tokens": 128, "overlap_lines": 2}
    assert ChunkerConfig.recorded(ChunkerConfig().to_dict()) == ChunkerConfig()


def test_date_from_file_name_and_headings_only_file():
    doc, chunks = chunks_of("# Just a title\n", path="notes/2026-08-12.md")
    assert doc.date == "2026-08-12"
    assert len(chunks) == 1 and chunks[0].text == "# Just a title"
    _, empty = chunks_of("")
    assert empty == []


def test_a_long_run_of_headings_keeps_the_path_of_the_lines_it_holds():
    # Found by the property tests: headings only, too long for one chunk. The first chunk used
    # to carry the path of the last heading, which it does not hold.
    text = "# atlas\n\n## plan\n\n### q3 plan for the warehouse\n\n# billing\n\n## stripe webhooks and retries\n\n# heron\n"
    _, chunks = chunks_of(text, max_tokens=16, overlap_lines=0)
    assert len(chunks) > 1
    for c in chunks:
        held = [line.lstrip("# ") for line in c.text.splitlines() if line.startswith("#")]
        assert c.heading[-1] == held[-1], (c.start_line, c.heading, held)
    assert chunks[0].heading == ("billing",) and chunks[-1].heading == ("heron",)


@pytest.mark.parametrize("max_tokens", [30, 60, 160])
def test_examples_chunk_cleanly(max_tokens):
    from tests.conftest import EXAMPLES

    for path in sorted(EXAMPLES.rglob("*.md")):
        text = path.read_text()
        rel = path.relative_to(EXAMPLES).as_posix()
        _, chunks = chunks_of(text, path=rel, max_tokens=max_tokens)
        lines = text.splitlines()
        for c in chunks:
            assert 1 <= c.start_line <= c.end_line <= len(lines)
            assert c.tokens <= max_tokens or c.start_line == c.end_line, (rel, c)


ANSWER = "There is no single right answer here: keep a short log of the beds and check it weekly. " * 2
WEDDING = "A lot of what works for planning the wedding depends on how much time you can give the caterer. " * 2
SUN = "**User:** The neighbours cut down their walnut tree, so the plot gets about nine hours of sun now."


def test_a_users_turn_opens_the_chunk_of_its_answer():
    """Greedy packing closed a chunk on the user's line, after the end of the assistant's answer on another topic,
    and the user's own answer opened the next chunk; a user's turn now opens a chunk, with the answer after it."""
    chat = f"# Chat\n\n**User:** What about plus-ones?\n\n{WEDDING}\n\n{WEDDING}\n\n{SUN}\n\n**Assistant:** {ANSWER}\n"
    lines = chat.splitlines()
    sun, answer = lines.index(SUN) + 1, lines.index(f"**Assistant:** {ANSWER}") + 1
    budget = count_tokens(f"{WEDDING}\n\n{SUN}") + 2  # the wedding paragraph and the user's line fit, the answer not
    _, old = chunks_of(chat, "chats/2026-03-10.md", max_tokens=budget, turn_opens_chunk=False)
    assert any(c.end_line == sun and c.start_line < sun for c in old)  # as before: the turn closed a chunk
    _, chunks = chunks_of(chat, "chats/2026-03-10.md", max_tokens=budget)
    assert ChunkerConfig().turn_opens_chunk
    holding = [c for c in chunks if c.start_line <= sun <= c.end_line]
    assert [(c.start_line, c.end_line) for c in holding] == [(sun, answer)]
    assert all(c.tokens <= budget for c in chunks)
    covered = {n for c in chunks for n in range(c.start_line, c.end_line + 1)}
    assert all(n in covered for n, line in enumerate(lines, 1) if line.strip())  # no line lost


def test_a_users_turn_stays_where_it_is_when_it_cannot_open_the_next_chunk():
    """When the turn and the paragraph after it do not fit together, packing is as before; named speakers (LoCoMo)
    and notes are no user's turn and pack as before."""
    chat = f"# Chat\n\n{WEDDING}\n\n{SUN}\n\n**Assistant:** {ANSWER}{ANSWER}{ANSWER}\n"
    budget = count_tokens(f"{WEDDING}\n\n{SUN}") + 2
    assert chunks_of(chat, max_tokens=budget) == chunks_of(chat, max_tokens=budget, turn_opens_chunk=False)
    named = "# Chat\n\n" + "\n\n".join(f"Caroline: line {i} about the plot and the sun." for i in range(40)) + "\n"
    assert chunks_of(named, max_tokens=48) == chunks_of(named, max_tokens=48, turn_opens_chunk=False)
    assert chunks_of(DOC, max_tokens=24) == chunks_of(DOC, max_tokens=24, turn_opens_chunk=False)


def test_settings_recorded_before_turns_opened_chunks_read_as_off():
    before = {"max_tokens": 128, "overlap_lines": 2, "long_line_factor": 2}
    assert ChunkerConfig.recorded(before) == ChunkerConfig(turn_opens_chunk=False)
    assert ChunkerConfig(turn_opens_chunk=False).to_dict() == before  # an old index still matches its own settings
    assert ChunkerConfig().to_dict() == before | {"turn_opens_chunk": True}


@pytest.mark.slow
def test_a_users_update_is_found_with_its_answer_with_the_real_model(tmp_path, real_embedder):
    """`longchat`'s user 1 tells of a sunnier plot in a line that followed the end of an answer on another topic:
    chunked there, the line ranked below the older statement (LOG.md round twelve); opening the chunk of its own
    answer, it ranks first."""
    from benchmarks import longchat
    from benchmarks.metrics import Item, Span, covers
    from memsearch import MemoryIndex

    trees, planted, _ = longchat.build(tmp_path / "corpus")
    asked = next(p for p in planted if p.qid == "user-1-20")
    assert asked.category == "update" and "sun" in asked.query

    def first(chunker):
        with MemoryIndex(trees[asked.tree], db=tmp_path / str(chunker.turn_opens_chunk), embedder=real_embedder,
                         chunker=chunker) as index:
            index.sync()
            hit = index.search(asked.query, k=5)[0]
        return any(covers(Span(hit.path, hit.start_line, hit.end_line), Item(path, (line, line)))
                   for path, line in asked.items)

    assert first(ChunkerConfig())
    assert not first(ChunkerConfig(turn_opens_chunk=False))  # the chunking before: the older value first
