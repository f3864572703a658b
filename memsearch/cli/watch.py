"""CLI commands of the indexing daemon: ``watch``, ``status``, ``stop`` (see :mod:`memsearch.watcher`).

Registered on the main app by :func:`register`. This module must not import
:mod:`memsearch.cli` (``python -m memsearch.cli`` runs that module as ``__main__``), so it
keeps its own consoles and options. Typed errors propagate to ``memsearch.cli.main``.
"""

from __future__ import annotations

import json
import logging
import logging.handlers
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.markup import escape

__all__ = ["register", "daemon_status"]

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)

RootArg = typer.Argument(..., help="The memory root: the directory holding the root MEMORY.md.", show_default=False)
DbOpt = typer.Option(None, "--db", help="Index directory, or s3://bucket/prefix (default: $MEMSEARCH_DB, else ROOT/.memsearch).")
JsonOpt = typer.Option(False, "--json", help="Print one JSON object instead of a readable report.")

#: How long ``watch --detach`` waits for the daemon to take the lock and report.
START_TIMEOUT_S = 60.0
#: The daemon's log rotates at this size (keeping LOG_BACKUPS old files).
LOG_MAX_BYTES = 5_000_000
LOG_BACKUPS = 2
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def _db_path(root: Path, db: Optional[str]) -> tuple[Path, Path]:
    from ..engine.index import default_db_path
    from ..memory.tree import resolve_root
    from ..settings import get as setting

    from ..engine.remote import local_dir

    base = resolve_root(root)
    return base, local_dir(setting("db", db) if db else default_db_path(base)).absolute()


def _holder_text(holder: dict) -> str:
    return f"process {holder.get('pid')} ({holder.get('purpose', 'a writer')}, since {holder.get('since', '?')})"


def _configure_logging(log_file: Optional[Path]) -> None:
    """Log ``memsearch.*`` at INFO to stderr, or to a rotating ``log_file`` (a detached daemon)."""
    logger = logging.getLogger("memsearch")
    for handler in [h for h in logger.handlers if getattr(h, "_memsearch_cli", False)]:
        logger.removeHandler(handler)
        handler.close()
    if log_file is not None:
        handler = logging.handlers.RotatingFileHandler(log_file, maxBytes=LOG_MAX_BYTES, backupCount=LOG_BACKUPS)
    else:
        handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    handler._memsearch_cli = True  # type: ignore[attr-defined]
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)


def watch_command(
    root: Path = RootArg,
    db: Optional[str] = DbOpt,
    model: Optional[str] = typer.Option(None, "--model", help="Embedding model: a name from models.toml or a local model directory."),
    debounce: Optional[int] = typer.Option(None, "--debounce", metavar="MS", help="Longest wait (ms) to group file events before a sync (default: $MEMSEARCH_DEBOUNCE_MS, else 300)."),
    detach: bool = typer.Option(False, "--detach", help="Run in the background; pid, state and log go next to the index."),
    wait: float = typer.Option(0.0, "--wait", metavar="SECONDS", min=0.0, help="Wait this long for another writer of the index to finish (default: exit at once, naming it)."),
    log_file: Optional[Path] = typer.Option(None, "--log-file", hidden=True),
) -> None:
    """Keep the index fresh: catch up on changes, then follow file events until Ctrl-C or `memsearch stop`."""
    from ..service.watcher import resolve_debounce, serve

    resolve_debounce(debounce)  # a bad value fails here, not in the background
    if detach:
        _detach(root, db, model, debounce, wait)
        return
    _configure_logging(log_file)
    code = serve(root, db=db, model=model, debounce=debounce, lock_timeout=wait)
    raise typer.Exit(code)


