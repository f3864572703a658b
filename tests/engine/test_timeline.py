"""Mode "timeline": the best passages of each file or dated session touching the topic, oldest first, within k
sessions; for a question about the asker in a chat, the user's own turns."""

from __future__ import annotations

import pytest

from memsearch import MemoryIndex
from memsearch.engine.embed.embedder import HashEmbedder
from memsearch.engine.search.args import MODES
from memsearch.engine.search.timeline import TIMELINE_PASSAGES, session_of, timeline
from memsearch.errors import InvalidArgument


def row(path, score, text="text", date=None, start=1, heading=""):
    return {"id": f"{path}:{start}", "path": path, "dir": path.rsplit("/", 1)[0], "start_line": start,
            "end_line": start, "text": text, "score": score, "date": date, "heading": heading}


def test_one_entry_per_session_oldest_first_within_k():
    ranked = [row("chats/2026-03-01.md", 0.9, date="2026-03-01", start=5),
              row("chats/2026-01-10.md", 0.8, date="2026-01-10"),
              row("chats/2026-03-01.md", 0.7, date="2026-03-01", start=2),
              row("chats/2026-03-01.md", 0.6, date="2026-03-01", start=9),  # a third passage: over the cap
              row("notes/ideas.md", 0.5),  # undated: after the dated ones
              row("chats/2026-02-01.md", 0.4, date="2026-02-01"),
              row("chats/2025-12-01.md", 0.3, date="2025-12-01")]  # the 5th session: beyond k=4
    out = timeline(ranked, "garden", k=4)
    assert [(r["path"], r["start_line"]) for r in out] == [
        ("chats/2026-01-10.md", 1), ("chats/2026-02-01.md", 1), ("chats/2026-03-01.md", 2), ("chats/2026-03-01.md", 5),
        ("notes/ideas.md", 1)]
    assert TIMELINE_PASSAGES == 2
    assert timeline([], "x", k=5) == []


def test_a_heading_that_names_a_day_is_a_session_of_its_own():
    a = row("journal.md", 0.9, heading="Journal > 2026-04-02", start=10)
    b = row("journal.md", 0.8, heading="Journal > 2026-03-01", start=2)
    assert session_of(a) == ("journal.md", "2026-04-02")
    assert [r["start_line"] for r in timeline([a, b], "x", k=5, passages=1)] == [2, 10]


def test_a_question_about_the_asker_gets_the_users_turns():
    advice = row("chats/2026-01-05.md", 0.9, "**Assistant:** Mulch keeps the garden beds moist.", "2026-01-05", 3)
    mine = row("chats/2026-01-05.md", 0.4, "**User:** I planted the tomatoes today.", "2026-01-05", 1)
    later = row("chats/2026-02-05.md", 0.3, "**User:** Blight got into the tomatoes.", "2026-02-05", 1)
    out = timeline([advice, mine, later], "what did I do about my garden", k=5)
    assert [r["text"][:8] for r in out] == ["**User:*", "**User:*"]
    # a question about what the assistant said, or a tree with no user marks, keeps every row
    assert advice in timeline([advice, mine, later], "what did you suggest for the garden", k=5)
    plain = [row("notes/a.md", 0.9, date="2026-01-01"), row("notes/b.md", 0.5)]
    assert timeline(plain, "what did I decide", k=5) == plain


def test_timeline_mode_through_the_index(tmp_path):
    root = tmp_path / "mem"
    (root / "chats").mkdir(parents=True)
    days = ("2026-03-20", "2026-01-12", "2026-02-15")
    for day in days:
        (root / "chats" / f"{day}.md").write_text(
            f"# Chat {day}\n\n**User:** Garden update for {day}: the tomatoes and the compost.\n\n"
            "**Assistant:** Good news for the garden; keep the tomatoes watered.\n")
    (root / "notes.md").write_text("# Notes\n\nNothing about plants here, only the car and taxes.\n")
    assert "timeline" in MODES
    with MemoryIndex(root, db=tmp_path / "db", embedder=HashEmbedder()) as index:
        index.sync()
        hits = index.search("garden tomatoes", k=5, mode="timeline")
        dated = [h.date for h in hits if h.date]
        assert dated == sorted(dated) and set(dated) == set(days)
        two = index.search("garden tomatoes", k=2, mode="timeline")
        assert len(two) <= 2 * TIMELINE_PASSAGES and {h.path for h in two} <= {f"chats/{d}.md" for d in days}
        assert len({h.path for h in two}) == 2  # k counts sessions, each with its passages: none cut
        with pytest.raises(InvalidArgument, match="timeline"):
            index.search("garden", mode="chronological")


@pytest.mark.slow
def test_timeline_of_a_chat_with_the_real_model(tmp_path, real_embedder):
    """Six sessions, three of which bring garden news among other talk: timeline mode returns the news in
    date order, where hybrid mode ranks by score."""
    root = tmp_path / "mem"
    (root / "chats").mkdir(parents=True)
    news = {"2026-02-01": "I had the soil tested, the pH is 7.8.",
            "2026-03-15": "I planted out twelve tomato seedlings along the fence.",
            "2026-05-02": "Blight got into the tomatoes and I pulled half of them."}
    for day in ("2026-01-10", "2026-02-01", "2026-03-15", "2026-04-01", "2026-05-02", "2026-06-01"):
        said = news.get(day, "How do I remember ser versus estar in Spanish?")
        (root / "chats" / f"{day}.md").write_text(
            f"# Chat {day}\n\n**User:** Hi again. {said}\n\n**Assistant:** Your vegetable garden will thank you for "
            "patience: mulch the beds, water the garden deeply twice a week and keep a short garden log.\n")
    with MemoryIndex(root, db=tmp_path / "db", embedder=real_embedder) as index:
        index.sync()
        hits = index.search("summarise what I did about my vegetable garden", k=5, mode="timeline")
        told = [h.path for h in hits if any(s in h.text for s in news.values())]
        assert told == [f"chats/{d}.md" for d in sorted(news)]
        assert [h.date for h in hits] == sorted(h.date for h in hits)
        ranked = [h.date for h in index.search("summarise what I did about my vegetable garden", k=5)]
        assert ranked != sorted(ranked)
