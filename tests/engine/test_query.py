"""Query analysis (dates, identifiers) and the fusion steps it drives."""

from __future__ import annotations

import pytest

from memsearch.engine.search.fusion import (
    DATE_BOOST,
    IDENTIFIER_VECTOR_WEIGHT,
    LIST_VECTOR_WEIGHT,
    VECTOR_WEIGHT,
    date_boost,
    hybrid,
    vector_weight,
)
from memsearch.engine.search.query import (
    DateRange,
    has_identifier,
    is_identifier,
    listed_items,
    query_dates,
    spans_memory,
)


def test_query_dates_forms():
    assert query_dates("What did Gina find on 1 February, 2023?") == (DateRange("2023-02-01", "2023-02-01"),)
    assert query_dates("painting shown on October 13, 2023") == (DateRange("2023-10-13", "2023-10-13"),)
    assert query_dates("the decision of 2026-02-10") == (DateRange("2026-02-10", "2026-02-10"),)
    assert query_dates("a workout class started in December 2023") == (DateRange("2023-12-01", "2023-12-31"),)
    assert query_dates("camping in June") == (DateRange(month=6),)
    assert query_dates("beach trips in 2023") == (DateRange("2023-01-01", "2023-12-31"),)
    assert query_dates("you may want the cache") == ()  # "may" the verb is no month
    assert query_dates("what happened yesterday") == ()  # relative dates are not resolved
    assert query_dates("on 31 February, 2023") == (DateRange("2023-02-01", "2023-02-28"),)  # no such day: the month


def test_date_range_contains_with_slack():
    june = DateRange(month=6)
    assert june.contains("2023-06-30") and june.contains("2024-07-05", slack_days=7)
    assert not june.contains("2023-07-20", slack_days=7) and not june.contains(None)
    day = DateRange("2023-10-13", "2023-10-13")
    assert day.contains("2023-10-13") and day.contains("2023-10-19", 7) and not day.contains("2023-10-21", 7)
    assert not day.contains("2023-10-12", 7) and not day.contains("not a date")


def test_identifiers():
    for token in ("atlas-00042", "ERR503", "v2", "retry_budget", "ClickHouse", "config.yaml", "GS-E1043"):
        assert is_identifier(token), token
    for token in ("2023", "3pm", "1st", "U.S.", "e.g.", "Caroline", "and/or", "hello", "iPhone", "eBay", "iOS"):
        assert not is_identifier(token), token
    for token in ("getUser", "macOS", "iPadOS", "xTimeout_ms"):  # a longer lower-case head is code's camelCase
        assert is_identifier(token), token
    assert has_identifier("who owns the atlas-00042 rollout")
    assert not has_identifier("When did Melanie go camping in June?")
    assert vector_weight("who owns the atlas-00042 rollout") == IDENTIFIER_VECTOR_WEIGHT
    assert vector_weight("When did Melanie go camping in June?") == VECTOR_WEIGHT


def _row(i, score, date):
    return {"id": i, "path": f"{i}.md", "start_line": 1, "end_line": 1, "score": score, "date": date,
            "text": "our camping trip in June"}  # shares the queries' words: the keyword evidence is full


def test_date_boost_moves_dated_memory_up():
    ranked = [_row("a", 1.0, "2023-05-01"), _row("b", 0.9, "2023-06-10"), _row("c", 0.5, None)]
    out = date_boost(ranked, query_dates("camping in June"))
    assert [r["id"] for r in out] == ["b", "a", "c"]
    assert out[0]["score"] == 0.9 + DATE_BOOST * 1.0
    assert date_boost(ranked, ()) is ranked


def test_hybrid_applies_weight_and_dates():
    vector = [_row("a", 0.9, "2023-05-01"), _row("b", 0.2, "2023-06-10")]
    keyword = [_row("b", 3.0, "2023-06-10"), _row("a", 2.0, "2023-05-01")]
    assert hybrid("convex", "camping in June", vector, keyword)[0]["id"] == "b"
    assert hybrid("convex", "camping trip", vector, keyword)[0]["id"] == "a"
    assert hybrid("rrf", "camping in June", vector, keyword)[0]["id"] == "b"


BRAND_TREE = {
    "pollen/howto/store-submit.md": "# Store submissions\n\n- eas submit --platform ios --latest sends the newest build to "
                                    "TestFlight and on to review; Tomas presses release.\n- Google Play: eas submit "
                                    "--platform android --track internal first, then promote to production.\n",
    "pollen/bugs/keyboard-covers-notes.md": "# Keyboard covering the notes field\n\n- Symptom: on the iPhone SE the "
                                            "keyboard hid the plant notes field.\n- Fix: KeyboardAvoidingView with "
                                            "behavior padding on iOS only.\n",
    "pollen/bugs/camera-permission.md": "# Camera permission\n\n- On an iPhone the camera prompt showed twice when the "
                                        "scanner opened; fixed by asking once at start.\n",
    "people/lena.md": "# Lena\n\n- Keeps a device lab of 14 phones; the oldest is an iPhone SE (2nd generation).\n",
    "pollen/howto/e2e-tests.md": "# End-to-end tests\n\n- Detox runs the suite with EXPO_PUBLIC_REDUCE_MOTION=1.\n",
    "pollen/decisions/expo.md": "# Expo\n\n- We chose Expo over bare React Native for the over-the-air updates.\n",
    "pollen/howto/local-dev.md": "# Local development\n\n- npx expo start, then press i for the simulator.\n",
}
BRAND_QUESTION = "how do I get a new version of the app in front of iPhone users"


