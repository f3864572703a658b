"""Where an index and everything beside it lives: :class:`IndexLocation`, built once from a root and a ``--db``.

Every ``--db`` (and ``MEMSEARCH_DB``) goes through :meth:`IndexLocation.of`, and no other module
spells the index's file names. Two kinds of index:

* **local** (a directory; default ``ROOT/.memsearch``): the tables, ``index.json`` and this
  machine's state files all live in it;
* **remote** (``s3://bucket/prefix``, ``s3+ddb://bucket/prefix?...``): the tables, ``index.json``
  and the writer lease (:data:`LEASE_FILE`) are objects under the prefix; this machine's state
  (writer lock, daemon state, log, pid, socket) lives in a private directory under
  ``MEMSEARCH_STATE_DIR`` (default ``$XDG_STATE_HOME/memsearch``) keyed by a hash of the URI.

Beside the index (:attr:`IndexLocation.state`): ``writer.lock`` (the flock), ``writer.json`` (its
holder), ``daemon.json`` (the state of the process serving it), ``daemon.pid``, ``daemon.log``
and ``run/daemon.sock`` (a daemon started by hand with ``memsearch watch ROOT``); the per-user
service listens on :func:`service_socket`, in a 0700 folder under ``$XDG_RUNTIME_DIR`` or the
temp dir, and records that path in each loaded root's ``daemon.json``. The service's folder
moves to the temp dir when ``$XDG_RUNTIME_DIR`` is too long for a socket. A daemon's socket path
longer than :data:`MAX_SOCKET_PATH` bytes is replaced by ``$XDG_RUNTIME_DIR/memsearch/<hash>.sock``
or ``<tempdir>/memsearch-<uid>/<hash>.sock``; the daemon records the path it bound in
``daemon.json``. Standard library only (and memsearch's settings, errors and memory-root
check), so the daemon's thin client can use it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple
from urllib.parse import urlsplit

from . import settings
from .errors import InvalidArgument, shown
from .memory.files import make_index_dir
from .memory.root import resolve_root

__all__ = ["IndexLocation", "RemoteAddress", "parse_remote", "is_remote", "state_root", "service_dir", "service_socket",
           "service_start_file", "service_log_file", "hooks_log_file", "rotate_log", "open_private", "DB_DIRNAME", "SCHEMES", "META_FILE",
           "LEASE_FILE", "MAX_SOCKET_PATH"]

#: The index directory inside a memory root (hidden, so never memory) when no ``--db`` is given.
DB_DIRNAME = ".memsearch"
#: Object-store schemes an index address may use.
SCHEMES = ("s3", "s3+ddb")
#: The index's parameters, beside its tables (a file, or an object under the prefix).
META_FILE = "index.json"
#: The writer lease of a remote index, an object under its prefix.
LEASE_FILE = "writer.lease.json"
LOCK_FILE = "writer.lock"
HOLDER_FILE = "writer.json"
STATE_FILE = "daemon.json"
PID_FILE = "daemon.pid"
LOG_FILE = "daemon.log"
SOCKET_DIR = "run"
SOCKET_NAME = "daemon.sock"
#: The per-user service's files, in :func:`service_dir`.
SERVICE_SOCKET = "service.sock"
SERVICE_START = "service.start.lock"
SERVICE_LOG = "service.log"
HOOKS_LOG = "hooks.log"
#: Every log memsearch writes (a daemon's, the service's, the hooks') moves aside at this size, keeping LOG_BACKUPS
#: older files (``NAME.1`` the newest): a service or hooks that run for months never fill the disk.
LOG_MAX_BYTES = 5_000_000
LOG_BACKUPS = 2
#: Longest socket path used as is; ``sun_path`` holds 108 bytes with the final NUL (Linux), 104 on BSDs.
MAX_SOCKET_PATH = 100


def is_remote(db) -> bool:
    """Whether ``db`` is an object-store address (``scheme://...``) rather than a directory."""
    return isinstance(db, str) and "://" in db


class RemoteAddress(NamedTuple):
    """A parsed object-store address: the canonical ``uri`` and its parts."""

    uri: str
    scheme: str
    bucket: str
    prefix: str


def parse_remote(uri: str) -> RemoteAddress:
    """``s3://bucket/prefix`` (or ``s3+ddb://...``) in canonical form; :class:`InvalidArgument` otherwise."""
    parts = urlsplit(uri.strip())
    if parts.scheme not in SCHEMES:
        raise InvalidArgument(f"unsupported index address {shown(uri)}: use a directory path, or "
                              f"{' or '.join(s + '://bucket/prefix' for s in SCHEMES)}")
    if not parts.netloc:
        raise InvalidArgument(f"index address {shown(uri)} names no bucket: use s3://bucket/prefix")
    prefix = parts.path.strip("/")
    if parts.fragment or "#" in uri:  # urlsplit drops it: 's3://b/team#2' would be the index of 's3://b/team'
        raise InvalidArgument(f"index address {shown(uri)} holds a '#': the prefix is cut there, so it would name "
                              f"another index; use letters, digits, '-', '_' and '.' in the prefix, e.g. "
                              f"s3://{parts.netloc}/tenants/ada")
    if prefix and any(part in ("", ".", "..") for part in prefix.split("/")):
        raise InvalidArgument(f"index address {shown(uri)} has an empty, '.' or '..' part in its prefix, which an object "
                              f"store does not resolve: write the prefix as plain names, e.g. s3://{parts.netloc}/tenants/ada")
    clean = f"{parts.scheme}://{parts.netloc}/{prefix}".rstrip("/") + (f"?{parts.query}" if parts.query else "")
    return RemoteAddress(clean, parts.scheme, parts.netloc, prefix)


def state_root() -> Path:
    """Where this machine keeps the state of remote indexes: ``MEMSEARCH_STATE_DIR``, else
    ``$XDG_STATE_HOME/memsearch``."""
    configured = settings.get("state_dir")
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base) / "memsearch"


