"""The timeline of a topic: the best passages of each file (or dated session) that touches it, oldest first.

A question that spans memory ("summarise how the garden went", "in which order did we ...", "what did I ask
you to always do about X") is answered by a passage from each of many sessions, not by the ten passages
most like the question, which tend to come from a few sessions that repeat the topic's words. The
``timeline`` search mode (:func:`timeline`) takes the hybrid ranking (:func:`.fusion.hybrid`) and fills a
budget of characters (``k`` x :data:`TIMELINE_CHARS_PER_HIT`, at most ``k`` x :data:`TIMELINE_ROWS_PER_HIT`
rows) from it, best row first: the first
:data:`TIMELINE_HEAD` of the budget with hybrid's own best rows whatever their session (what the question
names, as the three events of an order question), the rest with rows of sessions that hold fewer than
:data:`TIMELINE_PASSAGES` rows so far (a *session* is a file, or a section of it under a heading that names a
day, as a journal's ``## 2026-03-02``); then it orders them by date: dated sessions oldest first, then
undated ones by score. A row costs the characters of the lines it covers: a line cut into pieces at
indexing (a long chat turn) is read whole, so each piece costs the sum of the pieces of its line among the
candidates. For a question about the asker (:func:`.query.asks_own_words`: "what did I do about X") in a
chat transcript, the passages are the user's own turns (:func:`.speakers.is_user_turn`) when the ranking
holds any: what the person did or asked for is in their lines, while the assistant's advice on the topic
fills every session. For a question about standing instructions (:func:`asks_instructions`: "what did I ask
you to keep in mind"), a row that gives one (:func:`is_directive`: a sentence opening "Don't", "Always",
"Whenever you" ...) ranks as if it scored :data:`DIRECTIVE_WEIGHT` x its score. Rows are ranked dicts as in
:mod:`.fusion`.
"""

from __future__ import annotations

import re

from .query import asks_instructions, asks_own_words, spans_memory
from .speakers import is_directive, is_user_turn
from .timeline_budget import TIMELINE_CHARS_PER_HIT, TIMELINE_ROWS_PER_HIT

__all__ = ["DIRECTIVE_WEIGHT", "SPREAD_K", "TIMELINE_CANDIDATES", "TIMELINE_CHARS_PER_HIT", "TIMELINE_HEAD",
           "TIMELINE_PASSAGES", "TIMELINE_ROWS_PER_HIT", "line_chars", "pick", "session_of", "spread",
           "spread_if_spanning", "timeline"]

#: Share of the budget filled with hybrid's best rows whatever their session, before the spread: an order
#: question names its events, which hybrid ranks first, and an event is not always among its session's best
#: rows. Chosen on the tuning users of the long-chat corpora (0, 0.25, 0.5, 0.75 measured).
TIMELINE_HEAD = 0.5
#: Rows a session holds once the head is filled. Chosen on the same tuning users (2 and 3 measured: 3 the
#: better sum over the three long-chat corpora, by a question or two).
TIMELINE_PASSAGES = 3
#: Rows each leg fetches for a timeline, at least (other searches fetch max(4k, MIN_CANDIDATES)): a timeline reaches
#: down the ranking for sessions, and for a question about the asker only the user's turns among the candidates
#: count. Chosen on the same tuning users (100, 150 and 200 measured; 150 the best sum, by a question or two).
TIMELINE_CANDIDATES = 150
#: Rank factor of a row that gives an instruction, for a question about standing instructions: the turn that
#: says "don't rewrite my cover letters" shares few words with "what did I ask you to keep in mind about my job
#: search", and ranked below the turns that name the topic. Chosen on the same tuning users: 1.1 changes
#: nothing, 1.3 is the smallest that reaches the best (1.2 / 1.3 / 1.5 / 2.0 measured; LOG.md, round seven).
DIRECTIVE_WEIGHT = 1.3
#: A ranked (hybrid) search for a question that spans memory opens with what a timeline of this many hits would
#: pick (:func:`spread`), whatever its own k, so that its first hits do not depend on k. Chosen on the tuning users
#: of the long-chat corpora against 5 (LOG.md, round fourteen).
SPREAD_K = 10
_HEADING_DAY = re.compile(r"(?<!\d)(\d{4}-\d{2}-\d{2})(?!\d)")
def session_of(row: dict) -> tuple[str, str | None]:
    """(path, day) of the session ``row`` belongs to: its file, split by a heading that names a day."""
    day = _HEADING_DAY.search(row.get("heading") or "")
    return row["path"], day[1] if day else None


