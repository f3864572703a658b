"""The size of a timeline: the characters and passages it holds per hit asked for (import-light: help texts state it)."""

__all__ = ["TIMELINE_CHARS_PER_HIT", "TIMELINE_ROWS_PER_HIT", "describe"]

#: Characters of passages a timeline holds per hit asked for (``k``): the tool's default k of 5 reads
#: 6,000 characters, the equal budget at which the benchmarks compare what an agent reads (issue 23). A
#: budget of characters, not of sessions, lets a timeline of short turns or notes reach many sessions and
#: keeps one of long turns within what is read (figures in docs/benchmarks.md, the sweep in
#: benchmarks/research/LOG.md, round seven).
TIMELINE_CHARS_PER_HIT = 1200
#: Rows a timeline holds per hit asked for, at most: short turns fill the characters with many hits, and a tool
#: result carries each hit's path, lines and MEMORY.md besides its text (about 100 tokens), so 34 user turns
#: ran past the tools' 4,000-token budget and lost the latest sessions; 25 (k = 5) fit. Measured on the same
#: tuning users: 5 a hit loses nothing against no cap, 4 loses summaries (LOG.md, round seven).
TIMELINE_ROWS_PER_HIT = 5


def describe() -> str:
    """The budget in a help text's words: "about k x 1,200 characters and at most 5k passages"."""
    return f"about k x {TIMELINE_CHARS_PER_HIT:,} characters and at most {TIMELINE_ROWS_PER_HIT}k passages"