def _digest(data: bytes, length: int) -> str:
    import hashlib  # here, not at import: it loads OpenSSL (tens of ms); a call the daemon answers never needs it

    return hashlib.sha256(data).hexdigest()[:length]


def _short_bases() -> list[Path]:
    import tempfile  # only for a socket path too long to sit beside the index

    bases = []
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    if runtime and os.path.isabs(runtime) and os.path.isdir(runtime):
        bases.append(Path(runtime) / "memsearch")
    uid = os.getuid()
    return bases + [Path(tempfile.gettempdir()) / f"memsearch-{uid}", Path("/tmp") / f"memsearch-{uid}"]


def _fits(folder: Path) -> bool:
    """Whether the service's socket in ``folder`` fits ``sun_path``."""
    return len(os.fsencode(folder / SERVICE_SOCKET)) <= MAX_SOCKET_PATH


def service_dir() -> Path:
    """The per-user service's folder (owner-only, 0700): ``$XDG_RUNTIME_DIR/memsearch``, else (unset, or so
    long that a socket there would not fit ``sun_path``) ``<tempdir>/memsearch-<uid>``, else
    ``/tmp/memsearch-<uid>``. Nothing is created here."""
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    if runtime and os.path.isabs(runtime) and os.path.isdir(runtime):  # without tempfile (and shutil): a hook's import
        folder = Path(runtime) / "memsearch"
        if _fits(folder):
            return folder
    bases = _short_bases()
    return next((base for base in bases if _fits(base)), bases[-1])


def service_socket() -> Path:
    """Where this user's memsearch service listens (see :mod:`memsearch.service.protocol`)."""
    return service_dir() / SERVICE_SOCKET


def service_start_file() -> Path:
    """Held (``flock``) by the client starting the service, then by the service for its whole life."""
    return service_dir() / SERVICE_START


def service_log_file() -> Path:
    """The per-user service's log."""
    return service_dir() / SERVICE_LOG


def hooks_log_file() -> Path:
    """Where a Claude Code hook that gave up says why (it prints nothing, so as not to get in the session's way)."""
    return service_dir() / HOOKS_LOG


def rotate_log(path: Path, adding: int = 0) -> None:
    """Move log ``path`` aside (``NAME.1``, ``NAME.1`` to ``NAME.2`` ...) when ``adding`` more bytes would take it
    past :data:`LOG_MAX_BYTES`, as :class:`logging.handlers.RotatingFileHandler` does for the processes' logs."""
    try:
        if path.stat().st_size + adding <= LOG_MAX_BYTES:
            return
        for n in range(LOG_BACKUPS - 1, 0, -1):
            older = path.with_name(f"{path.name}.{n}")
            if older.exists():
                os.replace(older, path.with_name(f"{path.name}.{n + 1}"))
        os.replace(path, path.with_name(f"{path.name}.1"))
    except OSError:
        pass  # no log yet, or another writer moved it first


