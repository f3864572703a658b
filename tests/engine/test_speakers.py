"""A question about the asker leans to the user's turns of a chat transcript (engine/search/speakers.py)."""

from __future__ import annotations

import pytest

from memsearch import MemoryIndex
from memsearch.engine.search import fusion
from memsearch.engine.search.query import asks_own_words
from memsearch.engine.search.speakers import OWN_WORDS_GAIN, is_user_turn, own_words


def row(path, score, text, start=1, heading=""):
    return {"id": f"{path}:{start}", "path": path, "dir": "chats", "start_line": start, "end_line": start + 2,
            "text": text, "score": score, "date": None, "heading": heading}


def test_questions_about_the_asker():
    for q in ("What do I prefer for kitchen storage?", "What instructions did I give you about my cover letters?",
              "When did I mention the soil test?", "What have we decided about the band?", "Remind me of my goal",
              "How should you quote prices when I ask?"):
        assert asks_own_words(q), q
    for q in ("How much sulphur did you suggest for the soil?", "What did you say about tapering?",
              "How often did you tell me to water the tomatoes?", "What was your advice on equity?",
              "When did Caroline go to the LGBTQ support group?", "Does James live in the US?", "atlas budget"):
        assert not asks_own_words(q), q


def test_user_turns_are_recognised_by_their_marks_only():
    for text in ("**User:** I prefer open shelving.", "User: hi", "> Human: hello", "Intro\n[me]: my line",
                 "para\n\n**user**: lower case", "- **User:** a list item", "User (2026-01-05 10:32): timed",
                 "**User** [10:32]: timed"):
        assert is_user_turn(row("chats/a.md", 1.0, text)), text
    assert is_user_turn(row("chats/a.md", 1.0, "I prefer open shelving.", heading="Chat 2026-01-05 > User"))
    for text in ("**Assistant:** Open shelving is easy to clean.", "Caroline: I went to the support group.",
                 "The user said hello.", "Users: 40 people", "See also: user manual"):
        assert not is_user_turn(row("chats/a.md", 1.0, text)), text
    assert not is_user_turn(row("chats/a.md", 1.0, "text", heading="Notes > Users"))


def test_the_lean_lifts_user_turns_for_questions_about_the_asker():
    advice = row("chats/a.md", 1.0, "Open shelving and wall cabinets both suit a kitchen; storage is personal.", 5)
    said = row("chats/a.md", 0.85, "**User:** I like seeing the plates, so shelves please.", 1)
    ranked = [advice, said]
    out = own_words(ranked, "What do I prefer for kitchen storage?")
    assert [r["id"] for r in out] == [said["id"], advice["id"]]
    assert out[0]["score"] == pytest.approx(0.85 + OWN_WORDS_GAIN * 1.0)
    assert own_words(ranked, "What did you suggest for kitchen storage?") is ranked  # the assistant's words asked
    far = row("chats/a.md", 0.5, "**User:** unrelated", 9)
    assert own_words([advice, far], "What do I prefer?")[0] is advice  # a lean, not an override
    named = [row("s/1.md", 1.0, "Caroline: shelves"), row("s/1.md", 0.9, "Melanie: cabinets", 4)]
    assert own_words(named, "What do I prefer?") is named  # no user marks in this memory: unchanged


def test_hybrid_applies_the_lean():
    advice = dict(row("chats/a.md", 0.9, "Kitchen storage: shelving or cabinets, both fine for a kitchen.", 5))
    said = dict(row("chats/a.md", 0.7, "**User:** I like seeing the plates, so shelves please.", 1))
    vector = [dict(advice, score=0.62), dict(said, score=0.6), row("chats/b.md", 0.1, "unrelated", 1)]
    ranked = fusion.hybrid("convex", "What do I prefer for kitchen storage?", vector, [])
    assert ranked[0]["id"] == said["id"]
    ranked = fusion.hybrid("convex", "What is good kitchen storage?", vector, [])
    assert ranked[0]["id"] == advice["id"]


ADVICE = ("Choosing pans is personal, and most kitchens end up with a mix of pans. Stainless pans heat evenly, "
          "non-stick pans make eggs easy, and carbon steel pans sit somewhere between. Good pans last for years "
          "if you care for them, so buy fewer pans of better quality rather than a big set of pans.")
HEAT = ("Whatever pans you pick, preheat the pans properly and never overcrowd the pans; most problems people "
        "blame on their pans come from heat. Let the pans warm for two minutes, add the oil, then the food.")


@pytest.mark.slow
def test_a_chat_transcript_end_to_end(make_tree, tmp_path, real_embedder):
    """The real model over a chat with long assistant answers: the user's own line answers "what do I prefer"."""
    root = make_tree({
        "chats/2026-01-05.md": "# Chat 2026-01-05\n\n**User:** Honestly I'd always pick cast iron over anything "
                               f"non-stick.\n\n**Assistant:** {ADVICE}\n\n{HEAT}\n\n{ADVICE}\n",
        "chats/2026-01-12.md": "# Chat 2026-01-12\n\n**User:** Can you suggest a quick weeknight pasta?\n\n"
                               "**Assistant:** Try lemon and garlic spaghetti: twelve minutes, one pot, and a handful "
                               f"of parsley at the end.\n\n{HEAT}\n",
    })
    question = "What kind of pans do I prefer?"
    with MemoryIndex(root, db=tmp_path / "db", embedder=real_embedder) as index:
        index.sync()
        top = index.search(question, k=3)[0]
        assert top.path == "chats/2026-01-05.md" and "cast iron" in top.text
        with pytest.MonkeyPatch.context() as m:  # the same search without the lean: the advice wins
            m.setattr(fusion, "STAGES", tuple(stage for stage in fusion.STAGES if stage is not fusion.own_words))
            assert "cast iron" not in index.search(question, k=3)[0].text
        assert "spaghetti" in index.search("What did you suggest for a weeknight pasta?", k=3)[0].text


