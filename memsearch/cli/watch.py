"""CLI commands of the serving processes: ``watch``, ``service``, ``status``, ``stop`` (see docs/daemon.md).

Thin over :mod:`memsearch.service.host` (running them) and :mod:`memsearch.service.process`
(starting, reporting on and stopping them).
Registered on the main app by :func:`register`. Typed errors propagate to ``memsearch.cli.main``.
"""

from __future__ import annotations

import json
import logging
import logging.handlers
import os
import sys
from pathlib import Path
from typing import Optional

import typer

from .options import DbOpt, JsonOpt, ModelOpt, RootArg, root_arg, setting_option
from .render import counted, err, escape, out

__all__ = ["register", "daemon_status"]

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class PrivateLog(logging.handlers.RotatingFileHandler):
    """A rotating log whose files are owner-only (0600), the fresh one after each rollover too."""

    def _open(self):
        from ..location import open_private

        return os.fdopen(open_private(self.baseFilename), self.mode, encoding=self.encoding, errors=self.errors)


def _configure_logging(log_file: Optional[Path]) -> None:
    """Log ``memsearch.*`` at INFO to stderr, or to a rotating ``log_file`` (a detached daemon)."""
    logger = logging.getLogger("memsearch")
    for handler in [h for h in logger.handlers if getattr(h, "_memsearch_cli", False)]:
        logger.removeHandler(handler)
        handler.close()
    if log_file is not None:
        from ..location import LOG_BACKUPS, LOG_MAX_BYTES

        handler = PrivateLog(log_file, maxBytes=LOG_MAX_BYTES, backupCount=LOG_BACKUPS)
    else:
        handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    handler._memsearch_cli = True  # type: ignore[attr-defined]
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)


def watch_command(
    root: Path = RootArg,
    db: Optional[str] = DbOpt,
    model: Optional[str] = ModelOpt,
    debounce: Optional[int] = setting_option(
        "debounce_ms",
        "--debounce",
        metavar="MS",
        help="Longest wait (ms) to group file events before a sync (default: $MEMSEARCH_DEBOUNCE_MS, else 300).",
    ),
    detach: bool = typer.Option(
        False, "--detach", help="Run in the background; pid, state and log go next to the index."
    ),
    wait: float = typer.Option(
        0.0,
        "--wait",
        metavar="SECONDS",
        min=0.0,
        help="Wait this long for another writer of the index to finish (default: exit at once, naming it).",
    ),
    idle_exit: Optional[int] = setting_option(
        "idle_exit",
        "--idle-exit",
        metavar="SECONDS",
        help="Exit after this many seconds without a client request (default: never; an auto-started daemon: $MEMSEARCH_IDLE_EXIT).",
    ),
    standby: bool = typer.Option(
        False,
        "--standby",
        help="Wait for the writer lock however long it takes (a standby writer of an s3:// index: it takes over when "
        "the writer's lease lapses, from the last commit); see docs/scale-out.md.",
    ),
    log_file: Optional[Path] = typer.Option(None, "--log-file", hidden=True),
) -> None:
    """Keep the index fresh: catch up on changes, then follow file events until Ctrl-C or `memsearch stop`."""
    from ..service.watcher import resolve_debounce

    resolve_debounce(debounce)  # a bad value fails here, not in the background
    if standby and (detach or wait):
        from ..errors import InvalidArgument

        raise InvalidArgument("--standby waits for the lock as long as it takes: leave out --wait and --detach "
                              "(run it under your process supervisor)")
    if detach:
        _detach(root, db, model, debounce, wait, idle_exit)
        return
    from ..errors import IndexLocked
    from ..service.host import run_watch

    if not standby and not wait:  # before the model loads: a refusal costs no seconds and logs nothing
        _refuse_if_served(root, db)
    _configure_logging(log_file)
    try:
        code = run_watch(root, db=db, model=model, debounce=debounce, wait=None if standby else wait,
                         idle_exit=idle_exit)
    except IndexLocked:
        _refuse_if_served(root, db)
        raise
    raise typer.Exit(code)


