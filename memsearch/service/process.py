"""Starting and stopping serving processes: a root's daemon (detached), the per-user service; reports on both.

The commands ``memsearch watch --detach``, ``status`` and ``stop`` are thin over these.
A pid is only ever signalled after checking that it still holds the index's writer lock
(:func:`verified_holder`): a ``writer.json`` left by a killed daemon may name a pid the
system has since given to an unrelated process.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from ..errors import DaemonFailed, DaemonUnavailable, IndexLocked, shell_word, shown
from ..launch import DETACHED_CWD, python_argv
from ..location import IndexLocation, open_private, service_log_file, service_socket, service_start_file
from ..memory.files import read_json
from ..platforms import Platform, flock_taken, holds_flock, opened_by, pid_alive, process_age

__all__ = ["verified_holder", "detach", "daemon_status", "stop", "Started", "Stopped",
           "service_status", "stop_service", "silent_service", "service_starting", "START_TIMEOUT_S", "START_GRACE_S"]

#: How long ``watch --detach`` waits for the daemon to load its model, take the lock and listen.
START_TIMEOUT_S = 60.0
#: A service that holds its start file but does not listen on its socket yet is taken for starting (not hung) while
#: its process is younger than this: Python's start and the imports before it listens took up to 5 s on 2 busy
#: cores; ``stop --all`` waits that long for it to listen, then stops it.
START_GRACE_S = 30.0
#: ``status`` waits this long for the daemon to answer on its socket before reporting it not serving.
STATUS_TIMEOUT_S = 1.0
#: ``stop --all`` waits this long for a service that listens but did not answer ``status`` within
#: STATUS_TIMEOUT_S before calling it hung: one that had only just begun to listen, on 2 cores busy with the test
#: suite, missed the shorter wait (a stopped or hung one misses this one too).
FIRST_ANSWER_S = 10.0


def verified_holder(where: IndexLocation | str | os.PathLike[str], platform: Platform | None = None) -> dict | None:
    """The writer lock's holder record (as :func:`memsearch.engine.storage.lock.lock_holder`), if its pid
    really holds the lock.

    ``where``: the index's location (or its local directory). A record naming a dead pid, or a
    live pid that does not hold the lock (pid reuse after a ``kill -9``), reads as None; how the
    lock is asked is :func:`memsearch.platforms.holds_flock`'s business.
    """
    from ..engine.storage.lock import lock_holder

    where = IndexLocation.at(where)
    holder = lock_holder(where.state) if where.state.is_dir() else None
    if not holder:
        return None
    pid = holder.get("pid")
    if not isinstance(pid, int) or not holds_flock(where.lock_file, pid, platform):
        return None
    return holder


def _loading_in_service(where: IndexLocation, timeout: float = STATUS_TIMEOUT_S) -> dict | None:
    """The per-user service's line for ``where`` while it loads it (its ``waiting_for``, and the service's ``pid`` and
    ``started``), else None (no service, or it does not list that root)."""
    from .client import Client

    path = service_socket()
    if not path.exists():
        return None
    try:
        answer = Client(path=path, timeout=timeout).call("status")
    except DaemonUnavailable:
        return None
    label = where.label
    for line in answer.get("roots") or ():
        if line.get("root") == str(where.root) and line.get("db") == label:
            started = answer.get("started")
            if isinstance(started, (int, float)):  # seconds since the epoch: shown as a daemon's state file says it
                import datetime as dt

                started = dt.datetime.fromtimestamp(started, dt.timezone.utc).isoformat(timespec="seconds")
            return dict(line, pid=answer.get("pid"), started=started)
    return None


def replica_status(where: IndexLocation) -> dict | None:
    """The status of a read replica (``serve --read-only``, which holds no lock) answering on the index's socket here."""
    answer = _ask_status(where) if where.socket.exists() else None
    return answer if ((answer or {}).get("state") or {}).get("role") == "replica" else None


def _ask_status(where: IndexLocation, timeout: float = STATUS_TIMEOUT_S) -> dict | None:
    from .client import Client

    try:
        return Client(where.root, where, timeout=timeout).call("status")
    except DaemonUnavailable:
        return None


@dataclass(frozen=True)
class Started:
    """What ``watch --detach`` did: started a daemon, or found one (``already``)."""

    pid: int | None
    root: Path
    db: Path
    log: Path
    already: bool = False
    serving: bool = False
    socket: str | None = None
    reported: bool = True  # False: still starting after START_TIMEOUT_S


