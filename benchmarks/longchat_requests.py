"""A third wording set of the harder long chats: asked as a live chat asks, by requests and topic-only questions.

The first two sets (:mod:`benchmarks.longchat_hard`, :mod:`benchmarks.longchat_wordings`) ask *about* memory:
"what did I ask you to keep in mind about X", "what are my preferences for X", "in which order did these
three events happen". An agent in a long chat is more often asked for something, and must recall on its own
what the person said earlier: a request for advice or work whose answer should follow a standing
instruction ("suggest a menu for the rehearsal dinner": "keep every wedding suggestion vegetarian-friendly")
or a stated taste ("which tomato seeds should I order": "I'd always pick heirloom varieties"), a request
that an earlier answer already covers ("how should I set up my vocabulary flashcards"), and an order
question that names only the topic ("what steps did I take with X, from first to last": all four events).

Categories: ``order-topic`` (the topic's four events, from the summary questions), ``instruction-request``,
``preference-request`` (the one user turn that states it), ``fact-request`` (the assistant's buried
paragraph). The instruction and preference requests differ by split: users 0-2 ("tune") are asked the first
request of each topic, users 3-5 ("test") the second; the order templates turn and the fact requests are the
same in both. Each question keeps the first set's evidence, so the three sets differ only in wording.
Written after the rules they check were seen to miss, not by the first sets' authors: the figures of its
held-out split are what counts (benchmarks/README.md).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from benchmarks.longchat_topics import TOPICS, Topic

__all__ = ["CATEGORIES", "ORDER", "INSTRUCTION", "PREFERENCE", "FACT", "requests"]

DATA = Path(__file__).parent / "corpora" / "longchat_requests.json"
_DATA = json.loads(DATA.read_text(encoding="utf-8"))
CATEGORIES = ("order-topic", "instruction-request", "preference-request", "fact-request")
#: Order questions that name the topic only (``{label}``), one picked per question in turn.
ORDER: tuple[str, ...] = tuple(_DATA["order"])
#: Per topic: two requests whose answer should follow the user's standing instruction (tune, test).
INSTRUCTION: dict[str, list[str]] = _DATA["instruction"]
#: Per topic: two requests whose answer should follow the user's stated preference (tune, test).
PREFERENCE: dict[str, list[str]] = _DATA["preference"]
#: Per topic: a request for each of its two buried facts (the assistant's earlier advice).
FACT: dict[str, list[str]] = _DATA["fact"]


def _topic(planted) -> tuple[Topic, int] | None:
    """The topic a first-set question asks about, and which of its facts (0 for other questions)."""
    for t in TOPICS:
        facts = [question for _, question in t.facts]
        if planted.category == "fact" and planted.query in facts:
            return t, facts.index(planted.query)
        if planted.category != "fact" and (t.label in planted.query or t.label.replace("my ", "your ") in planted.query):
            return t, 0
    return None


def requests(planted: list) -> list:
    """The third set for :mod:`benchmarks.longchat_hard`'s questions (:class:`benchmarks.longchat.Planted`):
    one per summary (asked as ``order-topic``), instruction, preference and fact question."""
    out, orders = [], 0
    for p in planted:
        found = _topic(p)
        if found is None:
            continue
        t, n = found
        second = p.split != "tune"
        if p.category == "summary":
            query, category = ORDER[orders % len(ORDER)].format(label=t.label), "order-topic"
            orders += 1
        elif p.category == "instruction":
            query, category = INSTRUCTION[t.name][second], "instruction-request"
        elif p.category == "preference":
            query, category = PREFERENCE[t.name][second], "preference-request"
        elif p.category == "fact":
            query, category = FACT[t.name][n], "fact-request"
        else:
            continue
        out.append(replace(p, qid=p.qid + "-ask", query=query, category=category))
    return out