def _refuse_if_served(root: Path, db: Optional[str]) -> None:
    """Raise the refusal of a ``watch`` whose root a serving process keeps already: the per-user service (the first
    search started it), with the commands that hand the root over, or a ``watch`` daemon, with the command that
    stops it; instead of a writer to wait for."""
    from ..errors import IndexLocked, shell_word
    from ..location import IndexLocation
    from ..service.process import service_status, silent_service, verified_holder

    where = IndexLocation.of(root, db)
    holder = verified_holder(where)
    if not holder or holder.get("purpose") != "watch" or not isinstance(holder.get("pid"), int):
        return
    pid, base = holder["pid"], shell_word(root) + (f" --db {shell_word(db)}" if db else "")  # as given
    service = service_status()
    if (service is not None and service.get("pid") == pid) or (service is None and silent_service() == pid):
        raise IndexLocked(f"the memsearch service (pid {pid}) already keeps {where.root} fresh and answers for it: "
                          f"nothing to start. For a daemon of its own instead: `memsearch stop {base}`, then "
                          f"`memsearch watch {base}`") from None
    raise IndexLocked(f"a watch daemon (pid {pid}) already keeps {where.root} fresh and answers for it: nothing to "
                      f"start; `memsearch status {base}` tells how it is doing, `memsearch stop {base}` stops it") from None


def service_command(
    idle_exit: Optional[int] = setting_option(
        "idle_exit",
        "--idle-exit",
        metavar="SECONDS",
        help="Unload a root after this many seconds without a request (default: $MEMSEARCH_IDLE_EXIT); "
        "the service exits when no root is left.",
    ),
    root: Optional[Path] = typer.Option(None, "--root", hidden=True),
    db: Optional[str] = typer.Option(None, "--db", hidden=True),
    model: Optional[str] = typer.Option(None, "--model", hidden=True),
    start_fd: Optional[int] = typer.Option(None, "--start-fd", hidden=True),
    log_file: Optional[Path] = typer.Option(None, "--log-file", hidden=True),
) -> None:
    """Run this user's memsearch service in the foreground (normally started in the background by the first call)."""
    from .. import settings
    from ..service.host import run_service

    settings.check_all()  # as a command that starts it in the background does: a bad variable, before it serves
    _configure_logging(log_file)
    raise typer.Exit(run_service(root=root, db=db, model=model, idle_exit=settings.get("idle_exit", idle_exit),
                                 start_fd=start_fd))


def _detach(
    root: Path, db: Optional[str], model: Optional[str], debounce: Optional[int], wait: float, idle_exit: Optional[int]
) -> None:
    from ..errors import shell_word
    from ..service.process import START_TIMEOUT_S, detach

    started = detach(root, db, model, debounce, wait, idle_exit=idle_exit)
    db_path, log_path = (escape(str(p)) for p in (started.db, started.log))
    base = escape(shell_word(root) + (f" --db {shell_word(db)}" if db else ""))  # the root as given, in the commands below
    if started.already:
        serving = f", serving on {escape(started.socket)}" if started.serving else " (not answering on its socket yet)"
        out.print(
            f"a memsearch daemon already keeps this index: pid {started.pid}{serving}\n"
            f"  index {db_path}\n  `memsearch status {base}` tells how it is doing, `memsearch stop {base}` stops it"
        )
        return
    if not started.reported:
        err.print(
            f"[yellow]warning:[/yellow] the daemon (pid {started.pid}) has not reported within {START_TIMEOUT_S:.0f} s; "
            f"it keeps starting in the background: see `memsearch status {base}` and {log_path}"
        )
        return
    out.print(
        f"memsearch daemon started: pid {started.pid}, watching {escape(str(started.root))}\n"
        f"  index  {db_path}\n  socket {escape(str(started.socket))}\n  log    {log_path}\n"
        f"  `memsearch status {base}` tells how it is doing, `memsearch stop {base}` stops it"
    )


