"""The arguments of one search, checked once: :func:`check_search` gives a :class:`SearchArgs` or a typed error.

Every way into a search (``MemoryIndex.search``, the routed path of the CLI, ``memsearch.search()``,
the tools and MCP) takes its arguments through here, so a bad call is refused the same way,
before a daemon is asked or a model loads. Light: the standard library and memsearch's memory
layer only.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

from ...errors import Hint, InvalidArgument, MemoryFileNotFound
from ...memory.document import parse_date
from ...memory.tree import foreign_dirs, refuse_other_dir, safe_path

__all__ = ["SearchArgs", "check_search", "MODES", "MAX_K"]

#: Search modes: both legs fused, one leg alone, or the fused ranking as a timeline (the best hit of each
#: file or dated session touching the topic, oldest first: :mod:`memsearch.engine.search.timeline`).
MODES = ("hybrid", "vector", "keyword", "timeline")
#: Most hits one search may ask for.
MAX_K = 1000


@dataclass(frozen=True)
class SearchArgs:
    """A checked search: ``scope`` is root-relative (None: the whole root), dates are ``YYYY-MM-DD``."""

    query: str
    k: int = 10
    scope: str | None = None
    mode: str = "hybrid"
    since: str | None = None
    until: str | None = None

    def params(self) -> dict:
        """As keyword arguments of ``MemoryIndex.search`` and the daemon's ``search`` method (JSON-ready)."""
        return asdict(self)


def check_search(root: Path, query, k=10, scope=None, mode="hybrid", since=None, until=None, *,
                 scope_must_exist: bool = False) -> SearchArgs:
    """The checked arguments of a search of the resolved memory ``root``; :class:`InvalidArgument` (or
    :class:`PathOutsideRoot` for a scope outside the root) for anything wrong. ``scope_must_exist``:
    a scope that is no directory of the memory is :class:`MemoryFileNotFound`, a hidden or foreign one
    :class:`NotMemoryFile`, by the listing's rule (:func:`~memsearch.memory.tree.refuse_other_dir`); else it finds
    nothing."""
    if not isinstance(query, str):
        raise InvalidArgument(f"the query must be text (a string), got {type(query).__name__}: give some words to search for")
    if not query.strip():
        raise InvalidArgument("the query is empty: give some words to search for")
    if mode not in MODES:
        raise InvalidArgument(f"unknown search mode {mode!r}: choose one of {', '.join(MODES)}")
    if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= MAX_K:
        raise InvalidArgument(f"k must be a whole number from 1 to {MAX_K}, got {k!r}")
    rel = None
    if scope not in (None, "", "."):
        full, rel = safe_path(root, str(scope).strip().rstrip("/"))
        if scope_must_exist and rel != ".":
            refuse_other_dir(rel, foreign=foreign_dirs(), what="scope ", root=root)  # hidden, foreign: never indexed
            if not full.is_dir():
                raise MemoryFileNotFound(f"scope {rel!r} is not a directory of the memory",
                                         hint=Hint("list", ".", root=root))
        rel = None if rel == "." else rel
    since_s, until_s = parse_date(since, "since"), parse_date(until, "until")
    if since_s and until_s and since_s > until_s:
        raise InvalidArgument(f"since {since_s} is after until {until_s}: swap them")
    return SearchArgs(query, k, rel, mode, since_s, until_s)
