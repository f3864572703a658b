"""The topics of the long-chat corpus (benchmarks/longchat.py): what a user does, asks, instructs and prefers.

Each :class:`Topic` holds the user's turns that questions are about (``events`` in the order they
happen, an ``instruction``, a ``preference``, a value stated and later ``update``\\d), two assistant
``facts`` (a paragraph buried in a long answer, with the question that asks for it), the user's
ordinary questions (``asks``) and the topic's words (``words``) that fill the generic assistant
paragraphs (:data:`GENERIC`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Topic", "TOPICS", "GENERIC"]


@dataclass(frozen=True)
class Topic:
    name: str
    label: str  # how a question names the topic: "my vegetable garden"
    events: tuple[tuple[str, str], ...]  # (user turn, short label for order questions), in time order
    instruction: tuple[str, str]  # (user turn, question)
    preference: tuple[str, str]
    update: tuple[str, str, str]  # (first statement, later statement, question): the later one answers
    facts: tuple[tuple[str, str], ...]  # (assistant paragraph, question)
    asks: tuple[str, ...]
    words: tuple[str, ...]


DATA = Path(__file__).parent / "corpora" / "longchat_topics.json"


def _topic(d: dict) -> Topic:
    pairs = lambda rows: tuple(tuple(r) for r in rows)  # noqa: E731
    return Topic(d["name"], d["label"], events=pairs(d["events"]), instruction=tuple(d["instruction"]),
                 preference=tuple(d["preference"]), update=tuple(d["update"]), facts=pairs(d["facts"]),
                 asks=tuple(d["asks"]), words=tuple(d["words"]))


_DATA = json.loads(DATA.read_text(encoding="utf-8"))
TOPICS: tuple[Topic, ...] = tuple(_topic(d) for d in _DATA["topics"])
#: Assistant paragraphs for any topic; {label} names the topic, {a} and {b} are two of its words.
GENERIC: tuple[str, ...] = tuple(_DATA["generic"])
