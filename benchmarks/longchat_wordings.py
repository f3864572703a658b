"""Held-out wordings of the long-chat corpus's topic questions: the same evidence, asked another way.

The long-chat corpus (:mod:`benchmarks.longchat`) asks its summary, order, instruction and preference
questions from one template each ("Can you summarise what I did about X across our chats?"), and its
buried facts as "what did you suggest ...". A rule gated on those words (a "summarise" or "in which
order" detector) could fit the template rather than the need. This module writes a second set,
independently of the first: other verbs, other sentence shapes, and the topic often named differently
("redoing the kitchen" for "the kitchen renovation"). Each question keeps the first set's evidence
lines, so the two sets differ only in wording. The facts are asked in the first person ("how often
should I water my tomatoes?"): their answer is the assistant's, so they show whether a rule that favours
the user's own lines hurts such questions.

The second set is never used for choosing a rule or a constant (benchmarks/README.md); it is the
``longchat-alt`` corpus of ``python -m benchmarks quality`` and ``python -m benchmarks.research.tune dump``,
scored by user split like the first (users 0-2 "tune", 3-5 "test"), though all of it is held out.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from benchmarks.longchat_topics import TOPICS, Topic

__all__ = ["ALT_NAMES", "SUMMARY", "ORDER", "INSTRUCTION", "PREFERENCE", "FACT", "alternative", "alternatives"]

DATA = Path(__file__).parent / "corpora" / "longchat_wordings.json"
_DATA = json.loads(DATA.read_text(encoding="utf-8"))
#: How someone else might name each topic: no template's label, often none of its words.
ALT_NAMES: dict[str, str] = _DATA["alt_names"]
#: Coverage questions, one picked per topic in turn: none says "summarise" or "across our chats".
SUMMARY: tuple[str, ...] = tuple(_DATA["summary"])
#: Order questions over three events (their short labels): none says "in which order".
ORDER: tuple[str, ...] = tuple(_DATA["order"])
#: Per topic: another way to ask for the instruction the user gave the assistant.
INSTRUCTION: dict[str, str] = _DATA["instruction"]
#: Per topic: another way to ask for the user's stated preference.
PREFERENCE: dict[str, str] = _DATA["preference"]
#: Per topic: the two buried-fact questions asked in the first person, without "did you say": the answer
#: is the assistant's paragraph, so these check that a lean towards the user's own lines does no harm.
FACT: dict[str, tuple[str, str]] = {k: tuple(v) for k, v in _DATA["fact"].items()}
_SUMMARY_LABEL = re.compile(r"about (.+?) across", re.I)


def _topic(planted) -> Topic | None:
    """The topic a first-set question asks about, read from its wording (None: not a topic question)."""
    for t in TOPICS:
        if planted.category == "summary":
            m = _SUMMARY_LABEL.search(planted.query)
            if m and m[1] == t.label:
                return t
        elif planted.category == "order" and sum(e[1] in planted.query for e in t.events) >= 2:
            return t
        elif planted.category == "instruction" and planted.query == t.instruction[1]:
            return t
        elif planted.category == "preference" and planted.query == t.preference[1]:
            return t
        elif planted.category == "fact" and planted.query in (f[1] for f in t.facts):
            return t
    return None


def alternative(planted, turn: int):
    """The second-set wording of ``planted`` (a :class:`benchmarks.longchat.Planted`), or None; ``turn``
    picks the template (the question's place among its category's questions)."""
    from benchmarks.longchat import Planted

    t = _topic(planted)
    if t is None:
        return None
    if planted.category == "summary":
        query = SUMMARY[turn % len(SUMMARY)].format(name=ALT_NAMES[t.name])
    elif planted.category == "order":
        labels = [e[1] for e in t.events if e[1] in planted.query]
        labels.sort(key=planted.query.index)  # as the first set listed them (not in time order)
        if len(labels) != 3:
            return None
        query = ORDER[turn % len(ORDER)].format(a=labels[0], b=labels[1], c=labels[2])
    elif planted.category == "instruction":
        query = INSTRUCTION[t.name]
    elif planted.category == "fact":
        query = FACT[t.name][[f[1] for f in t.facts].index(planted.query)]
    else:
        query = PREFERENCE[t.name]
    return Planted(planted.qid + "-alt", query, planted.category, planted.items, planted.tree, planted.split)


def alternatives(planted: list) -> list:
    """The second set for a corpus's questions: one per summary, order, instruction, preference and fact question."""
    out, seen = [], {}
    for p in planted:
        n = seen.get(p.category, 0)
        alt = alternative(p, n)
        if alt is not None:
            seen[p.category] = n + 1
            out.append(alt)
    return out
