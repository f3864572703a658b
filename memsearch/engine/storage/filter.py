"""Which rows a search may return, compiled once for LanceDB (SQL) and for the in-memory copies (numpy).

The rules, written here only: a row is in ``scope`` when its directory is the scope or below it,
and in the date range when it has a date and ``since <= date <= until`` (ISO strings compare as
dates). :meth:`Filter.sql` is what LanceDB gets; :meth:`Filter.mask` is what
:mod:`~memsearch.engine.search.flat` and :mod:`~memsearch.engine.search.bm25` apply.

Every value that reaches SQL goes through :func:`sql_str`: user text is never formatted into a
filter string unescaped.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np

__all__ = ["Filter", "sql_str", "in_lists", "IN_CHUNK"]


def sql_str(value: str) -> str:
    """A SQL string literal for ``value`` (single quotes doubled, NUL refused)."""
    if "\x00" in value:
        raise ValueError("NUL byte in a filter value")
    return "'" + value.replace("'", "''") + "'"


#: Values per ``IN (...)`` list: a longer list of paths or hashes is split into several filters.
IN_CHUNK = 500


def in_lists(column: str, values: Sequence[str]) -> Iterable[str]:
    """``column IN (...)`` filters over ``values``, :data:`IN_CHUNK` at a time, each value escaped."""
    for i in range(0, len(values), IN_CHUNK):
        yield f"{column} IN ({', '.join(sql_str(v) for v in values[i : i + IN_CHUNK])})"


@dataclass(frozen=True)
class Filter:
    """A directory subtree and a date range. Values are validated by the caller (``scope``
    relative with no ``..``, dates ISO); :meth:`sql` escapes them anyway."""

    scope: str | None = None
    since: str | None = None
    until: str | None = None

    def sql(self) -> str | None:
        """The LanceDB ``where`` clause, None when every row is allowed."""
        clauses = []
        if self.scope:
            clauses.append(f"(dir = {sql_str(self.scope)} OR starts_with(dir, {sql_str(self.scope + '/')}))")
        if self.since:
            clauses.append(f"date >= {sql_str(self.since)}")
        if self.until:
            clauses.append(f"date <= {sql_str(self.until)}")
        return " AND ".join(clauses) or None

    def allows_dir(self, directory: str) -> bool:
        """Whether a row in ``directory`` is in scope."""
        return not self.scope or directory == self.scope or directory.startswith(self.scope + "/")

    def dir_mask(self, dirs: Sequence[str]) -> np.ndarray | None:
        """Which of ``dirs`` are in scope; None when every one is."""
        if not self.scope:
            return None
        return np.fromiter(map(self.allows_dir, dirs), bool, len(dirs))

    def date_mask(self, dates: np.ndarray) -> np.ndarray | None:
        """Which of ``dates`` (a string array, ``""`` where a row has no date) are in range; None when every one is."""
        if not (self.since or self.until):
            return None
        mask = dates != ""
        if self.since:
            mask &= dates >= self.since
        if self.until:
            mask &= dates <= self.until
        return mask

    def mask(self, dirs: Sequence[str], dates: np.ndarray) -> np.ndarray | None:
        """Which rows of the columns ``dirs`` and ``dates`` the filter allows; None when every one is."""
        masks = [m for m in (self.dir_mask(dirs), self.date_mask(dates)) if m is not None]
        if not masks:
            return None
        return masks[0] & masks[1] if len(masks) == 2 else masks[0]