def open_private(path: Path | str, flags: int = os.O_WRONLY | os.O_APPEND) -> int:
    """A descriptor of the state file ``path`` (a log, a lock), created owner-only (0600) whatever the umask,
    and narrowed to 0600 when an older memsearch left it wider; not a link (``O_NOFOLLOW``)."""
    fd = os.open(path, flags | os.O_CREAT | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        info = os.fstat(fd)
        if info.st_mode & 0o077 and info.st_uid == os.getuid():
            os.fchmod(fd, 0o600)
    except OSError:
        pass  # a file we cannot narrow (another owner's) still serves
    return fd


class IndexLocation(NamedTuple):
    """Where the index of one memory root lives. Build it with :meth:`of`; nothing is created on disk.
    A named tuple, not a dataclass:
    the daemon's client imports it, and dataclasses (with inspect) cost it about 10 ms of CPU.

    ``root``: the resolved memory root. ``state``: the absolute local directory: the index itself,
    or for a remote index this machine's state directory for it. ``remote``: the canonical URI of
    a remote index, else None.
    """

    root: Path
    state: Path
    remote: str | None = None

    @classmethod
    def of(cls, root, db=None, *, resolved: bool = False) -> "IndexLocation":
        """The location of ``root``'s index: ``db`` (a ``--db`` value), else ``MEMSEARCH_DB``, else ``ROOT/.memsearch``.

        ``resolved``: ``root`` is already the resolved memory root (skips :func:`resolve_root`).
        Raises :class:`InvalidArgument` for a malformed address, or a local one that is a file.
        """
        base = Path(root) if resolved else resolve_root(root)
        if isinstance(db, IndexLocation):
            return db if db.root == base else cls(base, db.state, db.remote)
        target = settings.get("db", db) if db not in (None, "") else settings.get("db")
        if target is None:
            return cls(base, Path(os.path.abspath(base / DB_DIRNAME)))
        if is_remote(target):
            address = parse_remote(target)
            return cls(base, Path(os.path.abspath(state_root() / "remote" / _digest(address.uri.encode(), 16))),
                       address.uri)
        state = Path(os.path.abspath(Path(target).expanduser()))
        if os.path.exists(state) and not os.path.isdir(state):  # never "damaged, rebuild it": that cannot help
            raise InvalidArgument(f"index directory {shown(str(target))} is a file, not a folder: give --db (or "
                                  "MEMSEARCH_DB) a folder, which is created if missing, or leave both out for "
                                  "ROOT/.memsearch")
        return cls(base, state)

    @classmethod
    def at(cls, where: "IndexLocation | str | os.PathLike[str]") -> "IndexLocation":
        """``where`` itself, or the location of the local index directory ``where`` (its root unknown)."""
        if isinstance(where, IndexLocation):
            return where
        state = Path(os.path.abspath(Path(where).expanduser()))
        return cls(state, state)

    # --- what it is ---------------------------------------------------------------------
    @property
    def db(self) -> str | Path:
        """What to hand to the storage layer: the URI of a remote index, else its directory."""
        return self.remote if self.remote else self.state

    @property
    def label(self) -> str:
        """The index's address for messages: the URI, else the directory."""
        return self.remote or str(self.state)

    @property
    def address(self) -> RemoteAddress | None:
        return parse_remote(self.remote) if self.remote else None

    def ensure_state(self) -> Path:
        """:attr:`state`, created when missing: owner-only for a remote index's private directory, a local index's
        with the mode of a new memory directory (it holds the memory's text; see :func:`make_index_dir`)."""
        if self.remote:
            self.state.mkdir(parents=True, exist_ok=True, mode=0o700)
        else:
            make_index_dir(self.state, self.root)
        return self.state

    # --- the files beside it ------------------------------------------------------------
    @property
    def meta_file(self) -> Path | None:
        """The local ``index.json`` (None for a remote index: it is the object :data:`META_FILE`)."""
        return None if self.remote else self.state / META_FILE

    @property
    def lock_file(self) -> Path:
        return self.state / LOCK_FILE

    @property
    def holder_file(self) -> Path:
        return self.state / HOLDER_FILE

    @property
    def state_file(self) -> Path:
        return self.state / STATE_FILE

    @property
    def pid_file(self) -> Path:
        return self.state / PID_FILE

    @property
    def log_file(self) -> Path:
        return self.state / LOG_FILE

    @property
    def socket(self) -> Path:
        """Where the daemon of this index listens (see the module docstring for long paths)."""
        return socket_path(self.state)

    def watch_args(self) -> list[str]:
        """The ``--db`` arguments that name this index to another ``memsearch`` process."""
        return ["--db", self.label]


def socket_path(state: str | os.PathLike[str]) -> Path:
    """The daemon socket of the index whose local directory is ``state``."""
    state = Path(os.path.abspath(state))
    near = state / SOCKET_DIR / SOCKET_NAME
    if len(os.fsencode(near)) <= MAX_SOCKET_PATH:
        return near
    name = _digest(os.fsencode(state), 24) + ".sock"
    bases = _short_bases()
    return next((base / name for base in bases if len(os.fsencode(base / name)) <= MAX_SOCKET_PATH), bases[-1] / name)