def daemon_status(root, db=None) -> dict:
    """What ``memsearch status`` reports (see :func:`memsearch.service.process.daemon_status`)."""
    from ..service.process import daemon_status as status

    return status(root, db)


def status_command(root: Optional[Path] = root_arg(None, help="A memory root (default: list the roots the "
                                                   "per-user service has loaded)."),
                   db: Optional[str] = DbOpt, as_json: bool = JsonOpt) -> None:
    """Tell how one root's index is kept fresh (pid, last sync, files, chunks, pending changes, size), or with no
    ROOT, what this user's memsearch service has loaded."""
    if root is None:
        _service_status(as_json)
        return
    info = daemon_status(root, db)
    if as_json:
        sys.stdout.write(json.dumps(info, indent=2) + "\n")
        return
    from ..engine.storage.lock import holder_text

    if info["running"]:
        by = "the memsearch service" if info["by"] == "service" else "a watch daemon"
        out.print(f"served by {by}: [green]running[/green], pid {info['pid']} since {info['since']} ({info['state']})")
        out.print(
            f"  serving on {escape(info['socket'])}"
            if info["serving"]
            else f"  [yellow]not answering[/yellow] on {escape(info['socket'])}: clients work in-process"
            + (f"; {_end_silent(info['pid'])}" if info["by"] == "service" else "")
        )
    elif info["by"] == "replica":  # `serve --read-only` on this machine: it follows the index's writer
        replica = info["replica"]
        serves = "no index yet" if replica["version"] is None else f"version {replica['version']}"
        out.print(f"served by a read replica: [green]running[/green], pid {info['pid']}, {serves} ({replica['errors']:,} "
                  f"failed polls; last good poll {replica['last_ok_age_s']} s ago)")
        out.print(f"  serving on {escape(info['socket'])}; the index's writer is another process")
    elif info.get("loading"):  # the service opens it: its model first, then the writer lock
        loading = info["loading"]
        waits = f": waits for {loading['waiting_for']}" if loading.get("waiting_for") else ""
        out.print(f"served by the memsearch service: [yellow]loading[/yellow] the root, pid {loading['pid']} since "
                  f"{loading['since']}{escape(waits)}")
        out.print(f"  serving on {escape(loading['socket'])} once loaded")
    else:
        last = info["state"].removeprefix("not running").strip()  # "(last: stopped)", and why it matters
        out.print(f"served by: [yellow]no memsearch process[/yellow]{' ' + escape(last) if last else ''}")
        if info["writer"]:
            out.print(f"  the index is being written by {escape(holder_text(info['writer']))}")
    if info["error"]:
        out.print(f"  [red]last error:[/red] {escape(info['error'])}")
    sync = info["last_sync"]
    if sync:
        out.print(
            f"last sync: {sync.get('at')}: {sync['files_added']:,} added, {sync['files_changed']:,} changed, "
            f"{sync['files_removed']:,} removed; {counted(sync['chunks_embedded'], 'chunk')} embedded, "
            f"{sync['chunks_reused']:,} reused; {sync['seconds']:.2f} s"
        )
    if info["last_compaction"]:
        out.print(f"last compaction: {info['last_compaction']}")
    if not info["indexed"]:
        from ..errors import shell_word
        from ..memory.tree import INDEX_NAME

        base = escape(shell_word(root))  # as given, in the commands named below
        if not (Path(info["root"]) / INDEX_NAME).is_file():  # a typo'd or wrong folder: never "index it"
            out.print(f"index: none; {escape(info['root'])} has no MEMORY.md, so it is no memory root: check the path, or see what "
                      f"a memory root needs with `memsearch validate {base}`")
            return
        base += escape(f" --db {shell_word(db)}") if db else ""  # the index asked about, not ROOT/.memsearch
        out.print(f"index: none yet at {escape(info['db'])} (`memsearch index {base}` or `memsearch watch {base}`)")
        return
    pending = info["pending"]
    out.print(
        f"index: {escape(info['db'])}: {counted(info['files'], 'file')}, {counted(info['chunks'], 'chunk')}, "
        f"model {escape(str(info['model']))}, {info['disk_bytes'] / 1e6:,.1f} MB on disk"
    )
    if info["partial_files"] or info["partial_chunks"]:
        out.print(f"  [yellow]partial:[/yellow] {counted(info['partial_files'], 'file')} still being indexed, "
                  f"{counted(info['partial_chunks'], 'chunk')} found by keyword only until embedded")
    out.print(
        f"pending: {counted(pending['total'], 'change')} not yet indexed ({pending['added']:,} added, "
        f"{pending['changed']:,} changed, {pending['removed']:,} removed)"
    )
    if info.get("too_large"):
        out.print(f"  [yellow]left out:[/yellow] {counted(len(info['too_large']), 'file')} over the size limit "
                  f"(MEMSEARCH_MAX_FILE_MB), never indexed: {escape(', '.join(info['too_large'][:3]))}"
                  + (", ..." if len(info["too_large"]) > 3 else ""))
    if info["log"]:
        out.print(f"log: {escape(info['log'])}")