@pytest.mark.slow
def test_a_brand_name_is_a_word_not_code_with_the_real_model(make_tree, tmp_path, real_embedder):
    """"iPhone" in a paraphrase keeps the adaptive weight (codeagent's "in front of iPhone users", LOG.md round
    ten): the how-to that never says "iPhone", the vector leg's first, ranks above the bugs that only mention the
    phone, where the identifier weight handed the ranking to BM25's matches of the one word."""
    from memsearch import MemoryIndex

    assert vector_weight(BRAND_QUESTION) == VECTOR_WEIGHT
    with MemoryIndex(make_tree(BRAND_TREE), db=tmp_path / "db", embedder=real_embedder) as index:
        index.sync()
        assert index.search(BRAND_QUESTION, k=3, mode="vector")[0].path == "pollen/howto/store-submit.md"
        assert "pollen/howto/store-submit.md" not in [h.path for h in index.search(BRAND_QUESTION, k=5, mode="keyword")]
        paths = [h.path for h in index.search(BRAND_QUESTION, k=5)]
        assert paths.index("pollen/howto/store-submit.md") < paths.index("pollen/bugs/keyboard-covers-notes.md")
        assert paths.index("pollen/howto/store-submit.md") < paths.index("pollen/bugs/camera-permission.md")


def test_a_question_that_spans_memory_is_told_from_one_a_passage_answers():
    spanning = ("Can you summarise what I did about my job search across our chats?", "give me a recap of the launch",
                "In which order did these happen: the offer, the notice?", "put these releases in order",
                "how did the move away from wkhtmltopdf go", "everything about the Stripe integration",
                "the story of the UTF-8 crash", "what have I been up to with Spanish so far",
                "what did I ask you to keep in mind about my CV", "which came first, the move or the new job",
                "What are my preferences when it comes to the wedding?",
                "list the order in which I brought up different parts of my garden throughout our conversations",
                "what steps did I take with the garden, from first to last", "trace how the kitchen went over the months",
                "what came up throughout our sessions about my CV")
    single = ("What is Dana's phone number?", "in order to fix the build, which flag did we set",
              "how did you go about the migration", "when did Caroline go to the LGBTQ support group",
              "which warehouse did we choose for Atlas and why", "what did you suggest for the garden",
              "which preference did Sam state for the venue", "what did I have for lunch over the weekend",
              "in order to order in bulk, which supplier do we use", "from the first commit, which file was renamed")
    assert all(spans_memory(q) for q in spanning), [q for q in spanning if not spans_memory(q)]
    assert not any(spans_memory(q) for q in single), [q for q in single if spans_memory(q)]


def test_a_question_that_lists_things_is_told_from_one_that_does_not():
    assert listed_items("In which order did these happen: getting the soil tested, planting out the tomatoes, "
                        "losing tomatoes to blight?") == ["getting the soil tested", "planting out the tomatoes",
                                                          "losing tomatoes to blight"]
    assert listed_items("Which came first: the migration, or the outage?") == ["the migration", "the outage"]
    assert listed_items("Did we pick Python, Go or Rust for the CLI?") == ["Did we pick Python", "Go",
                                                                            "Rust for the CLI"]
    for plain in ("If the deploy fails, what do I do?", "What happened on 9 November, 2022?",
                  "why did we pick ClickHouse", "Note: why did we pick ClickHouse?", "a, b, 1"):
        assert listed_items(plain) is None, plain
    assert listed_items("Did we pick Python, Go or Rust?", colon_only=True) is None
    listed = "In which order did these happen: handing in my notice, getting the offer, signing the contract?"
    assert vector_weight(listed, keyword=[]) == LIST_VECTOR_WEIGHT  # however little of it one keyword row holds


@pytest.mark.slow
def test_a_question_that_lists_events_leans_on_their_words_with_the_real_model(tmp_path, real_embedder):
    """"In which order did these happen: A, B, C?" (longchat-hard's order questions, LOG.md round eleven): its one
    vector blends three events and matches none; at the adaptive weight (0.58 here: no passage holds all three) an
    assistant's paragraph on the topic ranked first, at LIST_VECTOR_WEIGHT the user's line on one of the events."""
    from benchmarks import longchat_hard
    from benchmarks.metrics import Item, Span, covers
    from memsearch import MemoryIndex

    trees, planted, _ = longchat_hard.build(tmp_path / "corpus")
    asked = next(p for p in planted if p.qid == "user-0-25")
    assert listed_items(asked.query) and asked.category == "order"
    with MemoryIndex(trees[asked.tree], db=tmp_path / "db", embedder=real_embedder) as index:
        index.sync()
        first = index.search(asked.query, k=5)[0]
    hit = Span(first.path, first.start_line, first.end_line)
    assert any(covers(hit, Item(path, (line, line))) for path, line in asked.items), (hit, asked.items)
