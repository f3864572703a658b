"""The timeline of a topic: the best passages of each file (or dated session) that touches it, oldest first.

A question that spans memory ("summarise how the garden went", "in which order did we ...", "what did I ask
you to always do about X") is answered by a passage from each of many sessions, not by the ten passages
most like the question, which tend to come from a few sessions that repeat the topic's words. The
``timeline`` search mode (:func:`timeline`) takes the hybrid ranking (:func:`.fusion.hybrid`), ranks the
*sessions* (a file, or a section of it under a heading that names a day, as a journal's ``## 2026-03-02``)
by their best row, keeps the best ``k`` sessions with up to :data:`TIMELINE_PASSAGES` rows each and
orders them by date: dated sessions oldest first, then undated ones by score. For a question about the
asker (:func:`.query.asks_own_words`: "what did I do about X") in a chat transcript, a session's passages
are the user's own turns (:func:`.speakers.is_user_turn`) when the ranking holds any: what the person did
or asked for is in their lines, while the assistant's advice on the topic fills every session. Rows are
ranked dicts as in :mod:`.fusion`.
"""

from __future__ import annotations

import re

from .query import asks_own_words
from .speakers import is_user_turn

__all__ = ["TIMELINE_PASSAGES", "session_of", "timeline"]

#: Rows kept of each session on the timeline. Chosen on the tuning users of benchmarks/longchat_hard.py
#: (summary, order and instruction questions at the tool's default k of 5 sessions): 2 beat 1 there, as
#: an event and the line that answers often share a session (figures in docs/benchmarks.md, the sweep in
#: benchmarks/research/LOG.md).
TIMELINE_PASSAGES = 2
_HEADING_DAY = re.compile(r"(?<!\d)(\d{4}-\d{2}-\d{2})(?!\d)")


def session_of(row: dict) -> tuple[str, str | None]:
    """(path, day) of the session ``row`` belongs to: its file, split by a heading that names a day."""
    day = _HEADING_DAY.search(row.get("heading") or "")
    return row["path"], day[1] if day else None


def timeline(ranked: list[dict], query: str, k: int, passages: int = TIMELINE_PASSAGES) -> list[dict]:
    """The ``k`` sessions of ``ranked`` with the best rows, up to ``passages`` rows each, oldest first."""
    if asks_own_words(query):
        own = [r for r in ranked if is_user_turn(r)]
        ranked = own or ranked
    sessions: dict[tuple[str, str | None], list[dict]] = {}
    for row in ranked:  # best first: a session's first rows are its best
        rows = sessions.get(session_of(row))
        if rows is None:
            if len(sessions) == k:
                continue
            rows = sessions[session_of(row)] = []
        if len(rows) < passages:
            rows.append(row)
    out: list[dict] = []
    # dated sessions oldest first ("~" sorts after every digit), then the undated ones by score
    for _, _, rows in sorted((key[1] or rows[0].get("date") or "~", i, rows) for i, (key, rows) in enumerate(sessions.items())):
        out += sorted(rows, key=lambda r: r["start_line"])
    return out
