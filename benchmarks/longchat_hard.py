"""The harder long-chat corpus: the topics of :mod:`benchmarks.longchat`, shaped like long real chats.

What makes it harder than ``longchat`` (which stays as it was, reproducible):

* assistant turns of 3-6 paragraphs of about four sentences each (two generic paragraphs of
  :data:`~benchmarks.longchat_topics.GENERIC` joined), 1,200-2,900 characters a turn;
* two layouts, alternating by user so both splits hold both: ``paragraph`` (one paragraph a line,
  blank lines between, as ``longchat``) and ``turn`` (a whole turn on one line, as chats exported
  one message a line); relevance is the line that holds the answer, so in the ``turn`` layout a
  hit costs its whole turn against a character budget;
* a buried fact is a sentence in the middle of a middle paragraph, never a paragraph of its own;
* the user's turns carry chit-chat before the event and a question after it;
* 18 sessions per user with 2-3 ordinary exchanges each besides the planted ones;
* questions that name the topic, not the evidence's words: ``summary`` and ``order`` as in
  ``longchat``, ``instruction`` "What did I ask you to keep in mind when we talk about X?",
  ``preference`` "What are my preferences when it comes to X?" (the others as ``longchat``).

Users 0-2 are the tuning split, 3-5 held out (seed 29, not ``longchat``'s 23).
"""

from __future__ import annotations

import datetime as dt
import random
from pathlib import Path

from benchmarks.longchat import Planted, Shape, Wording, write_users
from benchmarks.longchat_topics import GENERIC, Topic

__all__ = ["USERS", "TUNING_USERS", "SESSIONS", "LAYOUTS", "build"]

USERS = 6
TUNING_USERS = 3
SESSIONS = 18
SEED = 29
#: How a user's chat files are laid out (by user number, alternating).
LAYOUTS = ("turn", "paragraph")

_LEADS = (
    "Hi again.", "Morning! Busy week over here.", "Back again, sorry for the long silence.",
    "Quick one before I forget.", "Okay, so here's where things stand.", "Hey, hope you're well.",
    "Long day, but I wanted to check in.", "So, a small update.",
)
_SUMMARY = (
    "Can you summarise what I did about {label} across our chats?",
    "What have I been up to with {label} so far?",
    "Give me a recap of everything that happened with {label}.",
)
_INSTRUCTION = "What did I ask you to keep in mind when we talk about {label}?"
_PREFERENCE = "What are my preferences when it comes to {label}?"


def _label(topic: Topic) -> str:
    return topic.label.replace("my ", "your ")


def _paragraph(rng: random.Random, topic: Topic, buried: str | None = None) -> str:
    """About four sentences: two generic paragraphs, with ``buried`` between them when given."""
    parts = []
    for template in rng.sample(GENERIC, 2):
        a, b = rng.sample(topic.words, 2)
        parts.append(template.format(label=_label(topic), a=a, b=b))
    if buried:
        parts.insert(1, buried)
    return " ".join(parts)


def _user(rng: random.Random, topic: Topic, kind: str, n: int) -> str:
    if kind == "event":
        said = topic.events[n][0]
    elif kind == "update":
        said = topic.update[n]
    elif kind in ("instruction", "preference"):
        said = getattr(topic, kind)[0]
    else:
        return f"{rng.choice(_LEADS)} {rng.choice(topic.asks)}"
    return f"{rng.choice(_LEADS)} {said} {rng.choice(topic.asks)}"


def _session(rng, day: dt.date, turns, topics, layout: str) -> tuple[list[str], dict]:
    """The session's lines and where each planted turn landed: (kind, topic name, n) -> line number."""
    lines = [f"# Chat {day.isoformat()}", ""]
    where: dict[tuple[str, str, int], int] = {}
    turns = list(turns) + [("filler", rng.choice(topics), 0) for _ in range(rng.randint(2, 3))]
    rng.shuffle(turns)
    for kind, topic, n in turns:
        lines += [f"**User:** {_user(rng, topic, kind, n)}", ""]
        if kind not in ("fact", "filler"):
            where[(kind, topic.name, n)] = len(lines) - 1
        count = rng.randint(3, 6)
        at = rng.randint(1, count - 2) if kind == "fact" else -1  # a middle paragraph, never the first or last
        paragraphs = [_paragraph(rng, topic, topic.facts[n][0] if i == at else None) for i in range(count)]
        paragraphs[0] = "**Assistant:** " + paragraphs[0]
        if layout == "turn":
            lines += [" ".join(paragraphs), ""]
            if kind == "fact":
                where[(kind, topic.name, n)] = len(lines) - 1
            continue
        for i, p in enumerate(paragraphs):
            lines += [p, ""]
            if i == at:
                where[(kind, topic.name, n)] = len(lines) - 1
    return lines, where


#: The questions name the topic, not the evidence's words.
WORDING = Wording(
    summary=lambda rng, t: rng.choice(_SUMMARY).format(label=t.label),
    instruction=lambda t: _INSTRUCTION.format(label=t.label),
    preference=lambda t: _PREFERENCE.format(label=t.label),
)
SHAPE = Shape(users=USERS, tuning_users=TUNING_USERS, sessions=SESSIONS, start=dt.date(2026, 2, 2), stagger=2,
              gap=(4, 9), shuffle_plan=False,
              session=lambda rng, day, turns, topics, u: _session(rng, day, turns, topics, LAYOUTS[u % len(LAYOUTS)]),
              wording=WORDING)


def build(out: Path, seed: int = SEED) -> tuple[dict[str, Path], list[Planted], dict]:
    """Write the users' trees under ``out``; returns {tree: root}, the questions, and counts."""
    trees, questions, chars, lines = write_users(out, seed, SHAPE)
    stats = {"users": USERS, "sessions": USERS * SESSIONS, "chars": chars, "lines": lines, "questions": len(questions)}
    return trees, questions, stats