def _service_status(as_json: bool) -> None:
    from ..location import service_socket
    from ..service.process import service_starting, service_status, silent_service

    info = service_status()
    silent = silent_service() if info is None else None
    starting = silent is not None and service_starting(silent)
    if as_json:
        if info is not None:  # the service answered: its own report
            running = {"running": True, **info}
        else:  # none answered: say whether a silent one holds the lock, and on which socket it would serve
            running = {"running": silent is not None, "socket": str(service_socket()), "roots": []}
            if silent is not None:
                running.update(pid=silent, answering=False, starting=starting)
        sys.stdout.write(json.dumps(running, indent=2) + "\n")
        return
    if starting:
        out.print(f"memsearch service: [yellow]starting[/yellow], pid {silent} (not listening on "
                  f"{escape(str(service_socket()))} yet); commands answer in-process meanwhile")
        return
    if silent is not None:
        out.print(f"memsearch service: [red]not answering[/red], pid {silent} (stopped or hung), "
                  f"socket {escape(str(service_socket()))}")
        out.print(f"  commands answer in-process meanwhile; {_end_silent(silent)}")
        return
    if info is None:
        out.print(f"memsearch service: not running (it starts with the first search; socket {escape(str(service_socket()))})")
        return
    rss = info.get("rss_bytes")
    out.print(f"memsearch service: [green]running[/green], pid {info['pid']}, serving on {escape(info['socket'])}"
              + (f", {rss / 1e6:,.0f} MB resident" if rss else ""))
    if not info["roots"]:
        out.print("  no memory root loaded")
        return
    for r in info["roots"]:
        files = "- files" if r["files"] is None else counted(r["files"], "file")
        chunks = "- chunks" if r["chunks"] is None else counted(r["chunks"], "chunk")
        memory = "-" if r["memory_bytes"] is None else f"{r['memory_bytes'] / 1e6:,.1f} MB"
        pending = r["pending"] if r["pending"] is not None else 0
        phase = "loading" if r.get("waiting_for") else escape(str(r.get("state") or r["phase"]))
        model = f", model {escape(r['model'])}" if r.get("model") else ""
        waits = f": waits for {escape(r['waiting_for'])}" if r.get("waiting_for") else ""
        out.print(f"  {escape(r['root'])}{_index_of(r['root'], r.get('db'))}: {files}, {chunks}, {pending:,} pending, "
                  f"{memory} in memory ({phase}{waits}{model})")


def _index_of(root, db) -> str:
    """`` (index DB)`` for an index that is not the root's own ``ROOT/.memsearch`` (one ``--db`` asked for), so that
    two indexes of one root can be told apart, and stopped (``memsearch stop ROOT --db DB``); else nothing."""
    from ..location import DB_DIRNAME

    return "" if db in (None, str(Path(root) / DB_DIRNAME)) else f" (index {escape(str(db))})"


