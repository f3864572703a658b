"""The generated development corpora: deterministic, built as described, every question answerable by one line."""

from __future__ import annotations

import pytest

from benchmarks import agentmem, codeagent, longchat, longchat_hard, quality
from benchmarks.longchat_topics import TOPICS
from memsearch.memory.editor import index_text
from memsearch.memory.validator import validate


@pytest.mark.slow  # about a hundred memory-tool writes, each indexed (hashing embedder)
def test_agentmem_is_written_through_the_memory_tool(tmp_path):
    corpus = quality.agentmem_corpus(tmp_path / "a")
    root = corpus.trees[""]
    assert corpus.stats["notes"] == 70 and corpus.stats["memory_md_hand_written"] == 6
    assert corpus.stats["memory_md_stubs"] == 21 and len(corpus.questions) == 83
    assert (root / "clients/acme/MEMORY.md").read_text() == index_text("clients/acme")  # left as generated
    assert "plans.md has the schedule" in (root / "projects/atlas/MEMORY.md").read_text()
    assert "Jonas Berg replaced" in (root / "clients/acme/contacts.md").read_text()  # appended later
    assert validate(root).valid
    assert {q.split for q in corpus.questions} == {"tune", "test"}
    assert {q.category for q in corpus.questions} == {"fact", "paraphrase", "latest", "folder", "index"}
    agentmem.build(tmp_path / "b")  # the same tree again, byte for byte
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.md"))
    assert files == sorted(p.relative_to(tmp_path / "b").as_posix() for p in (tmp_path / "b").rglob("*.md"))
    assert all((root / f).read_bytes() == (tmp_path / "b" / f).read_bytes() for f in files)


def test_longchat_is_deterministic_with_long_assistant_turns(tmp_path):
    trees, planted, stats = longchat.build(tmp_path / "a")
    assert stats["questions"] == len(planted) == 192 and len(trees) == longchat.USERS
    _, again, _ = longchat.build(tmp_path / "b")
    assert again == planted
    for p in planted:
        for path, line in p.items:
            text = (trees[p.tree] / path).read_text().split("\n")[line - 1]
            assert text.strip(), (p.qid, path, line)
    fact = next(p for p in planted if p.category == "fact")
    path, line = fact.items[0]
    lines = (trees[fact.tree] / path).read_text().split("\n")
    assert not lines[line - 1].startswith("**")  # buried in the answer, never its first paragraph
    assert {p.split for p in planted} == {"tune", "test"}


def test_longchat_held_out_wordings_ask_for_the_same_evidence_in_other_words(tmp_path):
    from benchmarks.longchat_wordings import alternatives

    _, planted, _ = longchat.build(tmp_path / "a")
    alt = alternatives(planted)
    first = {p.qid: p for p in planted}
    counts = {c: sum(p.category == c for p in alt) for c in ("summary", "order", "instruction", "preference", "fact")}
    assert counts == {c: sum(p.category == c for p in planted) for c in counts}  # every such question, once
    assert len({p.query for p in alt if p.category == "summary"}) > 6  # not one template
    for p in alt:
        original = first[p.qid.removesuffix("-alt")]
        assert (p.items, p.category, p.tree, p.split) == (original.items, original.category, original.tree,
                                                          original.split)
        assert p.query != original.query
        assert not any(w in p.query.lower() for w in ("summarise", "across our chats", "in which order", "did you"))
    corpus = quality.load_corpus("longchat-alt", tmp_path / "b")
    assert corpus.name == "longchat-alt" and len(corpus.questions) == len(alt)


def test_longchat_requests_ask_for_the_same_evidence_as_a_live_chat_asks(tmp_path):
    from benchmarks.longchat_requests import CATEGORIES, requests

    _, planted, _ = longchat_hard.build(tmp_path / "a")
    asked = requests(planted)
    first = {p.qid: p for p in planted}
    was = {"order-topic": "summary", "instruction-request": "instruction", "preference-request": "preference",
           "fact-request": "fact"}
    for category in CATEGORIES:
        for split in ("tune", "test"):
            assert any(p.category == category and p.split == split for p in asked), (category, split)
    assert len(asked) == sum(p.category in was.values() for p in planted)  # every such question, once
    for p in asked:
        original = first[p.qid.removesuffix("-ask")]
        assert (p.items, p.tree, p.split, was[p.category]) == (original.items, original.tree, original.split,
                                                               original.category)
        assert p.query != original.query
        assert not any(w in p.query.lower() for w in ("summarise", "in which order", "did you", "keep in mind",
                                                      "preferences"))
    for category in ("instruction-request", "preference-request"):  # each half asks in its own words
        tune = {p.query for p in asked if p.category == category and p.split == "tune"}
        assert tune and not tune & {p.query for p in asked if p.category == category and p.split == "test"}
    corpus = quality.load_corpus("longchat-ask", tmp_path / "b")
    assert corpus.name == "longchat-ask" and len(corpus.questions) == len(asked)