def _detach(root: Path, db: Optional[str], model: Optional[str], debounce: Optional[int], wait: float) -> None:
    from ..errors import IndexLocked, MemsearchError
    from ..engine.lock import lock_holder
    from ..service.watcher import LOG_FILE, read_state

    base, db_path = _db_path(root, db)
    holder = lock_holder(db_path) if db_path.is_dir() else None
    if holder and not wait:
        raise IndexLocked(f"the index at {db_path} is being written by {_holder_text(holder)}; "
                          f"`memsearch status {base}` tells more, `memsearch stop {base}` stops a daemon")
    db_path.mkdir(parents=True, exist_ok=True)
    log_path = db_path / LOG_FILE
    from ..engine.index import default_db_path

    given = str(db or default_db_path(base))
    target = given if "://" in given else str(db_path)  # a remote index: its URI (db_path is its local state)
    cmd = [sys.executable, "-m", "memsearch", "watch", str(base), "--db", target,
           "--log-file", str(log_path), "--wait", str(wait)]
    if model:
        cmd += ["--model", model]
    if debounce is not None:
        cmd += ["--debounce", str(debounce)]
    offset = log_path.stat().st_size if log_path.exists() else 0
    with open(log_path, "ab") as log:  # output before logging is set up (and crashes) land here too
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True, close_fds=True)
    deadline = time.monotonic() + START_TIMEOUT_S + wait
    while True:
        state = read_state(db_path)
        if state and state.get("pid") == proc.pid:
            break
        code = proc.poll()
        if code is not None:
            with open(log_path, "rb") as log:
                log.seek(offset)
                lines = [ln for ln in log.read().decode("utf-8", "replace").splitlines() if ln.strip()]
            last = next((ln for ln in reversed(lines) if "error" in ln.lower()), lines[-1] if lines else "no output")
            raise MemsearchError(f"the daemon exited at start (status {code}): {last.removeprefix('error: ')} (log: {log_path})")
        if time.monotonic() > deadline:
            err.print(f"[yellow]warning:[/yellow] the daemon (pid {proc.pid}) has not reported within {START_TIMEOUT_S:.0f} s; "
                      f"it keeps starting in the background: see `memsearch status {escape(str(base))}` and {escape(str(log_path))}")
            return
        time.sleep(0.1)
    out.print(f"memsearch daemon started: pid {proc.pid}, watching {escape(str(base))}\n"
              f"  index {escape(str(db_path))}\n  log   {escape(str(log_path))}\n"
              f"  `memsearch status {escape(str(base))}` tells how it is doing, `memsearch stop {escape(str(base))}` stops it")


def daemon_status(root, db=None) -> dict:
    """What ``memsearch status`` reports, as a dict: daemon, index size, pending changes."""
    from ..engine.lock import lock_holder
    from ..engine.store import Store
    from ..memory.tree import scan
    from ..service.watcher import LOG_FILE, read_state

    base, db_path = _db_path(Path(root), db)
    holder = lock_holder(db_path) if db_path.is_dir() else None
    state = read_state(db_path) or {}
    running = bool(holder and holder.get("purpose") == "watch")
    info: dict = {"root": str(base), "db": str(db_path), "running": running,
                  "pid": holder.get("pid") if running else None,
                  "since": state.get("started") if running else None,
                  "state": state.get("state") if running else ("not running" if not state else f"not running (last: {state.get('state')})"),
                  "writer": holder if holder and not running else None,
                  "last_sync": state.get("last_sync"), "last_compaction": state.get("last_compaction"),
                  "error": state.get("error"), "log": str(db_path / LOG_FILE) if (db_path / LOG_FILE).exists() else None,
                  "indexed": False, "files": 0, "chunks": 0, "model": None, "disk_bytes": 0, "pending": None}
    if not running and state and state.get("state") not in ("stopped", None):
        info["state"] += ": it did not stop cleanly; the next start catches up"
    if not (db_path / "index.json").is_file():
        return info
    store = Store(db_path)
    meta = store.read_meta() or {}
    states = store.file_states()
    chunks = store.chunks()
    tree = scan(base)
    wanted = set(tree.external_files) | (set(tree.core_files) if meta.get("include_core") else set())
    changed = 0
    for path in wanted & set(states):
        try:
            st = (base / path).stat()
        except OSError:
            continue
        changed += st.st_mtime_ns != states[path].mtime_ns or st.st_size != states[path].size
    info.update(indexed=True, files=len(states), chunks=chunks.count_rows() if chunks is not None else 0,
                model=meta.get("model"), disk_bytes=store.disk_bytes(), updated=meta.get("updated"),
                pending={"added": len(wanted - set(states)), "changed": changed, "removed": len(set(states) - wanted)})
    info["pending"]["total"] = sum(info["pending"].values())
    return info


