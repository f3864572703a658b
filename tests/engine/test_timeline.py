"""Mode "timeline": the best passages of each file or dated session touching the topic, oldest first, within k x
TIMELINE_CHARS_PER_HIT characters; for a question about the asker in a chat, the user's own turns."""

from __future__ import annotations

import pytest

from memsearch import MemoryIndex
from memsearch.engine.embed.embedder import HashEmbedder
from memsearch.engine.search.args import MODES
from memsearch.engine.search.query import asks_instructions
from memsearch.engine.search.speakers import is_directive
from memsearch.engine.search.timeline import (
    DIRECTIVE_WEIGHT,
    SPREAD_K,
    TIMELINE_CHARS_PER_HIT,
    TIMELINE_HEAD,
    TIMELINE_ROWS_PER_HIT,
    line_chars,
    session_of,
    spread,
    timeline,
)
from memsearch.errors import InvalidArgument


def row(path, score, text="text", date=None, start=1, heading=""):
    return {"id": f"{path}:{start}", "path": path, "dir": path.rsplit("/", 1)[0], "start_line": start,
            "end_line": start, "text": text, "score": score, "date": date, "heading": heading}


def test_best_rows_within_the_budget_a_few_a_session_oldest_first():
    ranked = [row("chats/2026-03-01.md", 0.9, "a" * 99, "2026-03-01", start=5),
              row("chats/2026-01-10.md", 0.8, "b" * 99, "2026-01-10"),
              row("chats/2026-03-01.md", 0.7, "c" * 99, "2026-03-01", start=2),
              row("chats/2026-03-01.md", 0.65, "d" * 99, "2026-03-01", start=7),
              row("chats/2026-03-01.md", 0.6, "e" * 99, "2026-03-01", start=9),  # a 4th passage: over the cap
              row("notes/ideas.md", 0.5, "f" * 99),  # undated: after the dated ones
              row("chats/2026-02-01.md", 0.4, "g" * 99, "2026-02-01"),
              row("chats/2025-12-01.md", 0.3, "h" * 999, "2025-12-01"),  # over what is left of the budget
              row("chats/2025-11-01.md", 0.2, "i" * 99, "2025-11-01")]  # fits: the budget skips, it does not stop
    out = timeline(ranked, "garden", k=5, chars=700, head=0.0, passages=3)
    assert [(r["path"], r["start_line"]) for r in out] == [
        ("chats/2025-11-01.md", 1), ("chats/2026-01-10.md", 1), ("chats/2026-02-01.md", 1), ("chats/2026-03-01.md", 2),
        ("chats/2026-03-01.md", 5), ("chats/2026-03-01.md", 7), ("notes/ideas.md", 1)]
    assert timeline([], "x", k=5) == []
    # the default budget is k x TIMELINE_CHARS_PER_HIT characters, and k x TIMELINE_ROWS_PER_HIT rows
    many = [row(f"notes/n{i:02}.md", 1 - i / 100, "x" * 99) for i in range(60)]
    assert len(timeline(many, "x", k=1, rows=100)) == TIMELINE_CHARS_PER_HIT // 100
    assert len(timeline(many, "x", k=2, rows=100)) == 2 * TIMELINE_CHARS_PER_HIT // 100
    tiny = [row(f"notes/n{i:02}.md", 1 - i / 100, "x" * 9) for i in range(60)]
    assert len(timeline(tiny, "x", k=1)) == TIMELINE_ROWS_PER_HIT
    assert len(timeline(tiny, "x", k=3)) == 3 * TIMELINE_ROWS_PER_HIT


def test_the_head_of_the_budget_is_hybrids_order_whatever_the_session():
    # one session holds the three best rows (the events an order question names), then ten others
    ranked = [row("chats/2026-05-01.md", 0.9 - i / 100, "e" * 99, "2026-05-01", start=i) for i in range(1, 5)]
    ranked += [row(f"chats/2026-01-{d:02}.md", 0.5 - d / 100, "o" * 99, f"2026-01-{d:02}") for d in range(1, 11)]
    spread = timeline(ranked, "x", k=5, chars=800, head=0.0, passages=1)
    assert [r["start_line"] for r in spread if r["path"] == "chats/2026-05-01.md"] == [1]
    headed = timeline(ranked, "x", k=5, chars=800, head=0.5, passages=1)
    assert [r["start_line"] for r in headed if r["path"] == "chats/2026-05-01.md"] == [1, 2, 3, 4]
    assert len(headed) == 8 and [r["date"] for r in headed] == sorted(r["date"] for r in headed)
    assert 0 < TIMELINE_HEAD < 1


