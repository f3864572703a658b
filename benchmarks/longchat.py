"""The long-chat corpus: months of user-assistant chats whose assistant turns run to many paragraphs.

Six users (one tree each, searched on its own, like LoCoMo's conversations), each with four of the
topics of :mod:`benchmarks.longchat_topics` and 14 chat sessions a week or so apart
(``chats/2026-01-05.md``: a ``**User:**`` line, then the assistant's answer, one paragraph a line,
4-8 paragraphs). What the questions ask about is placed across the sessions with a fixed seed:
the user's events in time order, an instruction, a preference, a value stated and later changed,
and two facts buried in long assistant answers among generic advice. Relevance is the line that
answers: the user's turn, or the assistant's paragraph.

Questions (192; category): ``summary`` "summarise what I did about X across our chats" (the four
events), ``order`` "in which order did these happen: ..." (three events), ``instruction``,
``preference``, ``update`` (the later value), ``fact`` (a buried paragraph) and ``temporal``
("when did I ..."). Users 0-2 are the tuning split, 3-5 held out.
"""

from __future__ import annotations

import datetime as dt
import random
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from benchmarks.longchat_topics import GENERIC, TOPICS, Topic

__all__ = ["USERS", "TUNING_USERS", "SESSIONS", "Planted", "Wording", "Shape", "plan_turns", "write_users", "build"]

USERS = 6
TUNING_USERS = 3
SESSIONS = 14
TOPICS_PER_USER = 4
SEED = 23


@dataclass(frozen=True)
class Planted:
    """One question of one user's tree: its query, category and the (path, line) items that answer it."""

    qid: str
    query: str
    category: str
    items: tuple[tuple[str, int], ...]
    tree: str
    split: str


@dataclass(frozen=True)
class Wording:
    """How a corpus words the questions that differ between corpora (``summary`` may draw on the rng)."""

    summary: Callable[[random.Random, Topic], str]
    instruction: Callable[[Topic], str]
    preference: Callable[[Topic], str]


@dataclass(frozen=True)
class Shape:
    """What a long-chat corpus varies: users, sessions, dates (first day, days between users' first days,
    days between sessions), whether :func:`plan_turns` shuffles, how a session is written (``session`` gets
    the user number too) and the questions' wording."""

    users: int
    tuning_users: int
    sessions: int
    start: dt.date
    stagger: int
    gap: tuple[int, int]
    shuffle_plan: bool
    session: Callable[..., tuple[list[str], dict]]
    wording: Wording


def _paragraphs(rng: random.Random, topic: Topic, n: int) -> list[str]:
    out = []
    for template in rng.sample(GENERIC, n):
        a, b = rng.sample(topic.words, 2)
        out.append(template.format(label=topic.label.replace("my ", "your "), a=a, b=b))
    return out


def plan_turns(rng: random.Random, topics: list[Topic], sessions: int = SESSIONS,
               shuffle: bool = True) -> dict[int, list[tuple[str, Topic, int]]]:
    """session index -> [(kind, topic, number)] of the turns that questions ask about (``shuffle``: each
    session's list shuffled here too)."""
    plan: dict[int, list[tuple[str, Topic, int]]] = {i: [] for i in range(sessions)}
    for topic in topics:
        for n, s in enumerate(sorted(rng.sample(range(sessions), len(topic.events)))):
            plan[s].append(("event", topic, n))
        for n, s in enumerate(sorted(rng.sample(range(sessions), 2))):
            plan[s].append(("update", topic, n))
        for kind, n in (("instruction", 0), ("preference", 0), ("fact", 0), ("fact", 1)):
            plan[rng.randrange(sessions)].append((kind, topic, n))
    if shuffle:
        for turns in plan.values():
            rng.shuffle(turns)
    return plan


def _session(rng: random.Random, day: dt.date, turns, topics) -> tuple[list[str], dict]:
    """The session's lines and where each planted turn landed: (kind, topic name, n) -> line number."""
    lines = [f"# Chat {day.isoformat()}", ""]
    where: dict[tuple[str, str, int], int] = {}
    turns = list(turns) + [("filler", rng.choice(topics), 0) for _ in range(rng.randint(1, 2))]
    rng.shuffle(turns)
    for kind, topic, n in turns:
        if kind == "event":
            user = topic.events[n][0]
        elif kind == "update":
            user = topic.update[n]
        elif kind in ("instruction", "preference"):
            user = getattr(topic, kind)[0]
        else:
            user = rng.choice(topic.asks)
        if kind in ("event", "update") and rng.random() < 0.5:
            user += " " + rng.choice(topic.asks)
        lines += [f"**User:** {user}", ""]
        if kind not in ("fact", "filler"):
            where[(kind, topic.name, n)] = len(lines) - 1
        paragraphs = _paragraphs(rng, topic, rng.randint(4, 7))
        if kind == "fact":
            at = rng.randint(1, len(paragraphs))  # never first: buried in the answer
            paragraphs.insert(at, topic.facts[n][0])
        paragraphs[0] = "**Assistant:** " + paragraphs[0]
        for i, p in enumerate(paragraphs):
            lines += [p, ""]
            if kind == "fact" and p == topic.facts[n][0]:
                where[(kind, topic.name, n)] = len(lines) - 1
    return lines, where