def status_command(root: Path = RootArg, db: Optional[str] = DbOpt, as_json: bool = JsonOpt) -> None:
    """Tell whether a daemon keeps this index fresh: pid, last sync, files, chunks, pending changes, size."""
    info = daemon_status(root, db)
    if as_json:
        sys.stdout.write(json.dumps(info, indent=2) + "\n")
        return
    if info["running"]:
        out.print(f"daemon: [green]running[/green], pid {info['pid']} since {info['since']} ({info['state']})")
    else:
        out.print(f"daemon: [yellow]{escape(info['state'])}[/yellow]")
        if info["writer"]:
            out.print(f"  the index is being written by {escape(_holder_text(info['writer']))}")
    if info["error"]:
        out.print(f"  [red]last error:[/red] {escape(info['error'])}")
    sync = info["last_sync"]
    if sync:
        out.print(f"last sync: {sync.get('at')}: {sync['files_added']} added, {sync['files_changed']} changed, "
                  f"{sync['files_removed']} removed; {sync['chunks_embedded']} chunks embedded, "
                  f"{sync['chunks_reused']} reused; {sync['seconds']:.2f} s")
    if info["last_compaction"]:
        out.print(f"last compaction: {info['last_compaction']}")
    if not info["indexed"]:
        out.print(f"index: none yet at {escape(info['db'])} (`memsearch index {escape(info['root'])}` or `memsearch watch`)")
        return
    pending = info["pending"]
    out.print(f"index: {escape(info['db'])}: {info['files']:,} files, {info['chunks']:,} chunks, "
              f"model {escape(str(info['model']))}, {info['disk_bytes'] / 1e6:,.1f} MB on disk")
    out.print(f"pending: {pending['total']} changes not yet indexed ({pending['added']} added, "
              f"{pending['changed']} changed, {pending['removed']} removed)")
    if info["log"]:
        out.print(f"log: {escape(info['log'])}")


def stop_command(
    root: Path = RootArg,
    db: Optional[str] = DbOpt,
    timeout: float = typer.Option(60.0, "--timeout", metavar="SECONDS", min=0.0, help="How long to wait for the daemon to finish its batch in hand."),
) -> None:
    """Stop the daemon of this index (SIGTERM): it finishes the batch in hand, releases the lock, exits."""
    from ..engine.lock import lock_holder

    base, db_path = _db_path(root, db)
    holder = lock_holder(db_path) if db_path.is_dir() else None
    if not holder:
        out.print(f"no memsearch daemon is running for {escape(str(base))} (index {escape(str(db_path))})")
        return
    if holder.get("purpose") != "watch" or not holder.get("pid"):
        err.print(f"the index is being written by {escape(_holder_text(holder))}, not by a daemon; it stops by itself when done")
        raise typer.Exit(1)
    pid = int(holder["pid"])
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    deadline = time.monotonic() + timeout
    while (now := lock_holder(db_path)) and now.get("pid") == pid:
        if time.monotonic() > deadline:
            err.print(f"[red]error:[/red] the daemon (pid {pid}) is still running after {timeout:.0f} s (it finishes the batch "
                      f"in hand first). Wait, or `kill -9 {pid}`: the next start recovers the index")
            raise typer.Exit(1)
        time.sleep(0.1)
    out.print(f"stopped the memsearch daemon (pid {pid}) of {escape(str(base))}")


def register(app: typer.Typer) -> None:
    """Add ``watch``, ``status`` and ``stop`` to the ``memsearch`` app."""
    app.command("watch")(watch_command)
    app.command("status")(status_command)
    app.command("stop")(stop_command)