def test_a_line_cut_into_pieces_costs_the_whole_line_once():
    # a long chat turn indexed as three pieces of line 7: each piece is charged the line (300 characters)
    pieces = [dict(row("chats/2026-02-01.md", 0.9 - i / 10, "p" * 99, "2026-02-01", start=7), id=f"piece{i}")
              for i in range(3)]
    assert line_chars(pieces) == {("chats/2026-02-01.md", 7, 7): 300}
    short = [row(f"chats/2026-03-{d:02}.md", 0.5 - d / 100, "s" * 99, f"2026-03-{d:02}") for d in range(1, 6)]
    out = timeline(pieces[:1] + short + pieces[1:], "x", k=5, chars=600, head=0.0, passages=3)
    # 300 for the line, then three short rows; the other pieces of the line come free
    assert len([r for r in out if r["path"] == "chats/2026-02-01.md"]) == 3
    assert len([r for r in out if r["path"] != "chats/2026-02-01.md"]) == 3
    # the best row comes whatever its length
    huge = [row("chats/2026-01-01.md", 0.9, "h" * 9_000, "2026-01-01")] + short
    assert timeline(huge, "x", k=5)[0]["path"] == "chats/2026-01-01.md"


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


def test_a_question_about_standing_instructions_ranks_the_turns_that_give_one_higher():
    said = row("chats/2026-01-05.md", 0.50, "**User:** Hi. Don't rewrite my cover letters, just mark the weak lines.",
               "2026-01-05", 3)
    asked = [row(f"chats/2026-02-{d:02}.md", 0.60 - d / 1000, "**User:** How long should my CV be for the job search?",
                 f"2026-02-{d:02}") for d in range(1, 30)]
    question = "What did I ask you to keep in mind when we talk about my job search?"
    assert asks_instructions(question) and asks_instructions("what should you always do for me")
    assert not asks_instructions("summarise how my job search went")
    # advice asked for, not an instruction given: its answer is the assistant's, so no spread of the user's turns
    assert not asks_instructions("What should I keep in mind when I negotiate equity?")
    assert is_directive(said) and not is_directive(asked[0])
    assert all(is_directive(row("a.md", 1, t)) for t in (
        "User: Always use metric units.", "Fine. Whenever you plan a run, give paces per km.", "please keep it short"))
    # within a budget of 10 rows (k=2), the instruction (0.50 x 1.3 = 0.65) comes before the 29 questions (0.57 .. 0.60)
    out = timeline(asked + [said], question, k=2)
    assert said in out and out[0] is said  # and oldest first
    assert said not in timeline(asked + [said], question, k=2, directive=1.0)
    assert DIRECTIVE_WEIGHT > 1
    # a question that does not ask for instructions ranks by score alone
    assert said not in timeline(asked + [said], "summarise my job search", k=2)


def test_spread_opens_with_hybrids_best_then_the_best_of_other_sessions():
    # one session holds the six best rows (200 characters each); five other sessions one row each, below them
    ranked = [row("chats/2026-05-01.md", 0.9 - i / 100, "a" * 199, "2026-05-01", start=i) for i in range(1, 7)]
    ranked += [row(f"chats/2026-01-{d:02}.md", 0.5 - d / 100, "o" * 199, f"2026-01-{d:02}") for d in range(1, 6)]
    out = spread(ranked, "summarise the season", k=1)  # 1,200 characters, 5 rows: 600 by rank, then the spread
    assert [(r["path"][6:16], r["start_line"]) for r in out] == [
        ("2026-05-01", 1), ("2026-05-01", 2), ("2026-05-01", 3), ("2026-01-01", 1), ("2026-01-02", 1),
        ("2026-05-01", 4), ("2026-05-01", 5), ("2026-05-01", 6), ("2026-01-03", 1), ("2026-01-04", 1),
        ("2026-01-05", 1)]  # the rest of the ranking follows as it was: nothing is dropped
    assert spread([], "x") == [] and SPREAD_K * TIMELINE_CHARS_PER_HIT > 5 * TIMELINE_CHARS_PER_HIT
    # the same rules as a timeline's: the asker's own turns first for a question about the asker
    advice = row("chats/2026-01-05.md", 0.9, "**Assistant:** Mulch keeps the garden beds moist.", "2026-01-05", 3)
    mine = row("chats/2026-01-05.md", 0.4, "**User:** I planted the tomatoes today.", "2026-01-05", 1)
    assert spread([advice, mine], "what did I do about the garden so far") == [mine, advice]


def test_timeline_mode_through_the_index(tmp_path):
    root = tmp_path / "mem"
    (root / "chats").mkdir(parents=True)
    days = ("2026-03-20", "2026-01-12", "2026-02-15")
    for day in days:
        (root / "chats" / f"{day}.md").write_text(
            f"# Chat {day}\n\n**User:** Garden update for {day}: the tomatoes and the compost.\n\n"
            "**Assistant:** Good news for the garden; keep the tomatoes watered. " + "Mulch the beds well. " * 20 + "\n")
    (root / "notes.md").write_text("# Notes\n\nNothing about plants here, only the car and taxes.\n")
    assert "timeline" in MODES
    with MemoryIndex(root, db=tmp_path / "db", embedder=HashEmbedder()) as index:
        index.sync()
        hits = index.search("garden tomatoes", k=5, mode="timeline")
        dated = [h.date for h in hits if h.date]
        assert dated == sorted(dated) and set(dated) == set(days)
        # k sets the budget: k=1 holds 1,200 characters, less than the three sessions' (about 600 each)
        one = index.search("garden tomatoes", k=1, mode="timeline")
        assert 0 < len(one) < len(hits) and sum(len(h.text) for h in one) <= TIMELINE_CHARS_PER_HIT
        assert sum(len(h.text) for h in hits) > TIMELINE_CHARS_PER_HIT
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


