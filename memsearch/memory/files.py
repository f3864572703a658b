"""Whole-file writes that a crash cannot half-do, and reads of small JSON records that tolerate damage.

:func:`atomic_write_bytes` writes a temporary file in the target's directory, flushes it to
disk, renames it over the target with :func:`os.replace` and flushes the directory, so a
reader (or the next boot after a power cut) sees either the old file or the new one, whole.
A target that already exists keeps its permission bits; a new one gets ``mode`` exactly when it is
given (the umask cannot widen or narrow it; :func:`private_modes` gives memory's), else ``0o666``
less the umask, like :func:`open`. The temporary name is unique per call, so threads and processes
writing the same target never share one, and never longer than a file name may be.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

__all__ = ["atomic_write_bytes", "atomic_write_text", "atomic_write_json", "read_json", "private_modes", "make_dir", "make_index_dir",
           "PRIVATE_FILE_MODE", "PRIVATE_DIR_MODE"]

_TMP_ATTEMPTS = 16


#: New memory files and directories are the owner's alone (memory holds private facts) ...
PRIVATE_FILE_MODE = 0o600
PRIVATE_DIR_MODE = 0o700
#: ... unless the root deliberately shares reading: a root that grants its group or others read but no write
#: passes those read (and, for directories, search) bits on; write bits never pass. A root that others may
#: write (0777, the mark of umask 0 rather than of a choice) shares nothing.
_SHARED_FILE_BITS = 0o044
_SHARED_DIR_BITS = 0o055
_SHARED_WRITE_BITS = 0o022


def private_modes(root_mode: int) -> tuple[int, int]:
    """``(file mode, directory mode)`` for what a write creates under a root of ``root_mode``, whatever the umask:
    0600/0700, plus the read (and search) bits of a root shared for reading (see above)."""
    if root_mode & _SHARED_WRITE_BITS:
        return PRIVATE_FILE_MODE, PRIVATE_DIR_MODE
    return (PRIVATE_FILE_MODE | (root_mode & _SHARED_FILE_BITS),
            PRIVATE_DIR_MODE | (root_mode & _SHARED_DIR_BITS))


def make_index_dir(path: Path, root=None) -> None:
    """A local index's directory, made when missing with the mode of a new memory directory (the index holds the
    memory's text): owner-only, or with the read bits of a ``root`` shared for reading. Parents are made as usual."""
    if path.is_dir():
        return
    try:
        root_mode = os.stat(root).st_mode if root is not None else 0
    except OSError:
        root_mode = 0
    mode = private_modes(root_mode)[1]
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        os.mkdir(path, mode)
    except FileExistsError:
        if path.parent.is_dir():
            return
        _unmakeable(path, path.parent)
    except (NotADirectoryError, FileNotFoundError) as exc:  # a file on the way, a pseudo-filesystem
        _unmakeable(path, path.parent if exc.filename == str(path) else exc.filename)
    os.chmod(path, mode)  # whatever the umask


def _unmakeable(path: Path, where) -> None:
    from ..errors import StorageFull

    raise StorageFull(f"cannot make the index folder {path}: {where} is not a folder that can hold it. Pass --db DIR "
                      "(or set MEMSEARCH_DB) to a folder you can write, or leave both out for ROOT/.memsearch") from None


def make_dir(name: str, *, dir_fd: int, mode: int) -> bool:
    """Create directory ``name`` in open directory ``dir_fd`` with exactly ``mode`` (``mkdir`` alone is subject to
    the umask); False when it exists already (its mode is left alone)."""
    try:
        os.mkdir(name, 0o700, dir_fd=dir_fd)
    except FileExistsError:
        return False
    fd = os.open(name, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)
                 | getattr(os, "O_CLOEXEC", 0), dir_fd=dir_fd)
    try:
        os.fchmod(fd, mode)
    finally:
        os.close(fd)
    return True


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes, *, dir_fd: int | None = None,
                       mode: int | None = None) -> None:
    """Replace ``path`` with ``data`` atomically and durably. Raises ``OSError``; the target is then untouched.

    ``dir_fd``: ``path`` is a name inside that open directory (every step by descriptor, so a
    directory swapped for a link meanwhile cannot redirect the write).
    """
    target = Path(path)
    parent = target.parent
    try:
        mode = stat.S_IMODE(os.stat(target, dir_fd=dir_fd, follow_symlinks=dir_fd is None).st_mode)
    except FileNotFoundError:
        pass  # a new target: ``mode`` as given, or the umask's
    fd, tmp = _create_temp(parent, target.name, dir_fd, 0o600 if mode is not None else 0o666)
    try:
        try:
            if mode is not None:
                os.fchmod(fd, mode)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, target, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        try:
            os.unlink(tmp, dir_fd=dir_fd)
        except OSError:
            pass
        raise
    if dir_fd is None:
        _fsync_dir(parent)
    else:
        try:
            os.fsync(dir_fd)
        except OSError:
            pass


def atomic_write_text(path: str | os.PathLike[str], text: str, encoding: str = "utf-8") -> None:
    """:func:`atomic_write_bytes` of ``text`` encoded (UTF-8 by default, newlines written as given)."""
    atomic_write_bytes(path, text.encode(encoding))


def atomic_write_json(path: str | os.PathLike[str], value, **dumps_options) -> None:
    """:func:`atomic_write_text` of ``json.dumps(value, **dumps_options)``."""
    atomic_write_text(path, json.dumps(value, **dumps_options))


def read_json(path: str | os.PathLike[str]) -> dict | None:
    """The JSON object stored at ``path``; None when it is missing, unreadable, damaged or not an object."""
    try:
        value = json.loads(Path(path).read_bytes())
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def _temp_name(name: str) -> str:
    """``.NAME.RANDOM.tmp``, with NAME cut (at a character boundary) so that the whole stays within
    :data:`NAME_MAX` bytes: a legal 255-byte name must not fail for its temporary file's sake."""
    from .rootfs import NAME_MAX  # here: read_json, on the daemon client's path, needs neither it nor the walker

    token = f".{os.urandom(6).hex()}.tmp"  # secrets.token_hex's bytes, without its import (hmac, OpenSSL)
    room = NAME_MAX - 1 - len(token)
    stem = os.fsencode(name)[:room].decode("utf-8", "ignore")
    return f".{stem}{token}"


def _create_temp(parent: Path, name: str, dir_fd: int | None = None, mode: int = 0o666) -> tuple[int, str]:
    for _ in range(_TMP_ATTEMPTS):
        tmp = str(parent / _temp_name(name))
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), mode, dir_fd=dir_fd), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"could not create a unique temporary file beside {parent / name}")


def _fsync_dir(directory: Path) -> None:
    """Flush the directory entry of a rename; a no-op where directories cannot be opened (Windows)."""
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
