"""Where ``str_replace``'s ``old_str`` occurs in a file, and the refusal that names those lines when it is not once.

:func:`match_lines` finds the matches (linear in the text, however many there are: a refusal runs under the
write lock); :func:`not_unique` words the refusal for zero or several, naming each line once with the count.
"""

from __future__ import annotations

from ..errors import NoUniqueMatch

__all__ = ["match_lines", "not_unique", "MATCH_LINES_SHOWN"]

#: How many matches a ``str_replace`` refusal locates (it says how many more there are).
MATCH_LINES_SHOWN = 20


def match_lines(text: str, old: str) -> tuple[int, bool, list[int], list[int]]:
    """How often ``old`` occurs in ``text`` (overlapping matches count), whether that count is exact (else
    a lower bound: past the first few, matches are counted without overlaps), where the first
    :data:`MATCH_LINES_SHOWN` start and on which lines (one entry per match). At most that many searches,
    one count and one pass for the lines."""
    starts, at = [], text.find(old)
    while at != -1 and len(starts) <= MATCH_LINES_SHOWN:
        starts.append(at)
        at = text.find(old, at + 1)
    count, exact = len(starts), len(starts) <= MATCH_LINES_SHOWN
    if not exact:
        count, starts = max(text.count(old), len(starts)), starts[:MATCH_LINES_SHOWN]
    lines, at = [], 0
    for start in starts:  # each stretch between two matches is counted once
        lines.append((lines[-1] if lines else 1) + text.count("\n", at, start))
        at = start
    return count, exact, starts, lines


def not_unique(shown: str, count: int, exact: bool, lines: list[int]) -> NoUniqueMatch:
    """The refusal of a ``str_replace`` whose ``old_str`` occurs ``count`` times (0: nowhere) in file ``shown``,
    the matches located on ``lines`` (one per match, in order): each line named once, with how many matches it holds.
    :attr:`~memsearch.errors.NoUniqueMatch.lines` holds the distinct lines."""
    if count == 0:
        return NoUniqueMatch(f"No replacement was performed: old_str did not appear verbatim in {shown}. It must "
                             "match exactly, spaces and line breaks included: view the file and copy the text")
    distinct = sorted(set(lines))
    where = ", ".join(f"{n} ({lines.count(n)} times)" if lines.count(n) > 1 else str(n) for n in distinct)
    times = f"{count:,} times" if exact else f"at least {count:,} times"
    located = "" if exact else f" (where the first {len(lines)} are)"
    return NoUniqueMatch(f"No replacement was performed: old_str occurs {times} in {shown}, in line"
                         f"{'s' if len(distinct) > 1 else ''} {where}{located}. Include more of the surrounding text "
                         "so that it occurs once", lines=tuple(distinct))