def line_chars(rows: list[dict]) -> dict[tuple[str, int, int], int]:
    """Characters of each line range of ``rows``: a line range held by several rows (the pieces of a line cut
    at indexing) is as long as their texts together; each row counted once."""
    out: dict[tuple[str, int, int], int] = {}
    seen: set = set()
    for row in rows:
        key = row.get("id") or id(row)
        if key in seen:
            continue
        seen.add(key)
        span = (row["path"], row["start_line"], row["end_line"])
        out[span] = out.get(span, 0) + len(row["text"]) + 1
    return out


def pick(ranked: list[dict], query: str, chars: int, rows: int, *, passages: int = TIMELINE_PASSAGES,
         head: float = TIMELINE_HEAD, directive: float = DIRECTIVE_WEIGHT) -> list[dict]:
    """The best rows of ``ranked`` within ``chars`` characters and ``rows`` rows, best first: the first ``head`` of
    the characters by rank alone, then at most ``passages`` a session; for a question about the asker only their
    own turns (when any rank), for one about standing instructions the rows that give one first (``directive``)."""
    cost = line_chars(ranked)
    if asks_instructions(query):  # a stable sort: ties keep hybrid's order
        ranked = sorted(ranked, key=lambda r: -r["score"] * (directive if is_directive(r) else 1.0))
    if asks_own_words(query):
        ranked = [r for r in ranked if is_user_turn(r)] or ranked
    sessions: dict[tuple[str, str | None], int] = {}
    paid: set[tuple[str, int, int]] = set()  # line ranges already in the budget (another piece of the line)
    out: list[dict] = []
    used = 0
    for row in ranked:  # best first
        if len(out) >= rows:
            break
        session = session_of(row)
        if sessions.get(session, 0) >= passages and used >= head * chars:
            continue
        span = (row["path"], row["start_line"], row["end_line"])
        price = 0 if span in paid else cost[span]
        if used + price > chars and used:  # the best row always comes, whatever its length
            continue
        out.append(row)
        sessions[session] = sessions.get(session, 0) + 1
        paid.add(span)
        used += price
    return out


def timeline(ranked: list[dict], query: str, k: int, *, chars: int | None = None, rows: int | None = None,
             **rules) -> list[dict]:
    """:func:`pick`'s rows within ``chars`` characters and ``rows`` rows (defaults: ``k`` x
    TIMELINE_CHARS_PER_HIT and ``k`` x TIMELINE_ROWS_PER_HIT), oldest session first; ``rules``: :func:`pick`'s."""
    budget = k * TIMELINE_CHARS_PER_HIT if chars is None else chars
    picked = pick(ranked, query, budget, k * TIMELINE_ROWS_PER_HIT if rows is None else rows, **rules)
    sessions: dict[tuple[str, str | None], list[dict]] = {}
    for row in picked:
        sessions.setdefault(session_of(row), []).append(row)
    out: list[dict] = []
    # dated sessions oldest first ("~" sorts after every digit), then the undated ones by score
    filled = list(sessions.items())
    for _, _, kept in sorted((key[1] or kept[0].get("date") or "~", i, kept) for i, (key, kept) in enumerate(filled)):
        out += sorted(kept, key=lambda r: r["start_line"])
    return out


def spread(ranked: list[dict], query: str, k: int = SPREAD_K) -> list[dict]:
    """``ranked`` opening with what a timeline of ``k`` hits picks (for a question that spans memory,
    :func:`.query.spans_memory`), in :func:`pick`'s order: hybrid's best rows, then the best of other sessions;
    the rest of the ranking follows as it was."""
    first = pick(ranked, query, k * TIMELINE_CHARS_PER_HIT, k * TIMELINE_ROWS_PER_HIT)
    taken = {id(r) for r in first}
    return first + [r for r in ranked if id(r) not in taken]


def spread_if_spanning(ranked: list[dict], query: str, spanning: bool | None = None) -> list[dict]:
    """The hybrid ranking as a search returns it: :func:`spread` for a question that spans memory
    (:func:`.query.spans_memory`, or ``spanning`` when the caller asked it already), else ``ranked`` as it is."""
    return spread(ranked, query) if (spans_memory(query) if spanning is None else spanning) else ranked