def detach(root, db=None, model=None, debounce=None, wait: float = 0.0, *,
           start_timeout: float = START_TIMEOUT_S, idle_exit: int | None = None) -> Started:
    """Start ``memsearch watch`` in the background, or report the daemon already keeping the index.

    Idempotent: a daemon (``watch``) already holding the index gives ``already=True``. Another
    writer (an ``index`` run) raises :class:`IndexLocked` unless ``wait``. A daemon that cannot
    be started, or exits at start, raises :class:`DaemonFailed` (with the last error line of its log).
    """
    where = IndexLocation.of(root, db)
    base, db_path, log_path = where.root, where.state, where.log_file
    holder = verified_holder(where)
    if holder and holder.get("purpose") == "watch":
        status = _ask_status(where)
        return Started(pid=holder.get("pid"), root=base, db=db_path, log=log_path, already=True,
                       serving=status is not None, socket=status.get("socket") if status else None)
    if holder and not wait:
        from ..engine.storage.lock import holder_text

        raise IndexLocked(f"the index at {db_path} is being written by {holder_text(holder)}; "
                          f"`memsearch status {shell_word(base)}` tells more, `memsearch stop {shell_word(base)}` stops a daemon")
    where.ensure_state()
    cmd = python_argv("memsearch", "watch", str(base), *where.watch_args(), "--log-file", str(log_path),
                      "--wait", str(wait))
    if model:
        cmd += ["--model", model]
    if debounce is not None:
        cmd += ["--debounce", str(debounce)]
    if idle_exit:
        cmd += ["--idle-exit", str(idle_exit)]
    offset = log_path.stat().st_size if log_path.exists() else 0
    with os.fdopen(open_private(log_path), "ab") as log:  # output before logging is set up (and crashes) land here too
        try:
            proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True,
                                    close_fds=True, cwd=DETACHED_CWD)
        except OSError as exc:  # the interpreter is gone or not executable for this user
            raise DaemonFailed(f"cannot start the daemon process {shown(cmd[0])}: {exc.strerror or exc}. Reinstall "
                               "memsearch or run `memsearch watch ROOT` in the foreground") from None
    deadline = time.monotonic() + start_timeout + wait
    while True:
        state = _read_state(where)
        if state and state.get("pid") == proc.pid and state.get("state") == "failed":
            raise DaemonFailed(f"the daemon failed at start: {state.get('error')} (log: {log_path})")
        if state and state.get("pid") == proc.pid and state.get("state") != "starting":  # its watcher runs
            return Started(pid=proc.pid, root=base, db=db_path, log=log_path, serving=bool(state.get("socket")),
                           socket=state.get("socket"))
        code = proc.poll()
        if code is not None:
            with open(log_path, "rb") as log:
                log.seek(offset)
                lines = [ln for ln in log.read().decode("utf-8", "replace").splitlines() if ln.strip()]
            last = next((ln for ln in reversed(lines) if "error" in ln.lower()), lines[-1] if lines else "no output")
            raise DaemonFailed(f"the daemon exited at start (status {code}): {last.removeprefix('error: ')} "
                               f"(log: {log_path})")
        if time.monotonic() > deadline:
            return Started(pid=proc.pid, root=base, db=db_path, log=log_path, reported=False)
        time.sleep(0.1)


def _read_state(where: IndexLocation) -> dict | None:
    state = read_json(where.state_file)
    return state if isinstance(state, dict) else None


