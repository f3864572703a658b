"""What ``memsearch index`` and ``memsearch check`` do to an index, as functions with reports that travel as JSON.

The CLI runs them in its own process when nothing serves the index; the service that holds
an index's writer lock runs the same functions for it (protocol methods ``index`` and
``check``), so the report and the exit status are the same whoever did the work.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..errors import IndexMismatch
from .check import CheckReport
from .ingest.sync import IndexReport

__all__ = ["IndexJob", "open_for_index", "index_job", "check_job", "Progress"]

#: ``progress(phase, done, total, chunks)``: phase ``index`` (files done of total, chunks
#: embedded) while syncing, ``vector`` once while the ANN index builds.
Progress = Callable[[str, int, int, int], None]


@dataclass(frozen=True)
class IndexJob:
    """What ``memsearch index`` did: the sync's report (after any repair), the optional check,
    whether the ANN index was built, and the notes to show (``(level, text)``: why it rebuilt)."""

    root: str
    location: str
    report: IndexReport
    checked: CheckReport | None = None
    built: bool = False
    notes: tuple[tuple[str, str], ...] = ()

    def to_dict(self) -> dict:
        """The JSON of ``memsearch index --json`` (the report's fields, ``db``, ``vector_index_built``,
        ``check`` when checked), plus ``root`` and ``notes``."""
        extra = {"check": self.checked.to_dict()} if self.checked is not None else {}
        return (self.report.to_dict() | {"db": self.location, "vector_index_built": self.built} | extra
                | {"root": self.root, "notes": [list(n) for n in self.notes]})

    @classmethod
    def from_dict(cls, data: dict) -> "IndexJob":
        checked = CheckReport.from_dict(data["check"]) if data.get("check") else None
        return cls(root=data["root"], location=data["db"], report=IndexReport.from_dict(data), checked=checked,
                   built=bool(data.get("vector_index_built")), notes=tuple(tuple(n) for n in data.get("notes", ())))


def open_for_index(root, *, db=None, model=None, include_core=None, rebuild=False, embedder=None,
                   notes: list | None = None):
    """The :class:`~memsearch.engine.index.MemoryIndex` ``memsearch index`` writes: rebuilt when its
    parameters are damaged, or when ``model`` names another model than the one it was built with
    (each said in ``notes``)."""
    from .index import MemoryIndex

    notes = notes if notes is not None else []
    options = dict(db=db, model=model, include_core=include_core, embedder=embedder)
    try:
        return MemoryIndex.open_repairing(root, rebuild=rebuild, **options,
                                          on_damage=lambda exc: notes.append(("warning", f"{exc}: rebuilding it now")))
    except IndexMismatch as exc:  # --model NAME for an index of another model: rebuild with it
        if not model or getattr(exc, "parameter", None) != "fingerprint":
            raise
        notes.append(("note", f"the index was built with another model: rebuilding it with {model}"))
    return MemoryIndex(root, rebuild=True, **options)


def index_job(index, *, wait: float | None = 0.0, check: bool = False, progress: Progress | None = None,
              notes=()) -> IndexJob:
    """Sync ``index``, read it through (damage is rebuilt from the Markdown), check it row by row
    when ``check`` (repairing what is damaged), and build its ANN index when due."""
    report = index.sync(progress=progress, wait=wait)
    report = index.check_and_repair(wait=wait) or report
    checked = check_job(index, repair=True, wait=wait) if check else None
    built = False
    if index.vector_index_due():
        if progress is not None:
            progress("vector", 0, 0, 0)
        built = index.build_vector_index(wait=wait)
    return IndexJob(root=str(index.root), location=index.location, report=report, checked=checked, built=built,
                    notes=tuple(notes))


def check_job(index, *, repair: bool, wait: float | None = 0.0) -> CheckReport:
    """Check ``index`` row by row and, with ``repair``, repair what was found: the final report."""
    from .check import check_index, repair_index

    report = check_index(index)
    if repair and not report.ok:
        report = repair_index(index, report, wait=wait)
    return report
