"""Chat transcripts in memory: a question about the asker, or a request, leans towards the lines the user spoke.

In a saved chat between a person and an assistant, what the person did, asked for or prefers is in the
person's own turns, short lines among the assistant's long answers that repeat the topic's words many
times; a question naming the topic ("what did I do about my garden", "what do I prefer for storage")
then matches the assistant's paragraphs best. For such a question (:func:`.query.asks_own_words`: the
asker as subject, not "what did you suggest"), :func:`own_words` raises the chunks that hold a line the
transcript marks as the user's (:data:`USER_MARK`), when the ranking holds any. Memory without such marks
(notes, or chats between named people as in LoCoMo) is left as it is. Rows are ranked dicts as in
:mod:`.fusion`, whose docstring holds the measurements (the fourth round).

A request for advice or work (:func:`.query.asks_advice`: "which tomato seeds should I order", "suggest a menu
for the rehearsal dinner") should follow what the person said they want, once, sessions ago: a standing
instruction ("keep every wedding suggestion vegetarian-friendly") or a taste ("I'd always pick heirloom
varieties"). Such a line shares few words with the request, and the assistant's advice on the topic outranks it;
:func:`standing` raises the chunks holding a user's line that gives one (:func:`states_standing`).
"""

from __future__ import annotations

import re
from functools import lru_cache

from ...memory.document import USER_HEADING, USER_MARK
from .order import lift, put_first
from .query import asks_advice, asks_own_words

__all__ = ["OWN_WORDS_GAIN", "STANDING_GAIN", "is_directive", "is_user_turn", "own_words", "standing", "states_standing"]

#: A chunk holding a user-marked line gains OWN_WORDS_GAIN x the best score of the ranking. Chosen on the
#: long-chat corpus's first wording set, tuning users (benchmarks/longchat.py): 0.05 / 0.1 / 0.2 / 0.3 / 0.5
#: gave turn recall@10 0.839 -> 0.860 / 0.881 / 0.910 / 0.915 / 0.915; 0.2 is the smallest gain near
#: the plateau (a lean, not an override: the assistant's answer may still hold what is asked).
OWN_WORDS_GAIN = 0.2


@lru_cache(maxsize=16384)
def _marked(text: str, heading: str) -> bool:
    return USER_MARK.search(text) is not None or USER_HEADING.search(heading) is not None


def is_user_turn(row: dict) -> bool:
    """Whether ``row`` holds a line marked as the user's, or sits under a heading naming the user."""
    return _marked(row.get("text", ""), row.get("heading") or "")


def own_words(ranked: list[dict], query: str, gain: float = OWN_WORDS_GAIN) -> list[dict]:
    """For a question about the asker, rows holding the user's turn gain ``gain`` x the best score."""
    if not ranked or not gain or not asks_own_words(query):
        return ranked
    return lift(ranked, is_user_turn, gain)


#: A chunk holding the user's standing instruction or preference gains STANDING_GAIN x the best score of the
#: ranking when the question asks for advice or work (:func:`.query.asks_advice`), below the first row. Chosen on
#: the tuning users of ``longchat-ask`` (benchmarks/longchat_requests.py), hybrid, all its questions: 0 / 0.2 / 0.3 /
#: 0.5 / 1.0 gave turn recall@10 hits 0.738 / 0.771 / 0.804 / 0.821 / 0.821 and within 6,000 characters 0.733 /
#: 0.783 / 0.767 / 0.833 / 0.800; 0.5 is the smallest gain at the best of both (benchmarks/research/LOG.md,
#: round fifteen).
STANDING_GAIN = 0.5
# a sentence that opens with an imperative or a standing condition, at the start of a line, after a
# speaker's mark ("**User:**", "User:") or after another sentence
_DIRECTIVE = re.compile(
    r"(?:^|[.!?]\s+|:\**\s+)(?:don'?t|do\s+not|always|never|keep|please|remember|make\s+sure|whenever\s+you|"
    r"when\s+you|from\s+now\s+on|stop|avoid)\b", re.IGNORECASE | re.MULTILINE)
# a first-person taste: "I prefer", "I'd rather", "we'd always pick", "I much prefer", "my favourite"
_PREFERS = re.compile(
    r"\b(?:i|we)(?:'d|\s+would)?\s+(?:much\s+|really\s+|always\s+|definitely\s+)?(?:prefer|rather|pick|choose|"
    r"like|love|hate|enjoy)\b|\bmy\s+favou?rites?\b|\bcan'?t\s+stand\b", re.IGNORECASE)


def is_directive(row: dict) -> bool:
    """Whether ``row``'s text gives an instruction: a sentence opening "Don't", "Always", "Whenever you" ..."""
    return bool(_DIRECTIVE.search(row.get("text") or ""))


@lru_cache(maxsize=16384)
def _standing(text: str, heading: str) -> bool:
    if USER_HEADING.search(heading):
        lines = [text]
    else:
        lines = [line for line in text.split("\n") if USER_MARK.match(line)]
    return any(_DIRECTIVE.search(x) or _PREFERS.search(x) for x in lines)


def states_standing(row: dict) -> bool:
    """Whether ``row`` holds a user's turn that gives a standing instruction ("whenever you ...", "don't ...")
    or states a taste ("I prefer", "we'd rather")."""
    return _standing(row.get("text", ""), row.get("heading") or "")


def standing(ranked: list[dict], query: str, gain: float = STANDING_GAIN) -> list[dict]:
    """For a request for advice or work, rows holding the user's standing instruction or preference gain
    ``gain`` x the best score, below the row ranked first, which stays first: the statement is brought in
    beside the best match, not put in its place."""
    if not ranked or not gain or not asks_advice(query):
        return ranked
    out = lift(ranked, states_standing, gain)
    return put_first(out, next(n for n, r in enumerate(out) if r["id"] == ranked[0]["id"]))