def daemon_status(root, db=None) -> dict:
    """What ``memsearch status`` reports, as a dict: daemon, serving and socket, index size, pending changes."""
    from ..engine.storage.store import Store

    where = IndexLocation.of(root, db)
    base, db_path = where.root, where.state
    holder = verified_holder(where)
    state = _read_state(where) or {}
    running = bool(holder and holder.get("purpose") == "watch")
    answer = _ask_status(where) if running else None
    info: dict = {"root": str(base), "db": str(db_path), "running": running,
                  "pid": holder.get("pid") if running else None,
                  "since": state.get("started") if running else None,
                  "state": state.get("state") if running else ("not running" if not state else f"not running (last: {state.get('state')})"),
                  "serving": answer is not None,
                  "socket": answer.get("socket") if answer else (state.get("socket") if running else None) or str(where.socket),
                  "writer": holder if holder and not running else None,
                  "last_sync": state.get("last_sync"), "last_compaction": state.get("last_compaction"),
                  "error": state.get("error"), "log": str(where.log_file) if where.log_file.exists() else None,
                  "indexed": False, "files": 0, "chunks": 0, "model": None, "disk_bytes": 0, "pending": None,
                  "partial_files": 0, "partial_chunks": 0}
    info["by"] = "watch" if running else None  # who serves it: this user's service, or a `watch` daemon of its own
    if answer and answer.get("socket") == str(service_socket()):  # the per-user service keeps it: its log
        info.update(log=str(service_log_file()), by="service")
    elif running and answer is None and silent_service() == info["pid"]:  # the service, stopped (SIGSTOP) or hung
        info.update(log=str(service_log_file()), by="service", socket=str(service_socket()))
    # the service opening the root (its model first, then the writer lock): not yet its holder, nor serving it
    loading = None if running else _loading_in_service(where)
    info["loading"] = None if loading is None else {
        "pid": loading["pid"], "since": loading.get("started"), "waiting_for": loading.get("waiting_for"),
        "socket": str(service_socket()), "log": str(service_log_file())}
    if not running and loading is None and state and state.get("state") not in ("stopped", None):
        info["state"] += ": it did not stop cleanly; the next start catches up"
    if not running and loading is None and (answer := replica_status(where)) is not None:
        replica = answer["state"]  # what the replica says, not a daemon's state left in this folder
        info.update(by="replica", serving=True, pid=answer.get("pid"), socket=answer.get("socket"), state="replica",
                    error=replica.get("last_error"), last_sync=None, last_compaction=None,
                    replica={key: replica.get(key) for key in ("version", "rows", "errors", "last_ok_age_s")})
    remote = where.remote
    if remote:  # the tables and index.json are in the store; db_path is this machine's state for it
        info.update(db=remote, state_dir=str(db_path))
        if not running and info["writer"] is None:  # a writer on another machine: the index's lease names it
            from ..engine.storage.remote import RemoteDB, WriterLease
            info["writer"] = WriterLease(RemoteDB.parse(remote)).holder()
    elif not where.meta_file.is_file():
        return info
    for attempt in range(STATUS_READS):
        store = Store(remote or db_path, root=where.root)
        try:
            return _index_info(info, where, store)
        except (RuntimeError, OSError, ValueError):  # a rebuild or a compaction replaced a table's files under the read
            if attempt == STATUS_READS - 1:
                with store.guard():  # what is still unreadable is damage (or the store's failure), typed
                    raise
            time.sleep(0.2)


#: Reads of an index's tables ``daemon_status`` tries: a rebuild or compaction running beside it may delete the
#: files of the version a read opened ("Not found"); the next read opens the new version.
STATUS_READS = 3


def _over_limit(path: Path) -> bool:
    """Whether the file at ``path`` is over the size limit (``max_file_mb``), so that no sync indexes it."""
    from ..engine.ingest.sync import max_file_bytes

    try:
        return path.stat().st_size > max_file_bytes()
    except OSError:
        return False


def _index_info(info: dict, where: IndexLocation, store) -> dict:
    """``info`` with what the index ``store`` holds (files, chunks, pending, the text-only rows of a first build)."""
    from ..engine.storage.schema import is_incomplete
    from ..memory.tree import scan

    base = where.root
    meta = store.read_meta()
    if meta is None:
        return info
    states = store.file_states()
    tree = scan(base)
    wanted = set(tree.indexed_files(bool(meta.get("include_core"))))
    changed = unfinished = 0
    for path in wanted & set(states):
        if is_incomplete(states[path].mtime_ns, states[path].size):  # written text only, or a sync stopped inside
            unfinished += 1  # it: no whole version of it is indexed, so added, as the sync counts it (Pending.added)
            continue
        try:
            st = (base / path).stat()
        except OSError:
            continue
        changed += not states[path].same_as(st)
    info.update(partial_files=sum(is_incomplete(s.mtime_ns, s.size) for s in states.values()),
                partial_chunks=store.text_only_rows())
    missing = wanted - set(states)
    too_large = sorted(p for p in missing if _over_limit(base / p))  # never indexed: not pending (the sync says so)
    info.update(indexed=True, files=len(states), chunks=store.row_count(),
                model=meta.get("model"), disk_bytes=store.disk_bytes(), updated=meta.get("updated"), too_large=too_large,
                pending={"added": len(missing) - len(too_large) + unfinished, "changed": changed,
                         "removed": len(set(states) - wanted)})
    info["pending"]["total"] = sum(info["pending"].values())
    return info