def plant_questions(rng: random.Random, topics, found: dict, tree: str, split: str, wording: Wording) -> list[Planted]:
    """One user's questions, asked in ``wording``; ``found`` maps each planted turn to its (path, line)."""
    out = []

    def add(query, category, keys):
        out.append(Planted(f"{tree}-{len(out)}", query, category, tuple(found[k] for k in keys), tree, split))

    for t in topics:
        events = [("event", t.name, n) for n in range(len(t.events))]
        add(wording.summary(rng, t), "summary", events)
        three = rng.sample(range(len(t.events)), 3)
        add("In which order did these happen: " + ", ".join(t.events[n][1] for n in three) + "?", "order",
            [events[n] for n in sorted(three)])
        add(wording.instruction(t), "instruction", [("instruction", t.name, 0)])
        add(wording.preference(t), "preference", [("preference", t.name, 0)])
        add(t.update[2], "update", [("update", t.name, 1)])
        for n, (_, question) in enumerate(t.facts):
            add(question, "fact", [("fact", t.name, n)])
        n = rng.randrange(len(t.events))
        add(f"When did I mention {t.events[n][1]}?", "temporal", [events[n]])
    return out


def write_users(out: Path, seed: int, shape: Shape) -> tuple[dict[str, Path], list[Planted], int, int]:
    """Write ``shape.users`` users' trees under ``out`` (one random stream per user, seeded ``seed * 1000 + u``);
    returns {tree: root}, the questions, and the characters and non-blank lines written."""
    shutil.rmtree(out, ignore_errors=True)
    trees, questions, chars, lines = {}, [], 0, 0
    for u in range(shape.users):
        rng = random.Random(seed * 1000 + u)
        name = f"user-{u}"
        root = out / name
        (root / "chats").mkdir(parents=True)
        (root / "MEMORY.md").write_text("# Memory\n\nChats with the assistant, one file per session in chats/.\n")
        (root / "chats" / "MEMORY.md").write_text("# Chats\n\nOne file per chat session, named by its date.\n")
        topics = rng.sample(TOPICS, TOPICS_PER_USER)
        plan = plan_turns(rng, topics, shape.sessions, shape.shuffle_plan)
        day = shape.start + dt.timedelta(days=shape.stagger * u)
        found: dict = {}
        for s in range(shape.sessions):
            body, where = shape.session(rng, day, plan[s], topics, u)
            rel = f"chats/{day.isoformat()}.md"
            text = "\n".join(body)
            (root / rel).write_text(text, encoding="utf-8")
            chars += len(text)
            lines += sum(1 for x in body if x.strip())
            found |= {k: (rel, line) for k, line in where.items()}
            day += dt.timedelta(days=rng.randint(*shape.gap))
        trees[name] = root
        split = "tune" if u < shape.tuning_users else "test"
        questions += plant_questions(rng, topics, found, name, split, shape.wording)
    return trees, questions, chars, lines


#: longchat's questions: the topic's own instruction and preference questions.
WORDING = Wording(
    summary=lambda rng, t: f"Can you summarise what I did about {t.label} across our chats?",
    instruction=lambda t: t.instruction[1],
    preference=lambda t: t.preference[1],
)
SHAPE = Shape(users=USERS, tuning_users=TUNING_USERS, sessions=SESSIONS, start=dt.date(2026, 1, 5), stagger=3,
              gap=(5, 10), shuffle_plan=True,
              session=lambda rng, day, turns, topics, u: _session(rng, day, turns, topics), wording=WORDING)


def build(out: Path, seed: int = SEED) -> tuple[dict[str, Path], list[Planted], dict]:
    """Write the users' trees under ``out``; returns {tree: root}, the questions, and counts."""
    trees, questions, chars, _ = write_users(out, seed, SHAPE)
    return trees, questions, {"users": USERS, "sessions": USERS * SESSIONS, "chars": chars, "questions": len(questions)}
