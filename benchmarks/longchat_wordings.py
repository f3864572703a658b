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

import re

from benchmarks.longchat_topics import TOPICS, Topic

__all__ = ["ALT_NAMES", "SUMMARY", "ORDER", "INSTRUCTION", "PREFERENCE", "FACT", "alternative", "alternatives"]

#: How someone else might name each topic: no template's label, often none of its words.
ALT_NAMES = {
    "garden": "growing my own vegetables",
    "marathon": "getting ready for the big race",
    "renovation": "redoing the kitchen",
    "spanish": "my Spanish lessons",
    "jobsearch": "finding a new job",
    "wedding": "our wedding",
}
#: Coverage questions, one picked per topic in turn: none says "summarise" or "across our chats".
SUMMARY = (
    "What have I been up to with {name}?",
    "Give me a rundown of everything that happened with {name}.",
    "How has {name} gone over the past few months?",
    "Walk me through my progress on {name}, from the start.",
    "Remind me what I've done for {name} up to now.",
    "Which milestones did I hit with {name}?",
)
#: Order questions over three events (their short labels): none says "in which order".
ORDER = (
    "What came first: {a}, {b} or {c}?",
    "Put these in chronological order for me: {a}; {b}; {c}.",
    "Sort by date: {a}, {b}, {c}.",
    "Which was earliest and which was latest: {a}, {b} and {c}?",
    "Did {a} happen before {b}? And where does {c} fit?",
    "Give me the sequence of {a}, {b} and {c}.",
)
#: Per topic: another way to ask for the instruction the user gave the assistant.
INSTRUCTION = {
    "garden": "Which kind of treatments did I tell you to stick to for the veg beds?",
    "marathon": "What units did I ask you to use when you write out my running paces?",
    "renovation": "How am I expecting you to quote prices for the kitchen work?",
    "spanish": "How did I want my mistakes in Spanish handled?",
    "jobsearch": "How much should you change when I send you a cover letter?",
    "wedding": "Is there a rule I set for your food ideas for the wedding?",
}
#: Per topic: another way to ask for the user's stated preference.
PREFERENCE = {
    "garden": "Which seeds would I rather grow, and why?",
    "marathon": "What time of day do I like to go running?",
    "renovation": "Cabinets or shelves: which do I like better in the kitchen?",
    "spanish": "What's my favourite way to study the language?",
    "jobsearch": "What size of company appeals to me most?",
    "wedding": "Band or DJ: which did we want for the reception?",
}
#: Per topic: the two buried-fact questions asked in the first person, without "did you say": the answer
#: is the assistant's paragraph, so these check that a lean towards the user's own lines does no harm.
FACT = {
    "garden": ("How much sulphur should I dig in to bring my soil pH down?",
               "How often should I be watering my tomatoes?"),
    "marathon": ("How often should I take a gel on my long runs?",
                 "How do I taper in the last weeks before my marathon?"),
    "renovation": ("How often do my oak worktops need oiling?",
                   "What moisture reading do I need before I can close the wall?"),
    "spanish": ("What's a good way for me to get the subjunctive down?",
                "How many new flashcards should I do each day?"),
    "jobsearch": ("How should I prepare for my systems design interview?",
                  "What should I keep in mind when I negotiate equity?"),
    "wedding": ("When should we schedule our golden-hour photos?",
                "How many bartenders do we need for our guests?"),
}
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