@dataclass(frozen=True)
class Stopped:
    """What ``stop`` did. ``outcome``: ``stopped``, ``not-running``, ``not-a-daemon`` (another writer
    holds the index: ``holder``), ``not-answering`` (the per-user service holds it but does not answer:
    nothing signalled, since a SIGTERM would end every root it serves) or ``timeout`` (still running after
    the timeout)."""

    outcome: str
    root: Path
    db: Path
    pid: int | None = None
    holder: dict | None = None
    stale_pid: int | None = None  # writer.json named this live pid, which does not hold the lock
    service: bool = False  # the per-user service unloaded the root (it goes on serving the others)
    replica: int | None = None  # the pid of a read replica serving the root here (not stopped: no daemon of it)


def service_status(timeout: float = STATUS_TIMEOUT_S) -> dict | None:
    """The per-user service's ``status`` (pid, socket, memory, loaded roots), or None when none runs."""
    from .client import ask_service

    return ask_service("status", timeout=timeout)


def silent_service() -> int | None:
    """The pid of this user's service when it runs but did not answer (stopped with SIGSTOP, hung, or still
    starting): a live process holding the start file, which the service keeps open and locked for its life.
    None when the start file's lock is free (no service), or where processes' open files cannot be listed."""
    path = service_start_file()
    if not flock_taken(path):
        return None
    pids = {pid for pid in opened_by(path) or () if pid_alive(pid)}
    return min(pids) if pids else None


def service_starting(pid: int) -> bool:
    """Whether this user's service ``pid`` (:func:`silent_service`'s) is still starting rather than hung: nothing
    listens on its socket yet and its process is younger than :data:`START_GRACE_S`."""
    import socket

    age = process_age(pid)
    if age is None or age >= START_GRACE_S:
        return False
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(STATUS_TIMEOUT_S)
    try:
        sock.connect(str(service_socket()))  # a stopped or hung process that listens still accepts
    except OSError:
        return True  # no socket yet, or one left by a killed service: not bound by this one yet
    finally:
        sock.close()
    return False


def stop_service(timeout: float = 60.0) -> dict | None:
    """Stop the per-user service (each root finishes its batch in hand and releases its lock): its last
    status, or None when none ran (or one runs that does not answer: :func:`silent_service`). A service still
    starting (:func:`service_starting`) is waited for, within ``timeout``, then stopped. Raises
    :class:`DaemonFailed` when it is still running after ``timeout``."""
    from .client import ask_service

    deadline = time.monotonic() + timeout
    status = service_status()
    while status is None and (pid := silent_service()) is not None and service_starting(pid):
        if time.monotonic() > deadline:
            return None
        time.sleep(0.2)
        status = service_status()
    if status is None and silent_service() is not None:  # it listens, but no answer yet: one that has only just
        status = service_status(FIRST_ANSWER_S)  # begun to listen on a loaded machine takes longer; a hung one won't
    if status is None or ask_service("stop", timeout=max(1.0, deadline - time.monotonic())) is None:
        return None
    pid = status.get("pid")
    while isinstance(pid, int) and pid_alive(pid):
        if time.monotonic() > deadline:
            raise DaemonFailed(f"the memsearch service (pid {pid}) is still running after {timeout:.0f} s: "
                               f"wait, or `kill {pid}`")
        time.sleep(0.1)
    return status


def stop(root, db=None, timeout: float = 60.0) -> Stopped:
    """Stop serving the index: the per-user service unloads it, a daemon of its own gets SIGTERM (once
    its pid is verified to hold the lock); wait for the lock to be released."""
    from ..engine.storage.lock import lock_holder

    where = IndexLocation.of(root, db)
    base, db_path = where.root, where.state
    holder = verified_holder(where)
    if not holder:
        recorded = lock_holder(db_path) if db_path.is_dir() else None
        replica = replica_status(where)
        return Stopped("not-running", base, db_path, stale_pid=recorded.get("pid") if recorded else None,
                       replica=replica.get("pid") if replica else None)
    if holder.get("purpose") != "watch" or not holder.get("pid"):
        return Stopped("not-a-daemon", base, db_path, holder=holder)
    pid = int(holder["pid"])
    service = service_status()
    if service is None and silent_service() == pid:  # stopped or hung: unloading one root takes its answer
        return Stopped("not-answering", base, db_path, pid=pid, service=True)
    if service is not None and service.get("pid") == pid:
        from .client import Client

        try:
            Client(base, where, timeout=timeout, path=service["socket"]).call("unload")
        except DaemonUnavailable:
            pass
    else:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + timeout
    by_service = service is not None and service.get("pid") == pid
    while (now := verified_holder(where)) and now.get("pid") == pid:
        if time.monotonic() > deadline:
            return Stopped("timeout", base, db_path, pid=pid, service=by_service)
        time.sleep(0.1)
    return Stopped("stopped", base, db_path, pid=pid, service=by_service)