@pytest.mark.slow
def test_an_order_question_gets_its_events_within_the_budget_with_the_real_model(tmp_path, real_embedder):
    """Ten sessions about marathon training with long advice turns (each cut into pieces at indexing); two of the
    three events an order question names share a session. The timeline holds all three, oldest first, within the
    default budget (5 x 1,200 characters, each line counted whole), where five sessions of two passages each ran to
    9,400 characters (a reader stopping at 6,000 in date order lost the later events)."""
    root = tmp_path / "mem"
    (root / "chats").mkdir(parents=True)
    events = {"2026-02-03": ["I signed up for the Berlin marathon this morning."],
              "2026-04-14": ["I finished my first 25 km long run on Sunday.",
                             "The physio diagnosed shin splints after that run."]}
    advice = ("For marathon training, keep most runs easy, add one long run a week, and rest when your legs ask for it. "
              "Strength work twice a week protects the knees and shins over the months of training. ") * 12
    days = [f"2026-{m:02}-{d:02}" for m in (1, 2, 3, 4, 5) for d in (3, 14)]
    for day in days:
        said = events.get(day, ["How should I pace the marathon training this week?"])
        turns = "".join(f"**User:** {s}\n\n**Assistant:** {advice}\n\n" for s in said)
        (root / "chats" / f"{day}.md").write_text(f"# Chat {day}\n\n{turns}")
    question = ("In which order did these happen: signing up for Berlin, the first 25 km long run, "
                "the shin splints diagnosis?")
    with MemoryIndex(root, db=tmp_path / "db", embedder=real_embedder) as index:
        index.sync()
        hits = index.search(question, k=5, mode="timeline")
        found = [s for h in hits for s in events.get(h.date, []) if s in h.text]
        assert found == [s for d in sorted(events) for s in events[d]]
        assert [h.date for h in hits] == sorted(h.date for h in hits)
        lines = {(h.path, n) for h in hits for n in range(h.start_line, h.end_line + 1)}
        text = {p: (root / p).read_text().splitlines() for p, _ in lines}
        assert sum(len(text[p][n - 1]) + 1 for p, n in lines) <= 5 * TIMELINE_CHARS_PER_HIT


@pytest.mark.slow
def test_a_summary_question_reaches_over_the_sessions_in_a_ranked_search_with_the_real_model(tmp_path, real_embedder):
    """One session of long advice on the garden outranks three short lines of news in three other sessions: a
    plain hybrid search for "summarise ..." (no mode asked) opens with the advice, then brings the news of each
    session within its first ten hits (timeline.spread), where the advice alone filled them before; a question a
    passage answers keeps hybrid's ranking."""
    root = tmp_path / "mem"
    (root / "chats").mkdir(parents=True)
    news = {"2026-02-01": "The soil test for the vegetable garden came back at pH 7.8.",
            "2026-03-15": "Twelve tomato seedlings went into the vegetable garden along the fence.",
            "2026-05-02": "Blight hit the vegetable garden tomatoes and half of them were pulled."}
    for day, said in news.items():
        (root / "chats" / f"{day}.md").write_text(
            f"# Chat {day}\n\n**User:** {said}\n\n**Assistant:** Noted. Anything else on your mind?\n\n"
            "**User:** Which bus goes to the station on Sundays?\n\n**Assistant:** The 42, every half hour.\n")
    advice = ("For a vegetable garden season, mulch the beds, water the vegetable garden deeply twice a week, rotate "
              "the crops, feed the soil with compost and keep a vegetable garden log of what grows well. ") * 5
    (root / "chats" / "2026-06-01.md").write_text(
        "# Chat 2026-06-01\n\n" + "".join(f"**Assistant:** ({n}) {advice}\n\n" for n in range(14)))
    with MemoryIndex(root, db=tmp_path / "db", embedder=real_embedder) as index:
        index.sync()
        question = "summarise the vegetable garden season"
        hits = index.search(question, k=10)
        assert hits[0].path == "chats/2026-06-01.md"
        told = {h.path for h in hits if any(s in h.text for s in news.values())}
        assert told == {f"chats/{d}.md" for d in news}
        plain = index.search("how often should the vegetable garden be watered", k=10)
        assert {h.path for h in plain} == {"chats/2026-06-01.md"}
