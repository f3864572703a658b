"""The row both retrievers rank first stays first through the leans of hybrid ranking (fusion.agreed_first)."""

from __future__ import annotations

from contextlib import contextmanager

import pytest

from memsearch import MemoryIndex
from memsearch.engine.embed.embedder import HashEmbedder
from memsearch.engine.search import fusion

QUESTION = "How should I prepare for my systems design interview?"
ADVICE = "**Assistant:** How should you prepare for a systems design interview? Sketch the simplest design first, then scale it."
USER = "**User:** I had the systems design interview at Helix. What should I prepare next?"
# the same with the real model, whose vectors rank that user's line first: a longer answer, a closer user's line
MODEL_ADVICE = ("**Assistant:** To prepare for a systems design interview, start by asking about scale and constraints, "
                "sketch the simplest design that works, and only then add caches, queues and sharding.")
MODEL_USER = "**User:** Had my systems design interview today; I think I should prepare better for the next one."


def row(rid, score, text, path="chats/a.md", start=1, date=None):
    return {"id": rid, "path": path, "dir": path.rsplit("/", 1)[0], "start_line": start, "end_line": start + 2,
            "text": text, "score": score, "date": date, "heading": ""}


@contextmanager
def without_agreement():
    """Hybrid ranking without the agreement stage (what the engine did before it)."""
    with pytest.MonkeyPatch.context() as m:
        m.setattr(fusion, "STAGES", tuple(stage for stage in fusion.STAGES if stage is not fusion.agreed_first))
        yield


def test_the_row_both_legs_rank_first_stays_first_over_the_lean_to_the_users_turns():
    # the advice is both legs' first; the user's line, close behind in both, gains the own-words lean (0.2 x best)
    vector = [row("advice", 0.45, ADVICE, start=20), row("user", 0.41, USER, path="chats/b.md"),
              row("other", 0.30, "**Assistant:** Keep a short log.", path="chats/c.md")]
    keyword = [row("advice", 10.8, ADVICE, start=20), row("user", 10.3, USER, path="chats/b.md")]
    ranked = fusion.hybrid("convex", QUESTION, vector, keyword)
    assert [r["id"] for r in ranked[:2]] == ["advice", "user"]
    with without_agreement():  # the lean alone puts the user's line first: what the stage undoes
        assert fusion.hybrid("convex", QUESTION, vector, keyword)[0]["id"] == "user"
    # the legs disagree: the lean decides as before
    split = [row("user", 11.0, USER, path="chats/b.md"), row("advice", 10.8, ADVICE, start=20)]
    assert fusion.hybrid("convex", QUESTION, vector, split)[0]["id"] == "user"


def test_the_stage_lifts_only_the_marked_row_and_keeps_the_rest_in_order():
    ranked = [row("b", 1.2, "b"), row("c", 1.1, "c"), dict(row("a", 1.0, "a"), **{fusion.AGREED: True}), row("d", 0.2, "d")]
    out = fusion.agreed_first(ranked, "anything")
    assert [r["id"] for r in out] == ["a", "b", "c", "d"] and out[0]["score"] > 1.2
    assert fusion.agreed_first(ranked[:2], "anything") == ranked[:2]  # no agreement: unchanged
    assert fusion.agreed_first(out, "anything") is out  # already first: unchanged


def test_the_memorys_shape_still_comes_after_agreement():
    # a folder's MEMORY.md both legs rank first (it names the folder's words) still yields to the note that matches
    index = row("index", 0.6, "# People\n\nAlice: design reviews, Bob: oncall", path="people/MEMORY.md")
    note = row("note", 0.55, "Alice likes design reviews written up a day ahead.", path="people/alice.md")
    ranked = fusion.hybrid("convex", "how does alice like design reviews", [index, note], [dict(index, score=5.0), dict(note, score=4.0)])
    assert ranked[0]["id"] == "note"
    # a "latest" question still gets the newest dated note, though both legs rank the older one first
    old = row("old", 0.6, "The plot gets six hours of sun.", path="chats/2026-03-04.md", date="2026-03-04")
    new = row("new", 0.58, "The plot gets nine hours of sun now.", path="chats/2026-04-08.md", date="2026-04-08")
    far = row("far", 0.1, "Lentil soup.", path="chats/2026-01-02.md")
    ranked = fusion.hybrid("convex", "how many hours of sun does the plot get now", [old, new, far],
                           [dict(old, score=5.0), dict(new, score=4.8)])
    assert ranked[0]["id"] == "new"


def _chat_tree(make_tree, advice=ADVICE, user=USER):
    """The advice (both legs' first) alone in one chat; the user's line on the same interview in another."""
    chats = {"2026-01-31": advice, "2026-01-24": f"{user}\n\n**Assistant:** Rest first, then review it.",
             "2026-02-02": "**User:** What should I cook tonight?\n\n**Assistant:** Lentil soup.",
             "2026-02-09": "**User:** How do I keep slugs off the lettuce?\n\n**Assistant:** Copper tape and beer traps.",
             "2026-02-16": "**User:** Which running shoes suit a marathon?\n\n**Assistant:** Cushioned ones you have run in."}
    return make_tree({f"chats/{day}.md": f"# Chat {day}\n\n{text}\n" for day, text in chats.items()})


def test_an_index_keeps_the_agreed_chunk_first(make_tree, tmp_path):
    root = _chat_tree(make_tree)
    with MemoryIndex(root, db=tmp_path / "db", embedder=HashEmbedder()) as index:
        index.sync()
        assert index.search(QUESTION, k=5, mode="keyword")[0].path == "chats/2026-01-31.md"
        assert index.search(QUESTION, k=5, mode="vector")[0].path == "chats/2026-01-31.md"
        top = index.search(QUESTION, k=3)[0]
        assert top.path == "chats/2026-01-31.md" and "simplest design" in top.text
        with without_agreement():
            assert index.search(QUESTION, k=3)[0].path == "chats/2026-01-24.md"


@pytest.mark.slow
def test_an_index_keeps_the_agreed_chunk_first_with_the_real_model(make_tree, tmp_path, real_embedder):
    root = _chat_tree(make_tree, MODEL_ADVICE, MODEL_USER)
    with MemoryIndex(root, db=tmp_path / "db", embedder=real_embedder) as index:
        index.sync()
        assert index.search(QUESTION, k=5, mode="keyword")[0].path == "chats/2026-01-31.md"
        assert index.search(QUESTION, k=5, mode="vector")[0].path == "chats/2026-01-31.md"
        assert "sharding" in index.search(QUESTION, k=3)[0].text
        with without_agreement():
            assert index.search(QUESTION, k=3)[0].path == "chats/2026-01-24.md"
