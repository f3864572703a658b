"""Search results: the :class:`Hit` dataclass, and fused rows turned into hits with their ``MEMORY.md``
whether their file changed on disk since it was indexed (``stale``), and whether it is still being
indexed (``partial``: found by its words only, its vectors not written yet or the model not loaded yet)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from ...errors import MemsearchError
from ...memory.contract import MemoryRef, memory_chain, memory_ref
from ..storage.schema import FileState, is_incomplete

__all__ = ["Hit", "HitBuilder"]


@dataclass(frozen=True)
class Hit:
    path: str
    dir: str
    start_line: int
    end_line: int
    heading: str
    text: str
    score: float
    date: str | None
    memory_md: MemoryRef | None
    memory_chain: tuple[str, ...]
    #: The file changed on disk (size or mtime, or it is gone) since the index recorded it: the text
    #: and lines may be out of date until the next sync; read the file for its current content.
    stale: bool = False
    #: The file is still being indexed (a first index embedding it, or a big file streaming in): found
    #: by keyword search alone until its vectors are written, which the sync under way does. Also every hit
    #: of a hybrid or semantic search answered while the service loads the model (``MemoryIndex.keyword_only``).
    partial: bool = False

    def to_dict(self) -> dict:
        """The hit as JSON-ready data (what ``dataclasses.asdict`` gives, the chain a list), built field by
        field: ``asdict`` deep-copies every value, 0.41 of 7.8 s of a daemon's CPU in 400 searches of
        examples/memory (cProfile); tests/engine/test_index.py checks the two agree."""
        ref = self.memory_md
        return {"path": self.path, "dir": self.dir, "start_line": self.start_line, "end_line": self.end_line,
                "heading": self.heading, "text": self.text, "score": self.score, "date": self.date,
                "memory_md": None if ref is None else {"path": ref.path, "title": ref.title, "summary": ref.summary},
                "memory_chain": list(self.memory_chain), "stale": self.stale, "partial": self.partial}


class HitBuilder:
    """Builds :class:`Hit` results for one root, caching ``MEMORY.md`` summaries by file identity."""

    def __init__(self, root: Path):
        self.root = root
        self._refs: dict[str, tuple[tuple[int, int, int], MemoryRef]] = {}
        self._states: tuple | None = None  # ((build, files table version), path -> FileState)

    def forget(self) -> None:
        self._refs.clear()
        self._states = None

    def recorded(self, store, build=None, stamp=None) -> dict[str, FileState]:
        """path -> :class:`FileState` as ``store``'s last sync recorded each file, read once per files-table
        version; ``stamp`` (:meth:`Store.versions_stamp`, the tables refreshed since it moved) stands
        for the version without asking LanceDB (a round trip through its event loop, ~10 ms a search
        at load 11)."""
        key = (build, stamp) if stamp is not None else (build, store.files_version())
        if self._states is None or self._states[0] != key:
            self._states = (key, store.file_states())
        return self._states[1]

    def build(self, merged: list[dict], recorded: Mapping[str, FileState] | None = None) -> list[Hit]:
        """Hits from merged rows (each with ``_lines``: line number -> text), best first.

        ``recorded``: path -> :class:`FileState` as the index recorded each file; a hit whose file
        differs now (one ``stat`` per distinct file returned) is ``stale``. None: no check.
        """
        chains: dict[str, tuple[str, ...]] = {}
        paths = {r["path"] for r in merged}
        partial = {p for p in paths if recorded is not None and p in recorded and is_incomplete(recorded[p].mtime_ns, recorded[p].size)}
        stale = {} if recorded is None else {p: self.changed(p, recorded.get(p)) for p in paths - partial}
        return [self._hit(row, chains, stale.get(row["path"], False), row["path"] in partial) for row in merged]

    def changed(self, rel: str, recorded: FileState | None) -> bool:
        """Whether file ``rel`` differs from ``recorded``: changed, gone, or never recorded."""
        if recorded is None:
            return True
        try:
            st = os.stat(os.path.join(self.root, rel))  # a str join: a Path per hit cost more than the stat
        except OSError:
            return True
        return not recorded.same_as(st)

    def _hit(self, row: dict, chains: dict[str, tuple[str, ...]], stale: bool = False, partial: bool = False) -> Hit:
        lines = row["_lines"]
        text = "\n".join(lines[i] for i in sorted(lines))
        if row["dir"] not in chains:
            chains[row["dir"]] = self.chain(row["dir"])
        chain = chains[row["dir"]]
        return Hit(
            path=row["path"], dir=row["dir"], start_line=row["start_line"], end_line=row["end_line"],
            heading=row["heading"], text=text, score=round(float(row["score"]), 6), date=row["date"],
            memory_md=self.ref(chain[0]) if chain else None, memory_chain=chain, stale=stale,
            partial=partial,
        )

    def chain(self, directory: str) -> tuple[str, ...]:
        """``MEMORY.md`` paths from the nearest enclosing one up to the root's."""
        return memory_chain(self.root, directory)

    def ref(self, rel: str) -> MemoryRef:
        """The summary of ``MEMORY.md`` ``rel``, cached while the file's (mtime, size, inode) stay."""
        try:
            st = os.stat(os.path.join(self.root, rel))
            stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
            cached = self._refs.get(rel)
            if cached and cached[0] == stamp:
                return cached[1]
            ref = memory_ref(self.root, rel)
        except (OSError, MemsearchError):  # deleted or made unreadable since the hit was found
            return MemoryRef(path=rel, title=rel, summary="")
        self._refs[rel] = (stamp, ref)
        return ref
