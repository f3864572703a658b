"""``memsearch index``: carried out by the serving process that holds the index, else in this process (see docs/daemon.md).

Whoever does the work, the same functions run (:mod:`memsearch.engine.jobs`), so the report,
the progress bar and the exit status are the same. Registered by :func:`register`.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Optional

import typer

from ..errors import IndexLocked
from ..service import route
from .check import print_check
from .options import DbOpt, JsonOpt, ModelOpt, RootArg
from .render import emit_json, err, escape, out, warn

__all__ = ["register", "ProgressBar", "print_notes"]


class ProgressBar:
    """A rich progress bar fed by ``progress(phase, done, total, chunks)`` (or a server's progress lines):
    files and chunks/s while indexing, then an indeterminate bar while the ANN index builds."""

    def __init__(self, show: bool):
        self.show = show
        self._bar = None
        self._task = None
        self._phase = None
        self._started = time.perf_counter()

    def __enter__(self) -> "ProgressBar":
        return self

    def __exit__(self, *exc) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None

    def line(self, message: dict) -> None:
        """One progress line of the protocol."""
        try:
            self(str(message["phase"]), int(message["done"]), int(message["total"]), int(message["chunks"]))
        except (KeyError, TypeError, ValueError):
            pass

    def __call__(self, phase: str, done: int, total: int, chunks: int) -> None:
        if not self.show or phase not in ("index", "vector"):
            return
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        if phase != self._phase:
            self.__exit__()
            self._phase = phase
            if phase == "index":
                columns = [TextColumn("[bold]indexing"), BarColumn(), MofNCompleteColumn(), TextColumn("files"),
                           TextColumn("{task.fields[chunks]} chunks embedded ({task.fields[rate]} chunks/s)"),
                           TimeElapsedColumn(), TimeRemainingColumn()]
            else:
                columns = [TextColumn("[bold]building the vector index (ANN)"), BarColumn(), TimeElapsedColumn()]
            self._bar = Progress(*columns, console=err, transient=True)
            self._bar.start()
            self._task = self._bar.add_task(phase, total=None, chunks=0, rate="-")
        if phase == "index":
            elapsed = max(time.perf_counter() - self._started, 1e-6)
            self._bar.update(self._task, completed=done, total=total or None, chunks=chunks,
                             rate=f"{chunks / elapsed:,.0f}")


def print_notes(notes) -> None:
    for level, text in notes:
        err.print(f"[yellow]{escape(level)}:[/yellow] {escape(text)}")


def _in_process(where, *, model, include_core, rebuild, wait, ray, check, bar: ProgressBar):
    from ..engine.jobs import index_job, open_for_index
    from ..engine.storage.lock import lock_holder

    embedder = None
    if ray:
        from ..engine.embed.distributed import RayEmbedder

        embedder = RayEmbedder(ray, model=model)
    try:
        notes: list = []
        index = open_for_index(where.root, db=where, model=model, include_core=include_core, rebuild=rebuild,
                               embedder=embedder, notes=notes)
        print_notes(notes)
        holder = lock_holder(index.db_path)
        if holder and wait > 0:
            err.print(f"waiting up to {wait:g} s for process {holder['pid']} ({holder.get('purpose', 'a writer')}) "
                      "to release the index")
        return index_job(index, wait=wait, check=check, progress=bar if bar.show else None)
    finally:
        if embedder is not None:
            embedder.close()


def _left_to_the_service(root, db, rebuild: bool) -> None:
    """Ctrl-C while the service indexes (or rebuilds) for this command: the service does not stop with it."""
    from ..errors import naming_root

    what = "rebuild" if rebuild else "indexing"
    err.print(escape(naming_root(f"interrupted: the memsearch service goes on with the {what}; follow it with "
                                 "`memsearch status ROOT`", root, db)))


def register(app: typer.Typer) -> None:
    """Add the ``index`` command to ``app``."""

    @app.command("index")
    def index_command(
        root: Path = RootArg,
        db: Optional[str] = DbOpt,
        model: Optional[str] = ModelOpt,
        rebuild: bool = typer.Option(
            False, "--rebuild", help="Drop the index and build it again (after changing model or chunker)."
        ),
        include_core: Optional[bool] = typer.Option(
            None, "--include-core/--no-include-core", help="Also index root (core) files; remembered by the index."
        ),
        wait: float = typer.Option(
            0.0,
            "--wait",
            help="Seconds to wait when another writer holds the index (not a memsearch service or daemon, which does "
                 "the indexing itself); 0 exits at once naming it.",
            min=0,
        ),
        ray: Optional[str] = typer.Option(
            None,
            "--ray",
            help="Embed on a Ray cluster: `local` (a private one), `auto`, or ray://HOST:PORT. Needs the ray extra.",
        ),
        check: bool = typer.Option(
            False, "--check", help="Then verify every row against its file (memsearch check) and repair what is damaged."
        ),
        as_json: bool = JsonOpt,
    ) -> None:
        """Index external memory (incremental: only changed files are re-chunked, only changed chunks re-embedded)."""
        from ..engine.jobs import IndexJob
        from ..location import IndexLocation

        where = IndexLocation.of(root, db)
        with ProgressBar(show=not as_json and err.is_terminal) as bar:
            indexing_here = []  # True once this process indexes (a Ctrl-C then stops it, not the service)

            def here():
                indexing_here.append(True)
                try:
                    return _in_process(where, model=model, include_core=include_core, rebuild=rebuild, wait=wait,
                                       ray=ray, check=check, bar=bar)
                except IndexLocked:  # maybe the service, loading the root, took it: route.carried_out asks it
                    indexing_here.clear()
                    raise

            if ray:  # a Ray cluster is this command's own choice: it embeds here
                job = here()
            else:
                params = {"rebuild": rebuild, "model": model, "include_core": include_core, "check": check,
                          "wait": wait}
                try:
                    data, job = route.carried_out(where, "index", params, here, progress=bar.line, warn=warn)
                except KeyboardInterrupt:  # the service, asked already, goes on: say so, and how to follow it
                    if indexing_here:
                        raise
                    bar.__exit__()
                    _left_to_the_service(root, db, rebuild)
                    raise typer.Exit(130) from None
                if data is not None:
                    job = IndexJob.from_dict(data)
                    print_notes(job.notes)
        report, checked = job.report, job.checked
        if report.repaired:
            err.print(f"[yellow]warning:[/yellow] {escape(report.repaired)}: the index was rebuilt from the Markdown")
        for path in report.too_large:
            err.print(f"[yellow]warning:[/yellow] {escape(path)} is over the size limit (MEMSEARCH_MAX_FILE_MB): "
                      "not indexed")
        for path in report.bad_names:
            err.print(f"[yellow]warning:[/yellow] {escape(path)}: the name is not valid UTF-8, so it is not memory "
                      "(not indexed): rename it")
        if checked is not None and not as_json:
            print_check(checked, root, as_json=False, location=job.location)
        if as_json:
            data = job.to_dict()
            data.pop("root")
            data.pop("notes")
            emit_json(data)
        else:
            out.print(
                f"indexed {escape(job.root)} -> {escape(job.location)}\n"
                f"  files: {report.files_added:,} added, {report.files_changed:,} changed, {report.files_removed:,} removed, "
                f"{report.files_unchanged:,} unchanged\n"
                f"  chunks: {report.chunks_embedded:,} embedded, {report.chunks_reused:,} reused, "
                f"{report.chunks_total:,} in the index\n"
                f"  {report.seconds:.2f} s" + ("\n  vector index (ANN) built" if job.built else "")
            )
        if checked is not None and not checked.ok:
            raise typer.Exit(1)
