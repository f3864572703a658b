"""Search results: the :class:`Hit` dataclass, and fused rows turned into hits with their ``MEMORY.md``."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

from ...errors import MemsearchError
from ...memory.contract import MemoryRef, memory_chain, memory_ref

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

    def to_dict(self) -> dict:
        data = asdict(self)
        data["memory_chain"] = list(self.memory_chain)
        return data


class HitBuilder:
    """Builds :class:`Hit` results for one root, caching ``MEMORY.md`` summaries by file identity."""

    def __init__(self, root: Path):
        self.root = root
        self._refs: dict[str, tuple[tuple[int, int, int], MemoryRef]] = {}

    def forget(self) -> None:
        self._refs.clear()

    def build(self, merged: list[dict]) -> list[Hit]:
        """Hits from merged rows (each with ``_lines``: line number -> text), best first."""
        chains: dict[str, tuple[str, ...]] = {}
        return [self._hit(row, chains) for row in merged]

    def _hit(self, row: dict, chains: dict[str, tuple[str, ...]]) -> Hit:
        lines = row["_lines"]
        text = "\n".join(lines[i] for i in sorted(lines))
        if row["dir"] not in chains:
            chains[row["dir"]] = self.chain(row["dir"])
        chain = chains[row["dir"]]
        return Hit(
            path=row["path"], dir=row["dir"], start_line=row["start_line"], end_line=row["end_line"],
            heading=row["heading"], text=text, score=round(float(row["score"]), 6), date=row["date"],
            memory_md=self.ref(chain[0]) if chain else None, memory_chain=chain,
        )

    def chain(self, directory: str) -> tuple[str, ...]:
        """``MEMORY.md`` paths from the nearest enclosing one up to the root's."""
        return memory_chain(self.root, directory)

    def ref(self, rel: str) -> MemoryRef:
        """The summary of ``MEMORY.md`` ``rel``, cached while the file's (mtime, size, inode) stay."""
        try:
            st = (self.root / rel).stat()
            stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
            cached = self._refs.get(rel)
            if cached and cached[0] == stamp:
                return cached[1]
            ref = memory_ref(self.root, rel)
        except (OSError, MemsearchError):  # deleted or made unreadable since the hit was found
            return MemoryRef(path=rel, title=rel, summary="")
        self._refs[rel] = (stamp, ref)
        return ref
