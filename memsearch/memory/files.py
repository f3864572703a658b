"""Whole-file writes that a crash cannot half-do, and reads of small JSON records that tolerate damage.

:func:`atomic_write_bytes` writes a temporary file in the target's directory, flushes it to
disk, renames it over the target with :func:`os.replace` and flushes the directory, so a
reader (or the next boot after a power cut) sees either the old file or the new one, whole.
A target that already exists keeps its permission bits; a new one gets ``0o666`` less the
umask, like :func:`open`. The temporary name is unique per call, so threads and processes
writing the same target never share one, and never longer than a file name may be.
"""

from __future__ import annotations

import json
import os
import secrets
import stat
from pathlib import Path

from .rootfs import NAME_MAX

__all__ = ["atomic_write_bytes", "atomic_write_text", "atomic_write_json", "read_json"]

_TMP_ATTEMPTS = 16


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes, *, dir_fd: int | None = None) -> None:
    """Replace ``path`` with ``data`` atomically and durably. Raises ``OSError``; the target is then untouched.

    ``dir_fd``: ``path`` is a name inside that open directory (every step by descriptor, so a
    directory swapped for a link meanwhile cannot redirect the write).
    """
    target = Path(path)
    parent = target.parent
    try:
        mode = stat.S_IMODE(os.stat(target, dir_fd=dir_fd, follow_symlinks=dir_fd is None).st_mode)
    except FileNotFoundError:
        mode = None
    fd, tmp = _create_temp(parent, target.name, dir_fd)
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
    token = f".{secrets.token_hex(6)}.tmp"
    room = NAME_MAX - 1 - len(token)
    stem = os.fsencode(name)[:room].decode("utf-8", "ignore")
    return f".{stem}{token}"


def _create_temp(parent: Path, name: str, dir_fd: int | None = None) -> tuple[int, str]:
    for _ in range(_TMP_ATTEMPTS):
        tmp = str(parent / _temp_name(name))
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666, dir_fd=dir_fd), tmp
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