def test_longchat_hard_buries_facts_mid_paragraph_in_both_layouts(tmp_path):
    trees, planted, stats = longchat_hard.build(tmp_path / "a")
    assert stats["questions"] == len(planted) == 192 and len(trees) == longchat_hard.USERS
    _, again, _ = longchat_hard.build(tmp_path / "b")
    assert again == planted
    for p in planted:
        for path, line in p.items:
            assert (trees[p.tree] / path).read_text().split("\n")[line - 1].strip(), (p.qid, path, line)
    facts = {longchat_hard.LAYOUTS[int(p.tree[-1]) % 2]: p for p in planted if p.category == "fact"}
    assert set(facts) == {"turn", "paragraph"}
    for layout, p in facts.items():
        path, line = p.items[0]
        text = (trees[p.tree] / path).read_text().split("\n")[line - 1]
        assert text.startswith("**Assistant:** ") == (layout == "turn")  # a whole turn, or a paragraph
        fact = next(f for t in TOPICS for f, question in t.facts if question == p.query)
        assert fact in text and not text.endswith(fact)  # mid-paragraph: sentences before and after it
        assert not text.removeprefix("**Assistant:** ").startswith(fact)
    instruction = next(p for p in planted if p.category == "instruction")
    assert instruction.query.startswith("What did I ask you to keep in mind")
    assert {p.split for p in planted} == {"tune", "test"}


def test_codeagent_is_a_coding_agents_memory_with_every_kind_of_question(tmp_path):
    corpus = quality.load_corpus("codeagent", tmp_path / "a")
    root = corpus.trees[""]
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.md"))
    assert len(files) >= 300 and len(corpus.questions) >= 150 and validate(root).valid
    indexes = [f for f in files if f.endswith("MEMORY.md") and "/" in f]
    assert all((root / f).read_text() != index_text(f.rsplit("/", 1)[0]) for f in indexes)  # written, not stubs
    assert {"MEMORY.md", "user.md", "agent.md"} <= set(files)  # core files
    assert {f.split("/")[1] for f in files if f.startswith("projects/") and f.count("/") > 1} >= {"ledgerly", "beacon"}
    assert {q.category for q in corpus.questions} == set(codeagent.CATEGORIES)
    for split in ("tune", "test"):  # both halves hold every category
        assert {q.category for q in corpus.questions if q.split == split} == set(codeagent.CATEGORIES)
    for q in corpus.questions:
        for item in q.items:
            lines = (root / item.path).read_text().split("\n")
            if item.lines is None:
                assert q.category == "folder" and item.path.endswith("MEMORY.md"), q
            else:
                assert lines[item.lines[0] - 1].strip(), (q.qid, item)
        if q.category in ("summary", "order"):  # spread across dated session logs
            logs = {i.path for i in q.items if "/logs/" in i.path}
            assert len(logs) >= 2, q
    again = tmp_path / "b"
    codeagent.build(again)  # the same tree again, byte for byte
    assert files == sorted(p.relative_to(again).as_posix() for p in again.rglob("*.md"))
    assert all((root / f).read_bytes() == (again / f).read_bytes() for f in files)


def test_codeagent_refuses_evidence_that_is_not_on_exactly_one_line(tmp_path):
    (tmp_path / "a.md").write_text("# A\n\n- the cache is warm\n- the cache is cold\n")
    assert codeagent._line(tmp_path, "a.md", "is cold") == (4, 4)
    assert codeagent._line(tmp_path, "a.md", "") is None  # the whole file (folder questions)
    for answer in ("the cache", "not there"):
        with pytest.raises(ValueError, match="not one"):
            codeagent._line(tmp_path, "a.md", answer)
