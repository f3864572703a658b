"""``memsearch check``: verify an index row by row against its Markdown, and repair it (registered by :func:`register`).

Exit status: 0 when the index is sound (or was repaired), 1 when damage remains, 2 for a usage
error. Files changed since they were indexed are reported as stale, not as damage.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from ..errors import IndexDamaged, naming_root, shell_word
from .options import RootArg
from .render import counted, emit_json, err, escape, out

__all__ = ["register", "print_check"]

#: Findings printed before "... and N more" (``--json`` has the first 50 and the total).
SHOWN = 10


def print_check(report, root, *, as_json: bool, location: str) -> None:
    if as_json:
        emit_json(report.to_dict() | {"db": location})
        return
    if report.repaired:
        err.print(f"[yellow]repaired:[/yellow] {escape(report.repaired)}")
    for finding in report.findings[:SHOWN]:
        where = f"{finding.path}: " if finding.path else ""
        err.print(f"[red]damage:[/red] {escape(where + finding.detail)}")
    if report.findings_total > SHOWN:
        err.print(f"  ... and {report.findings_total - SHOWN} more")
    command_root = shell_word(root)
    stale = (f", {len(report.stale)} changed since indexed (`memsearch index {command_root}` updates them)"
             if report.stale else "")
    if report.ok:
        out.print(f"checked {counted(report.rows, 'row')} of {counted(report.files, 'file')} in {escape(location)}: ok{escape(stale)}")
        return
    out.print(f"checked {counted(report.rows, 'row')} of {counted(report.files, 'file')} in {escape(location)}: "
              f"{counted(report.findings_total, 'problem')} in "
              f"{counted(len(report.damaged_files), 'file') if report.damaged_files else 'the index itself'}{escape(stale)}\n"
              f"  fix: `memsearch check {escape(command_root)} --repair` (re-indexes the damaged files, or rebuilds) "
              f"or `memsearch index {escape(command_root)} --rebuild`")


def register(app: typer.Typer) -> None:
    """Add the ``check`` command to ``app``."""

    @app.command("check")
    def check_command(
        root: Path = RootArg,
        db: Optional[str] = typer.Option(None, "--db", help="Index directory, or s3://bucket/prefix "
                                         "(default: $MEMSEARCH_DB, else ROOT/.memsearch)."),
        model: Optional[str] = typer.Option(None, "--model", help="Embedding model: a name from models.toml or a "
                                            "local model directory."),
        repair: bool = typer.Option(False, "--repair", help="Repair what is found: re-index the damaged files (fresh "
                                    "embeddings), or rebuild the index."),
        wait: float = typer.Option(0.0, "--wait", help="Seconds to wait when another writer holds the index "
                                   "(--repair; a memsearch service or daemon holding it repairs it itself).", min=0),
        as_json: bool = typer.Option(False, "--json", help="Print one JSON object instead of a readable report."),
    ) -> None:
        """Verify every row of the index against its Markdown file and stored hashes (vectors finite, unit length)."""
        from ..engine.check import CheckReport, Finding, require_index
        from ..engine.index import MemoryIndex
        from ..engine.jobs import check_job
        from ..location import IndexLocation
        from ..service import route
        from .render import warn

        where = IndexLocation.of(root, db)

        def here() -> tuple[CheckReport, str]:
            require_index(where)  # a root never indexed: said, and nothing created
            rebuilt: list = []
            try:
                index = (MemoryIndex.open_repairing(root, db=db, model=model, on_damage=rebuilt.append) if repair
                         else MemoryIndex(root, db=db, model=model))
            except IndexDamaged as exc:
                return CheckReport(findings=(Finding("table", "", naming_root(str(exc), root)),)), str(db or root)
            if rebuilt:
                index.sync(wait=wait)
            return check_job(index, repair=repair, wait=wait), index.location

        if repair:  # the serving process that holds the index repairs it (else: here)
            data, done = route.carried_out(where, "check", {"repair": True, "wait": wait, "model": model}, here,
                                           warn=warn)
            report, location = (CheckReport.from_dict(data), where.label) if data is not None else done
        else:
            report, location = here()
        print_check(report, root, as_json=as_json, location=location)
        if not report.ok:
            raise typer.Exit(1)
