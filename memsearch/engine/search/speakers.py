"""Chat transcripts in memory: a question about the asker leans towards the lines the user spoke.

In a saved chat between a person and an assistant, what the person did, asked for or prefers is in the
person's own turns, short lines among the assistant's long answers that repeat the topic's words many
times; a question naming the topic ("what did I do about my garden", "what do I prefer for storage")
then matches the assistant's paragraphs best. For such a question (:func:`.query.asks_own_words`: the
asker as subject, not "what did you suggest"), :func:`own_words` raises the chunks that hold a line the
transcript marks as the user's (:data:`USER_MARK`), when the ranking holds any. Memory without such marks
(notes, or chats between named people as in LoCoMo) is left as it is. Rows are ranked dicts as in
:mod:`.fusion`, whose docstring holds the measurements (the fourth round).
"""

from __future__ import annotations

from functools import lru_cache

from ...memory.document import USER_HEADING, USER_MARK
from .order import rank_order
from .query import asks_own_words

__all__ = ["OWN_WORDS_GAIN", "is_user_turn", "own_words"]

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
    marked = [is_user_turn(r) for r in ranked]
    if not any(marked):
        return ranked
    bonus = gain * max(r["score"] for r in ranked)
    rows = [dict(r, score=r["score"] + bonus) if m else r for r, m in zip(ranked, marked)]
    return rank_order(rows)
