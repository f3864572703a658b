"""What differs between the systems memsearch runs on (Linux, macOS), each with a documented fallback.

Two questions need the kernel's help, and each system answers them its own way:

* **Who is at the other end of a Unix socket** (:func:`peer_uid`, :func:`peer`): Linux has
  ``SO_PEERCRED`` (pid, uid, gid); macOS and the BSDs have ``LOCAL_PEERCRED`` (a ``struct xucred``:
  uid, no pid). Fallback, where neither works: the peer is unknown (None), and the socket's
  owner-only folder (mode 0700, checked before binding and before connecting) is what keeps
  other users out.
* **Whether a pid holds the writer's flock** (:func:`holds_flock`): Linux lists flock holders
  in ``/proc/locks``. Elsewhere the lock itself is asked: a non-blocking shared ``flock`` on
  the lock file fails while a writer holds it (the record's pid is then trusted if alive), and
  succeeds when nobody does (a record left by a killed writer: stale). The probe holds the
  lock for microseconds, during which another writer's non-blocking acquire may fail as busy.
* **Which process has a file open** (:func:`opened_by`): Linux lists each process's descriptors
  under ``/proc/PID/fd``. Elsewhere the answer is unknown (None), and the caller says less.

The choice is a :class:`Platform` value (``current()`` by default), passed in, so each fallback
is tested on any system.
"""

from __future__ import annotations

import os
import socket
import struct
import sys
from pathlib import Path
from typing import NamedTuple

try:
    import fcntl
except ImportError:  # Windows: the index refuses to open there anyway (storage.lock says why)
    fcntl = None  # type: ignore[assignment]

__all__ = ["Platform", "LINUX", "BSD", "BARE", "current", "peer", "peer_uid", "holds_flock", "flock_pids", "flock_taken",
           "pid_alive", "opened_by", "process_age"]

_UCRED = struct.Struct("3i")  # Linux struct ucred: pid, uid, gid
_XUCRED = struct.Struct("IIh")  # macOS struct xucred head: cr_version, cr_uid, cr_ngroups (16 gids follow)
_XUCRED_SIZE = 76  # sizeof(struct xucred): 4 + 4 + 2 (+2 padding) + 16 * 4
SOL_LOCAL = 0  # macOS <sys/un.h>
LOCAL_PEERCRED = 0x001
PROC_LOCKS = Path("/proc/locks")


class Platform(NamedTuple):
    """How to ask the kernel. ``peer_cred``: ``"so_peercred"``, ``"local_peercred"`` or ``"none"``;
    ``lock_table``: ``"proc_locks"`` or ``"probe"``."""

    peer_cred: str
    lock_table: str


LINUX = Platform("so_peercred", "proc_locks")
BSD = Platform("local_peercred", "probe")  # macOS, FreeBSD
BARE = Platform("none", "probe")  # anything else: the documented fallbacks


def current() -> Platform:
    """The platform this process runs on."""
    if sys.platform.startswith("linux"):
        return LINUX
    if sys.platform == "darwin" or "bsd" in sys.platform:
        return BSD
    return BARE


def peer(sock: socket.socket, platform: Platform | None = None) -> tuple[int | None, int | None]:
    """(pid, uid) of the process at the other end of a connected Unix socket; None where unknown."""
    how = (platform or current()).peer_cred
    try:
        if how == "so_peercred":
            pid, uid, _ = _UCRED.unpack(sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _UCRED.size))
            return pid, uid
        if how == "local_peercred":
            raw = sock.getsockopt(SOL_LOCAL, LOCAL_PEERCRED, _XUCRED_SIZE)
            _, uid, _ = _XUCRED.unpack_from(raw)
            return None, uid
    except (OSError, AttributeError, struct.error):
        pass  # the fallback: unknown; the owner-only folder keeps other users out
    return None, None


def peer_uid(sock: socket.socket, platform: Platform | None = None) -> int | None:
    """The uid of the process at the other end of ``sock``; None where the system cannot say."""
    return peer(sock, platform)[1]


def flock_pids(path: str | os.PathLike[str]) -> set[int] | None:
    """Pids holding a ``flock`` on ``path`` according to ``/proc/locks`` (Linux); None without it."""
    try:
        info = os.stat(path)
        table = PROC_LOCKS.read_text()
    except OSError:
        return None if not PROC_LOCKS.exists() else set()
    key = f"{os.major(info.st_dev):02x}:{os.minor(info.st_dev):02x}:{info.st_ino}"
    pids = set()
    for line in table.splitlines():
        fields = line.split()
        if "->" in fields:  # a waiter, not a holder
            continue
        if len(fields) >= 6 and fields[1] == "FLOCK" and fields[5] == key:
            try:
                pids.add(int(fields[4]))
            except ValueError:
                continue
    return pids


def flock_taken(path: str | os.PathLike[str]) -> bool | None:
    """Whether some process holds an exclusive ``flock`` on ``path`` (asked of the lock); None if unknown."""
    if fcntl is None:
        return None
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return False
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return None
    finally:
        os.close(fd)  # closing the descriptor drops the probe's shared hold too
    return False


def holds_flock(path: str | os.PathLike[str], pid: int, platform: Platform | None = None) -> bool:
    """Whether ``pid`` (alive, as a holder record says) holds the ``flock`` on ``path``.

    With ``/proc/locks``: exactly. Otherwise the lock is asked (see the module docstring): taken
    means the live ``pid`` is trusted; free means the record is stale. Where even that fails,
    the live pid is trusted.
    """
    if (platform or current()).lock_table == "proc_locks":
        pids = flock_pids(path)
        if pids is not None:
            return pid in pids
    taken = flock_taken(path)
    return True if taken is None else taken


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` runs: it exists (another user's counts) and is not a zombie (a child exited
    and not reaped yet has let go of its locks and sockets)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True  # no /proc (macOS): it exists


def opened_by(path: str | os.PathLike[str]) -> set[int] | None:
    """Pids of this user's processes (other than this one) with ``path`` open, read from ``/proc/PID/fd``
    (Linux); None without ``/proc``. Costs a ``readlink`` per descriptor of every such process: for a
    failure path (a service holding its start file that does not answer), not for every call."""
    proc = Path("/proc")
    if not (proc / "self" / "fd").is_dir():
        return None
    target, me, pids = os.path.realpath(path), os.getpid(), set()
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            fds = os.listdir(entry / "fd")
        except OSError:  # gone, or another user's
            continue
        for fd in fds:
            try:
                if os.readlink(entry / "fd" / fd) == target:
                    pids.add(int(entry.name))
                    break
            except OSError:
                continue
    return pids


def process_age(pid: int) -> float | None:
    """Seconds since process ``pid`` started, from ``/proc/PID/stat`` and ``/proc/uptime`` (Linux); None elsewhere
    or when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            started = int(f.read().rsplit(")", 1)[1].split()[19])  # field 22, starttime, in clock ticks since boot
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
        return max(0.0, uptime - started / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return None
