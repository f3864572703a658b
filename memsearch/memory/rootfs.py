"""Descriptor-based access inside a memory root: each path component opened with ``O_NOFOLLOW`` from the root's fd.

A path that is checked by name and then opened again by name can be swapped (a link
replaced between the check and the open) and escape the root. Here nothing is opened by
name from outside: :func:`walk` starts at a descriptor of the root, opens one component at
a time with ``openat(dir_fd, name, O_NOFOLLOW)``, and returns a descriptor together with
the *real* relative path it reached. Callers decide and read (or write) on that descriptor
only, so whatever another process does to the tree meanwhile, no byte outside the root is
read. The rules, shared by readers, the tree walk and the write path:

* a **directory link** is never passed through (the tree walk never follows one either);
* a **file link** in the last position is followed, by the same rules, when its target
  stays inside the root (at most :data:`MAX_LINKS` links in a row: a loop is an error);
* ``..`` is only ever met inside a link's target, and may not climb above the root;
* the descriptor is checked once more against the root (``/proc/self/fd``, where present).

Every failure is a typed error whose message names the path as given (shortened), never
the absolute root.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from ..errors import Hint, InvalidArgument, MemoryFileNotFound, MemoryUnreadable, NotMemoryFile, PathOutsideRoot, shown

__all__ = ["Opened", "Entry", "Listed", "open_root", "walk", "walk_dirs", "read_fd", "error_for", "MAX_LINKS",
           "NAME_MAX", "PATH_MAX", "remove_dir"]

#: Links followed in one resolution before it counts as a loop (Linux uses 40 too).
MAX_LINKS = 40
#: Longest path component, and longest whole path, in bytes (Linux ``NAME_MAX`` / ``PATH_MAX``).
NAME_MAX = 255
PATH_MAX = 4096
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | _CLOEXEC
# O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused just after, by fstat).
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | _CLOEXEC
_LINKISH = (errno.ELOOP, errno.ENOTDIR, errno.EMLINK)


@dataclass(frozen=True)
class Opened:
    """An open descriptor inside the root and the real relative POSIX path it refers to."""

    fd: int
    real: str
    mode: int

    def close(self) -> None:
        os.close(self.fd)

    def __enter__(self) -> "Opened":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def open_root(root: Path) -> int:
    """A descriptor of the (resolved) memory root directory."""
    return os.open(root, os.O_RDONLY | os.O_DIRECTORY | _CLOEXEC)


def _folder_of(given: str) -> str:
    """The memory directory to list when ``given`` is not found: its parent (the root for an absolute path)."""
    parent = given.rstrip("/").rsplit("/", 1)[0] if "/" in given.rstrip("/") else "."
    return "." if not parent or parent.startswith(("/", "~")) else parent


def error_for(err: OSError, given: str, folder: str | None = None) -> Exception:
    """The typed error of an ``OSError`` met opening ``given``; ``folder``: the deepest memory folder of it that
    exists (the one a missing file's hint lists), else its parent."""
    if err.errno in (errno.EACCES, errno.EPERM):
        return MemoryUnreadable(f"{shown(given)} cannot be read: permission denied. Fix its permissions (chmod/chown) "
                                "or run memsearch as the owner of the memory")
    if err.errno == errno.ENAMETOOLONG:
        return InvalidArgument(f"path {shown(given)} has a component longer than {NAME_MAX} bytes: no such memory file")
    if err.errno in (errno.ENOENT, errno.ENOTDIR):
        return MemoryFileNotFound(f"no memory file {shown(given)}", hint=Hint("list", folder or _folder_of(given)))
    return MemoryUnreadable(f"{shown(given)} cannot be opened ({errno.errorcode.get(err.errno, err.errno)}: "
                            f"{os.strerror(err.errno or 0)}): check the file")


def _reopen(root_fd: int, names: list[str], given: str) -> int:
    fd = os.dup(root_fd)
    for name in names:
        try:
            nxt = os.open(name, _DIR, dir_fd=fd)
        except OSError as err:
            os.close(fd)
            raise error_for(err, given) from None
        os.close(fd)
        fd = nxt
    return fd


def _link_parts(target: str, root_real: str, given: str) -> tuple[bool, list[str]]:
    """A link target as (absolute?, components); an absolute target must lie inside the root."""
    if target.startswith("/"):
        norm = os.path.normpath(target)
        if norm != root_real and not norm.startswith(root_real.rstrip("/") + "/"):
            raise PathOutsideRoot(
                f"path {shown(given)} is a link that leads outside the memory root; only memory inside the root can be read"
            )
        return True, [p for p in norm[len(root_real) :].split("/") if p]
    return False, [p for p in target.split("/") if p]


def walk(root_fd: int, root_real: str, parts: list[str], given: str, *, directory: bool = False) -> Opened:
    """Open ``parts`` (components relative to the root) from ``root_fd``; see the module rules.

    ``directory``: the last component must be a directory (no link followed); otherwise it
    must be a regular file, opened read-only. Raises :class:`PathOutsideRoot`,
    :class:`NotMemoryFile` (a directory link, a loop, not a regular file),
    :class:`MemoryFileNotFound` or :class:`MemoryUnreadable`.
    """
    todo = list(reversed(parts))  # a stack: the next component is todo[-1]
    names: list[str] = []  # real directory names from the root down to ``cur``
    cur = os.dup(root_fd)
    links = 0
    try:
        while todo:
            name = todo.pop()
            if name in ("", "."):
                continue
            if name == "..":
                if not names:
                    raise PathOutsideRoot(f"path {shown(given)} leads outside the memory root")
                names.pop()
                os.close(cur)
                cur = _reopen(root_fd, names, given)
                continue
            last = not any(p not in ("", ".") for p in todo)
            flags = _DIR if (directory or not last) else _FILE
            try:
                fd = os.open(name, flags, dir_fd=cur)
            except OSError as err:
                here = "/".join(names) or "."  # a missing folder on the way: list the deepest one that exists
                if err.errno not in _LINKISH:
                    raise error_for(err, given, here) from None
                try:
                    st = os.stat(name, dir_fd=cur, follow_symlinks=False)
                except OSError as again:
                    raise error_for(again, given, here) from None
                if not stat.S_ISLNK(st.st_mode):
                    raise error_for(err, given, here) from None
                if not last or directory:
                    raise NotMemoryFile(
                        f"path {shown(given)} passes through a directory link ({shown(name)}); "
                        "directory links are never followed: move the memory inside the root"
                    ) from None
                links += 1
                if links > MAX_LINKS:
                    raise NotMemoryFile(
                        f"path {shown(given)} is a symlink loop (over {MAX_LINKS} links): fix or remove the link"
                    ) from None
                try:
                    target = os.readlink(name, dir_fd=cur)
                except OSError as again:
                    raise error_for(again, given, "/".join(names) or ".") from None
                absolute, more = _link_parts(target, root_real, given)
                if absolute:
                    names = []
                    os.close(cur)
                    cur = os.dup(root_fd)
                todo.extend(reversed(more))
                continue
            if flags == _DIR:
                os.close(cur)
                cur = fd
                names.append(name)
                continue
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                os.close(fd)
                if stat.S_ISDIR(st.st_mode):
                    raise MemoryFileNotFound(f"no memory file {shown(given)}", hint=Hint("list_dir", given))
                raise NotMemoryFile(
                    f"no memory file {shown(given)}: it is not a regular file (a FIFO, socket or device)"
                )
            try:
                _verify(fd, root_real, given)
            except BaseException:
                os.close(fd)
                raise
            return Opened(fd=fd, real="/".join(names + [name]), mode=st.st_mode)
        if not directory:
            raise MemoryFileNotFound(f"no memory file {shown(given)}", hint=Hint("list_dir", given))
        _verify(cur, root_real, given)
        opened = Opened(fd=cur, real="/".join(names) or ".", mode=os.fstat(cur).st_mode)
        cur = -1
        return opened
    finally:
        if cur >= 0:
            os.close(cur)


def _verify(fd: int, root_real: str, given: str) -> None:
    """Belt and braces: the descriptor's real path lies under the root (Linux ``/proc``)."""
    try:
        real = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return  # no /proc: the O_NOFOLLOW walk alone decided
    if real != root_real and not real.startswith(root_real.rstrip("/") + "/"):
        raise PathOutsideRoot(f"path {shown(given)} was moved outside the memory root while being opened; try again")


def read_fd(fd: int, limit: int | None = None) -> bytes:
    """Every byte of an open regular file (at most ``limit`` bytes when given)."""
    os.set_blocking(fd, True)
    chunks = []
    left = limit
    while left is None or left > 0:
        block = os.read(fd, 1 << 20 if left is None else min(1 << 20, left))
        if not block:
            break
        chunks.append(block)
        if left is not None:
            left -= len(block)
    return b"".join(chunks)


@dataclass(frozen=True)
class Entry:
    """One name in a directory listed by descriptor: ``kind`` is ``dir``, ``file``, ``link`` or ``special``;
    ``size`` (bytes, regular files only) when the walk was asked for sizes."""

    name: str
    kind: str
    size: int | None = None


@dataclass(frozen=True)
class Listed:
    """A directory reached by :func:`walk_dirs`: its real relative path (``"."``, the root), its
    entries sorted by name, and ``error`` (why it could not be listed; then no entries)."""

    rel: str
    entries: tuple[Entry, ...]
    error: str | None = None
    #: ``(st_dev, st_ino)`` of the directory listed: which folder it was, whatever its name is now.
    identity: tuple[int, int] | None = None


def _kind(entry: os.DirEntry) -> str:
    if entry.is_symlink():
        return "link"
    if entry.is_dir(follow_symlinks=False):
        return "dir"
    return "file" if entry.is_file(follow_symlinks=False) else "special"


def _list_fd(fd: int, rel: str, sizes: bool) -> Listed:
    """The entries of the open directory ``fd``: names and kinds from the directory itself, sizes
    from ``fstatat`` without following links, so nothing outside it is ever looked at."""
    try:
        st = os.fstat(fd)
        with os.scandir(fd) as it:
            found = sorted(it, key=lambda e: e.name)
        out = []
        for entry in found:
            try:
                kind = _kind(entry)
                size = entry.stat(follow_symlinks=False).st_size if sizes and kind == "file" else None
            except OSError:  # gone since the listing
                continue
            out.append(Entry(entry.name, kind, size))
    except OSError as err:
        return Listed(rel, (), err.strerror or str(err))
    return Listed(rel, tuple(out), identity=(st.st_dev, st.st_ino))


def remove_dir(dir_fd: int, name: str, identity: tuple[int, int] | None) -> bool:
    """Remove folder ``name`` of the open directory ``dir_fd`` if it is still the folder ``identity`` names
    (a :attr:`Listed.identity`); False, nothing removed, if the name now holds another entry.

    The entry is renamed aside to a hidden name in one step (it leaves memory at once), and the entry so
    renamed is compared with ``identity``: one swapped in after the caller checked the folder is put back
    (unless its name was taken meanwhile: then it stays under the hidden name, never removed). The removal goes by
    descriptor and never follows a link. Raises FileNotFoundError when ``name`` is gone."""
    import shutil

    aside = f".{name}.deleted-{os.urandom(4).hex()}"
    os.rename(name, aside, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    st = os.stat(aside, dir_fd=dir_fd, follow_symlinks=False)
    if not stat.S_ISDIR(st.st_mode) or (st.st_dev, st.st_ino) != identity:
        try:  # put back, never over anything: a folder cannot replace a non-empty one, a file is linked back
            if stat.S_ISDIR(st.st_mode):
                os.rename(aside, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
            else:
                os.link(aside, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd, follow_symlinks=False)
                os.unlink(aside, dir_fd=dir_fd)
        except OSError:  # the name was taken meanwhile: the entry stays under its hidden name
            pass
        return False
    os.fsync(dir_fd)
    shutil.rmtree(aside, dir_fd=dir_fd, ignore_errors=True)
    return True


def walk_dirs(
    root_fd: int, root_real: str, start: list[str], descend: Callable[[str, Entry], bool], *, sizes: bool = False
) -> Iterator[Listed]:
    """Every directory from ``start`` (components below the root) down, depth first in name order, each
    listed through a descriptor (``os.scandir(fd)``) and entered with ``openat(O_NOFOLLOW)`` from its
    parent's descriptor: a directory swapped for a link meanwhile is never entered, so no name or size
    from outside the root can come back. ``descend(rel, entry)`` says which child directories to enter.

    The start is opened by :func:`walk` (typed errors); a child that vanished or turned into a link
    before it was entered is left out, one that cannot be opened is yielded with its ``error``.
    Descriptors held: one per level of the current path.
    """
    opened = walk(root_fd, root_real, start, "/".join(start) or ".", directory=True)
    stack: list[tuple[int, str, Iterator[str]]] = []
    fd, rel = opened.fd, opened.real
    try:
        while True:
            listed = _list_fd(fd, rel, sizes)
            yield listed
            children = [e.name for e in listed.entries if e.kind == "dir" and descend(_join(rel, e.name), e)]
            stack.append((fd, rel, iter(children)))
            fd = -1
            while stack and fd < 0:
                parent_fd, parent_rel, pending = stack[-1]
                name = next(pending, None)
                if name is None:
                    os.close(parent_fd)
                    stack.pop()
                    continue
                rel = _join(parent_rel, name)
                try:
                    fd = os.open(name, _DIR, dir_fd=parent_fd)
                except OSError as err:
                    if err.errno not in (errno.ENOENT, *_LINKISH):  # vanished or swapped for a link: not memory now
                        yield Listed(rel, (), err.strerror or str(err))
                    continue
                try:
                    _verify(fd, root_real, rel)
                except PathOutsideRoot:
                    os.close(fd)
                    fd = -1
            if fd < 0:
                return
    finally:
        if fd >= 0:
            os.close(fd)
        for parent_fd, _, _ in stack:
            os.close(parent_fd)


def _join(rel: str, name: str) -> str:
    return name if rel == "." else f"{rel}/{name}"