def test_requests_for_advice_or_work_are_told_from_questions_about_what_was_said():
    from memsearch.engine.search.query import asks_advice

    for q in ("Which tomato seeds should I order for next season?", "Can you recommend some bean varieties?",
              "Suggest a menu for the rehearsal dinner.", "Write me a taper schedule for the race.",
              "The courgettes have mildew, how do I treat it?", "Here's my cover letter, can you improve it?",
              "What should we serve at the wedding dinner?", "please draft the release notes",
              "What's the best way to store my seeds?", "Any tips for my cover letter?", "I need help with the menu.",
              "I'm trying to plan my training week.", "Could you explain how the subjunctive works?",
              "What do you suggest for the band?", "Tell me how to lower the pH."):
        assert asks_advice(q), q
    for q in ("How much sulphur did you suggest for the soil?", "What did you recommend for the taper?",
              "You told me to water twice a week, right?", "What do I prefer for kitchen storage?",
              "When did Caroline go to the LGBTQ support group?", "which warehouse did we choose for Atlas",
              "what is the plan for the launch", "When did I add the raised beds?", "Give me a recap of the garden.",
              "What is the best restaurant Caroline went to?", "What did you suggest for the band?",
              "add a test for the parser"):  # a coding agent's prompt: not measured, left out
        assert not asks_advice(q), q


def test_standing_statements_are_the_users_own_instructions_and_tastes():
    from memsearch.engine.search.speakers import states_standing

    for text in ("**User:** Hi again. I'd always pick heirloom varieties over F1 hybrids. Should I mulch now?",
                 "**User:** I much prefer running early in the morning before work.",
                 "**User:** We'd rather have a small band than a DJ.",
                 "**User:** Whenever you give me a training plan, put the paces in minutes per kilometre.",
                 "**User:** Don't rewrite my cover letters completely.",
                 "intro\n**User:** Please always give me costs in euros."):
        assert states_standing(row("chats/a.md", 1.0, text)), text
    assert states_standing(row("chats/a.md", 1.0, "I prefer podcasts.", heading="Chat 2026-01-05 > User"))
    for text in ("**Assistant:** Always water at the base; I prefer a soaker hose myself.",  # not the user's
                 "**User:** I planted the tomatoes along the south fence yesterday.",  # an event, not a standing one
                 "Caroline: I prefer the lake.",  # a named speaker, not marked as the user
                 "**Assistant:** sure\nI'd rather you kept notes."):  # the user's mark is not on this line
        assert not states_standing(row("chats/a.md", 1.0, text)), text


def test_a_request_leans_to_the_users_standing_statements():
    from memsearch.engine.search.speakers import STANDING_GAIN, standing

    advice = row("chats/a.md", 1.0, "**Assistant:** Tomato seeds: pick a variety that suits your season.", 5)
    taste = row("chats/b.md", 0.8, "**User:** I'd always pick heirloom varieties over F1 hybrids.", 1)
    event = row("chats/c.md", 0.9, "**User:** I planted twelve tomato seedlings yesterday.", 1)
    ranked = [advice, event, taste]
    out = standing(ranked, "Which tomato seeds should I order for next season?")
    assert [r["id"] for r in out] == [advice["id"], taste["id"], event["id"]]  # beside the best match, not above it
    assert out[1]["score"] == pytest.approx(0.8 + STANDING_GAIN * 1.0) and out[0]["score"] > out[1]["score"]
    top = standing([taste, advice], "Which tomato seeds should I order?")
    assert [r["id"] for r in top] == [taste["id"], advice["id"]]  # already first: stays first
    assert standing(ranked, "Which tomato seeds did you recommend?") is ranked  # recall of what was said
    assert standing(ranked, "When did I plant the tomatoes?") is ranked  # not a request
    far = row("chats/b.md", 0.3, "**User:** I prefer podcasts.", 1)
    assert standing([advice, event, far], "Which seeds should I order?")[1] is event  # a lean, not an override
    named = [row("s/1.md", 1.0, "Caroline: shelves"), row("s/1.md", 0.9, "Melanie: I prefer cabinets", 4)]
    assert standing(named, "What should I buy?") is named  # no user marks in this memory: unchanged


@pytest.mark.slow
def test_a_request_finds_the_taste_the_user_stated_with_the_real_model(tmp_path, real_embedder):
    """In a long chat (the harder long-chat corpus's second user: 18 sessions of many-paragraph advice), the
    user said once "I much prefer running early in the morning before work". Asked "when should I fit my long
    runs into the week?", hybrid ranked that turn 18th under the advice on long runs; with the lean to the
    user's standing statements (speakers.standing) it is among the first three hits, below hybrid's first. A
    question about what the assistant said keeps the advice first."""
    from benchmarks import longchat_hard

    trees, _, _ = longchat_hard.build(tmp_path / "chats")
    with MemoryIndex(trees["user-1"], db=tmp_path / "db", embedder=real_embedder) as index:
        index.sync()
        hits = index.search("When should I fit my long runs into the week?", k=3)
        assert any("I much prefer running early in the morning" in h.text for h in hits), [h.text[:60] for h in hits]
        recalled = index.search("How often did you say I should take a gel on long runs?", k=3)
        assert not any("I much prefer running early" in h.text for h in recalled)
        assert any("every 40 minutes with a gel" in h.text for h in recalled)
