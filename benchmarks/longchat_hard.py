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
import shutil
from pathlib import Path

from benchmarks.longchat import TOPICS_PER_USER, Planted
from benchmarks.longchat_topics import GENERIC, TOPICS, Topic

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


def _plan(rng: random.Random, topics: list[Topic]) -> dict[int, list[tuple[str, Topic, int]]]:
    plan: dict[int, list[tuple[str, Topic, int]]] = {i: [] for i in range(SESSIONS)}
    for topic in topics:
        for n, s in enumerate(sorted(rng.sample(range(SESSIONS), len(topic.events)))):
            plan[s].append(("event", topic, n))
        for n, s in enumerate(sorted(rng.sample(range(SESSIONS), 2))):
            plan[s].append(("update", topic, n))
        for kind, n in (("instruction", 0), ("preference", 0), ("fact", 0), ("fact", 1)):
            plan[rng.randrange(SESSIONS)].append((kind, topic, n))
    return plan


def _questions(rng: random.Random, topics, found: dict, tree: str, split: str) -> list[Planted]:
    out = []

    def add(query, category, keys):
        out.append(Planted(f"{tree}-{len(out)}", query, category, tuple(found[k] for k in keys), tree, split))

    for t in topics:
        events = [("event", t.name, n) for n in range(len(t.events))]
        add(rng.choice(_SUMMARY).format(label=t.label), "summary", events)
        three = rng.sample(range(len(t.events)), 3)
        add("In which order did these happen: " + ", ".join(t.events[n][1] for n in three) + "?", "order",
            [events[n] for n in sorted(three)])
        add(_INSTRUCTION.format(label=t.label), "instruction", [("instruction", t.name, 0)])
        add(_PREFERENCE.format(label=t.label), "preference", [("preference", t.name, 0)])
        add(t.update[2], "update", [("update", t.name, 1)])
        for n, (_, question) in enumerate(t.facts):
            add(question, "fact", [("fact", t.name, n)])
        n = rng.randrange(len(t.events))
        add(f"When did I mention {t.events[n][1]}?", "temporal", [events[n]])
    return out


def build(out: Path, seed: int = SEED) -> tuple[dict[str, Path], list[Planted], dict]:
    """Write the users' trees under ``out``; returns {tree: root}, the questions, and counts."""
    shutil.rmtree(out, ignore_errors=True)
    trees, questions, chars, lines = {}, [], 0, 0
    for u in range(USERS):
        rng = random.Random(seed * 1000 + u)
        name, layout = f"user-{u}", LAYOUTS[u % len(LAYOUTS)]
        root = out / name
        (root / "chats").mkdir(parents=True)
        (root / "MEMORY.md").write_text("# Memory\n\nChats with the assistant, one file per session in chats/.\n")
        (root / "chats" / "MEMORY.md").write_text("# Chats\n\nOne file per chat session, named by its date.\n")
        topics = rng.sample(TOPICS, TOPICS_PER_USER)
        plan = _plan(rng, topics)
        day = dt.date(2026, 2, 2) + dt.timedelta(days=2 * u)
        found: dict = {}
        for s in range(SESSIONS):
            body, where = _session(rng, day, plan[s], topics, layout)
            rel = f"chats/{day.isoformat()}.md"
            text = "\n".join(body)
            (root / rel).write_text(text, encoding="utf-8")
            chars += len(text)
            lines += sum(1 for x in body if x.strip())
            found |= {k: (rel, line) for k, line in where.items()}
            day += dt.timedelta(days=rng.randint(4, 9))
        trees[name] = root
        questions += _questions(rng, topics, found, name, "tune" if u < TUNING_USERS else "test")
    stats = {"users": USERS, "sessions": USERS * SESSIONS, "chars": chars, "lines": lines, "questions": len(questions)}
    return trees, questions, stats