def _end_silent(pid: int) -> str:
    return (f"`kill {pid}` ends it (`kill -CONT {pid}` first if it was stopped, `kill -9 {pid}` if it stays), and the "
            "next search starts a fresh one")


def _refuse_silent(pid: int) -> None:
    """``stop`` of a service that does not answer: the ``kill`` that ends it, exit status 1."""
    err.print(f"[red]error:[/red] the memsearch service (pid {pid}) does not answer: {_end_silent(pid)}")
    raise typer.Exit(1)


def stop_command(
    root: Optional[Path] = root_arg(None, help="The memory root whose serving to stop."),
    db: Optional[str] = DbOpt,
    all_roots: bool = typer.Option(False, "--all", help="Stop this user's memsearch service (every root it serves)."),
    timeout: float = typer.Option(
        60.0,
        "--timeout",
        metavar="SECONDS",
        min=0.0,
        help="How long to wait for the daemon to finish its batch in hand.",
    ),
) -> None:
    """Stop serving a root: the service unloads it, a daemon of its own (`watch`) exits; `--all` stops the service.
    Either finishes the batch in hand and releases the index's lock."""
    from ..engine.storage.lock import holder_text
    from ..errors import InvalidArgument
    from ..service.process import silent_service, stop, stop_service

    if all_roots == (root is not None):  # neither, or both: what is meant is not known, so nothing is stopped
        raise InvalidArgument(("give either ROOT or --all, not both" if all_roots else "name the memory root to stop "
                               "serving") + ": `memsearch stop ROOT` unloads one root (a watch daemon of it exits), "
                              "`memsearch stop --all` stops the service")
    if all_roots:
        stopped = stop_service(timeout)
        silent = silent_service() if stopped is None else None
        if silent is not None:
            _refuse_silent(silent)
        if stopped is None:
            out.print("the memsearch service is not running")
        else:
            out.print(f"stopped the memsearch service (pid {stopped['pid']}, {counted(len(stopped['roots']), 'root')} unloaded)")
        return
    result = stop(root, db, timeout)
    base = escape(str(result.root))
    if result.outcome == "not-running":
        from ..location import IndexLocation

        out.print(f"no memsearch daemon is running for {base} (index {escape(IndexLocation.of(root, db).label)})")
        if result.replica:
            out.print(f"  a read replica (pid {result.replica}) serves it here: it writes nothing and holds no lease; "
                      f"stop it where it was started (Ctrl-C, its supervisor, or `kill {result.replica}`)")
        from ..service.process import service_status

        if service_status():
            out.print("  the memsearch service runs, but does not serve this root: `memsearch status` lists the roots "
                      "it serves")
        if result.stale_pid:
            out.print(
                f"  the lock's holder record names process {result.stale_pid}, which does not hold the index lock "
                "(a record left by a killed daemon; that pid is another process now): not signalled"
            )
        return
    if result.outcome == "not-a-daemon":
        err.print(
            f"the index is being written by {escape(holder_text(result.holder))}, not by a daemon; it stops by itself when done"
        )
        raise typer.Exit(1)
    if result.outcome == "not-answering":
        _refuse_silent(result.pid)
    if result.outcome == "timeout":
        err.print(
            f"[red]error:[/red] the daemon (pid {result.pid}) is still running after {timeout:.0f} s (it finishes the batch "
            f"in hand first). Wait, or `kill -9 {result.pid}`: the next start recovers the index"
        )
        raise typer.Exit(1)
    if result.service:
        out.print(f"the memsearch service (pid {result.pid}) no longer serves {base}{_index_of(result.root, result.db)}")
        return
    out.print(f"stopped the memsearch daemon (pid {result.pid}) of {base}")


def register(app: typer.Typer) -> None:
    """Add ``watch``, ``service``, ``status`` and ``stop`` to the ``memsearch`` app."""
    app.command("watch")(watch_command)
    app.command("service")(service_command)
    app.command("status")(status_command)
    app.command("stop")(stop_command)
