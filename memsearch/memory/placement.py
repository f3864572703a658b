"""Where a memory write may land: ``/memories`` paths mapped onto the root, the placement rules, and the root's write lock.

* :func:`to_relative` maps the paths of Claude's memory tool (``/memories``, ``/memories/notes/x.md``)
  and plain root-relative paths (``notes/x.md``) to one relative POSIX path; anything else that is
  absolute, or climbs with ``..``, is :class:`~memsearch.errors.PathOutsideRoot`.
* :func:`locate` checks a path against the placement rules before anything is written: never hidden,
  never in a foreign directory, never the index, never through a link. The decision is made on the
  real path: the root is resolved and every existing component below it is checked with ``lstat``,
  so no link (inside or out of the root) is ever followed by a write.
* :func:`write_lock` serialises writers of one root across threads and processes with ``flock`` on
  the root directory itself (each call opens its own descriptor, so the lock belongs to the calling
  thread for the duration of the ``with`` block, and the kernel drops it if the process dies).
"""

from __future__ import annotations

import errno
import fcntl
import os
import re
import stat
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Iterator

from .. import settings
from ..errors import InvalidArgument, MemoryBusy, MemoryFileExists, NotMemoryFile, PathOutsideRoot
from ..errors import shown as cut
from . import rootfs
from .names import MEMORIES_PREFIX, escape, in_memories, lookalikes, require_plain, unescape
from .tree import MARKDOWN_SUFFIX, printable, valid_name

__all__ = ["Target", "index_text", "to_relative", "require_memories", "locate", "check_growth",
           "require_markdown", "write_lock", "LOCK_TIMEOUT_S"]

#: How long a write waits for another writer of the same root before giving up.
LOCK_TIMEOUT_S = 30.0
_LOCK_POLL_S = 0.005


@dataclass(frozen=True)
class Target:
    """A checked path: ``rel`` (``"."`` is the root), ``path`` (absolute) and ``shown`` (as the caller writes it)."""

    rel: str
    path: Path
    shown: str

    @property
    def is_markdown(self) -> bool:
        return self.rel.endswith(MARKDOWN_SUFFIX)

    def show(self, rel: str) -> str:
        """Another relative path in the caller's style (``/memories/...`` or relative)."""
        return _styled(rel, in_memories(self.shown))


def _styled(rel: str, memories: bool) -> str:
    """``rel`` as shown: escaped (:func:`~memsearch.memory.names.escape`), under ``/memories`` when ``memories``."""
    if not memories:
        return escape(rel)
    return MEMORIES_PREFIX if rel == "." else f"{MEMORIES_PREFIX}/{escape(rel)}"


def to_relative(path: str) -> tuple[str, str]:
    """``(relative POSIX path, path as shown)`` for a ``/memories/...`` or root-relative ``path``."""
    if not isinstance(path, str):
        raise InvalidArgument(f"a path must be a string such as '/memories/notes/today.md', got {type(path).__name__}")
    text = path.strip()
    if "\x00" in text:
        raise PathOutsideRoot(f"path {text!r} contains a NUL byte: give a path such as '/memories/notes/today.md'")
    if not valid_name(text):
        raise InvalidArgument(f"path '{printable(text)[:120]}' is not valid UTF-8 text (it holds a lone surrogate): "
                              "such a name is never memory; choose a name of valid UTF-8 characters")
    styled = in_memories(text)
    if styled:
        text = text[len(MEMORIES_PREFIX):]
    elif _absolute(text):
        raise _outside(path, relative=True)
    parts = [p for p in PurePosixPath(text.lstrip("/")).parts if p not in ("", ".")]
    if "\\" in text:  # the escapes view shows odd names in (names.escape); any other backslash is refused
        parts = [p for p in (unescape(p, path) for p in parts) if p not in ("", ".")]
    if ".." in parts:
        raise PathOutsideRoot(f"path {path!r} leaves the memory root: '..' is not allowed; give the path from the root down")
    rel = "/".join(parts) or "."
    return rel, _styled(rel, styled)


def require_memories(path) -> None:
    """Claude's memory tool takes ``/memories`` paths only: refuse a relative one, naming the path to give instead."""
    if not isinstance(path, str):
        return  # the argument check names the type
    text = path.strip()
    if in_memories(text):
        return
    if _absolute(text):
        raise _outside(path, relative=False)  # the memory tool takes no relative path: never offer one
    parts = [p for p in PurePosixPath(text).parts if p not in ("", ".")]
    if parts[:1] == [MEMORIES_PREFIX.strip("/")]:  # 'memories/notes/x.md': the leading slash left out, not a folder
        parts = parts[1:]
    rel = "/".join(parts)
    raise PathOutsideRoot(f"path {path!r} must start with /memories, as every memory tool path does: give "
                          f"{MEMORIES_PREFIX + ('/' + rel if rel else '')!r}")


def _absolute(text: str) -> bool:
    """Whether ``text`` (not a ``/memories`` path) names a place outside the memory root: absolute, or ``~``."""
    return text.startswith(("/", "~")) or os.path.isabs(text)


def _outside(path: str, *, relative: bool) -> PathOutsideRoot:
    """The error of a path outside the memory; ``relative``: the caller also takes root-relative paths
    (``memsearch.edit()``, ``memsearch edit``), where the memory tool takes ``/memories`` paths only."""
    also = " or a path relative to the memory root" if relative else ""
    return PathOutsideRoot(f"path {cut(path)} is outside the memory: give '/memories/...' (e.g. "
                           f"'/memories/notes/today.md'){also}")


def _inside(path: Path, base: Path) -> bool:
    return path == base or base in path.parents


def locate(root: Path, path: str, *, foreign: tuple[str, ...] = (), protect: tuple[Path, ...] = (), new: bool = False,
           itself: Target | None = None) -> Target:
    """Check ``path`` against the placement rules; ``root`` must be resolved.

    A name that does not exist but is a look-alike of exactly one existing sibling (:mod:`.names`: equal in NFC)
    is that sibling, and the rules are decided on the names so resolved. ``new``: the last name is to be made
    (``create``, the new path of ``rename``): a look-alike of an existing sibling other than ``itself`` (the
    entry being renamed) is refused (:class:`MemoryFileExists`), as are control and invisible characters.
    Raises :class:`PathOutsideRoot` (escapes, links) or :class:`NotMemoryFile` (hidden, foreign,
    the index, a file used as a directory). Whether it exists, and is Markdown, is the caller's concern.
    """
    rel, shown = to_relative(path)
    if rel == ".":
        return Target(".", root, shown)
    parts = rel.split("/")
    size = len(rel.encode("utf-8"))
    if size > rootfs.PATH_MAX:
        raise InvalidArgument(f"path {shown[:80]!r}... is {size:,} bytes long, over the {rootfs.PATH_MAX:,}-byte limit "
                              "of a memory path: choose a shorter path")
    if any(len(p.encode("utf-8")) > rootfs.NAME_MAX for p in parts):
        raise InvalidArgument(f"path {shown[:80]!r}... has a name longer than {rootfs.NAME_MAX} bytes, the limit "
                              "of one file or folder name: choose a shorter name")
    _check_names(parts, shown, foreign)
    current = root
    for i in range(len(parts)):
        st = _lstat(current / parts[i], shown)
        if st is None:
            twin = _lookalike(root, parts, i, shown, new=new, itself=itself)
            st = None if twin is None else _lstat(current / twin, shown)
            if st is None:
                require_plain(parts[i:], shown)
                break
            parts[i] = twin
        current = current / parts[i]
        if stat.S_ISLNK(st.st_mode):
            where = "/".join(parts[: i + 1])
            raise PathOutsideRoot(f"{shown!r} goes through the link {where!r}; the memory tool never follows links, "
                                  "to read or to write (one could lead outside the memory root): use a real file "
                                  "or directory")
        if i < len(parts) - 1 and not stat.S_ISDIR(st.st_mode):
            where = "/".join(parts[: i + 1])
            raise NotMemoryFile(f"{shown!r} needs {where!r} to be a directory, but it is a file: choose another path")
    if "/".join(parts) != rel:  # a look-alike resolved: the rules again, on the real names
        rel, shown = "/".join(parts), _styled("/".join(parts), in_memories(shown))
        _check_names(parts, shown, foreign)
    full = root.joinpath(*parts)
    for guarded in protect:
        if _inside(full, guarded) or _inside(guarded, full):
            raise NotMemoryFile(f"{shown!r} is (or holds) the search index, which memory writes never touch: "
                                "write memory files elsewhere under the root")
    return Target(rel, full, shown)


def _check_names(parts: list[str], shown: str, foreign: tuple[str, ...]) -> None:
    """Refuse a hidden name, or a path inside a foreign directory."""
    for i, part in enumerate(parts):
        if part.startswith("."):
            raise NotMemoryFile(f"{shown!r} is hidden ({part!r} starts with '.'), and hidden names are never memory: "
                                "choose a name without a leading dot")
        prefix = "/".join(parts[: i + 1])
        if prefix in foreign:
            raise NotMemoryFile(f"{shown!r} is inside {prefix!r}, a directory governed by another format (e.g. Agent Skills), "
                                "not memory: write memory elsewhere, e.g. '/memories/notes/...'")


def _lstat(path: Path, shown: str) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise NotMemoryFile(f"{shown!r} cannot be checked ({exc.strerror}): fix the permissions of {path}") from None


def _lookalike(root: Path, parts: list[str], i: int, shown: str, *, new: bool, itself: Target | None) -> str | None:
    """The existing sibling that missing name ``parts[i]`` resolves to (its one look-alike), or None. Where the
    name is to be made (``new``), a look-alike other than ``itself`` is refused instead; a folder on the way
    resolves to its one look-alike all the same (the write goes into the existing folder)."""
    here = root.joinpath(*parts[:i])
    try:
        found = lookalikes(parts[i], os.listdir(here))
    except OSError:
        return None
    rel = "/".join(parts[:i])
    if new:
        found = [f for f in found if itself is None or (f"{rel}/{f}" if rel else f) != itself.rel]
        if not found or (i < len(parts) - 1 and len(found) == 1):
            return found[0] if found else None
        memories = in_memories(shown)
        folder = _styled(rel or ".", memories)
        kinds = ["folder" if os.path.isdir(here / f) else "file" for f in found]
        named = " and ".join(f"a {kind} named {escape(f)!r}" for f, kind in zip(found, kinds))
        edit = ("edit it (view, then str_replace or insert)" if kinds == ["file"] else
                "write into it" if kinds == ["folder"] else "use one of them")
        raise MemoryFileExists(f"{named} already exist{'s' if len(found) == 1 else ''} in {folder}: the name you gave, "
                               "with its characters encoded another way (Unicode NFC/NFD), so the two would look alike: "
                               f"{edit} at {_styled(f'{rel}/{found[0]}' if rel else found[0], memories)}, "
                               "or choose another name")
    return found[0] if len(found) == 1 else None


def check_growth(root: Path, target: Target, directory: str) -> None:
    """Refuse, before anything is made, a folder ``directory`` (where ``target`` lands) deeper than
    ``MEMSEARCH_MAX_DEPTH`` or more than ``MEMSEARCH_MAX_NEW_DIRS`` new folders for one write (each
    new folder also gets its own ``MEMORY.md``)."""
    parts = [] if directory == "." else directory.split("/")
    limit = settings.get("max_depth")
    if len(parts) > limit:
        raise InvalidArgument(f"{target.shown[:120]} is {len(parts)} folders deep, over the limit of {limit} "
                              f"({settings.env_name('max_depth')}): nothing was written; keep memory shallower, e.g. "
                              f"{target.show('notes/' + target.rel.rsplit('/', 1)[-1])}")
    new = next((len(parts) - i for i in range(len(parts)) if not os.path.lexists(root.joinpath(*parts[: i + 1]))), 0)
    limit = settings.get("max_new_dirs")
    if new > limit:
        raise InvalidArgument(f"{target.shown[:120]} needs {new} new folders, over the limit of {limit} for one "
                              f"write ({settings.env_name('max_new_dirs')}): nothing was written; create fewer levels "
                              "at once")


def require_markdown(target: Target, editing: str | None = None) -> None:
    """Memory files are Markdown: refuse any other name (``editing``: the command about to edit an existing file,
    which is told to rename it to ``.md`` first)."""
    if target.is_markdown:
        return
    if target.rel == ".":  # '/memories' itself: a name made from it ('/memories/.md') would be hidden
        raise NotMemoryFile(f"{target.shown!r} is the memory root, a directory: give the path of a Markdown file in "
                            f"it, e.g. {target.show('notes/today.md')!r}")
    markdown = target.show(target.rel.rsplit(".", 1)[0] + ".md" if "." in target.rel.rsplit("/", 1)[-1] else target.rel + ".md")
    if editing:
        raise NotMemoryFile(f"{target.shown} is not a Markdown file, and {editing} edits memory files (.md) only: "
                            f"rename it to {markdown} first (rename keeps its text), then edit that")
    raise NotMemoryFile(f"{target.shown!r} is not a Markdown file: memory files end in '.md', e.g. {markdown!r}")


@contextmanager
def write_lock(root: Path, timeout: float | None = None) -> Iterator[None]:
    """Hold the write lock of memory root ``root`` (``flock`` on the directory) for a ``with`` block.

    Waits ``timeout`` seconds (default :data:`LOCK_TIMEOUT_S`, None in the call means the default)
    and then raises :class:`MemoryBusy`.
    """
    wait = LOCK_TIMEOUT_S if timeout is None else timeout
    fd = os.open(root, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as exc:
                if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    raise
                if time.monotonic() >= deadline:
                    raise MemoryBusy(f"another writer has held the memory at {root} for over {wait:g} s: "
                                     "retry the call once it has finished") from None
                time.sleep(_LOCK_POLL_S)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the flock


def index_text(directory: str) -> str:
    """The ``MEMORY.md`` made for a new directory: a title from its name and one line on what it holds."""
    if directory == ".":
        return ("# Memory\n\nCore memory: the Markdown files here are always in context; "
                "each subdirectory holds more, described by its own MEMORY.md.\n")
    name = directory.rsplit("/", 1)[-1]
    words = re.sub(r"[-_\s]+", " ", name.removesuffix(".md")).strip() or name
    return f"# {words[:1].upper() + words[1:]}\n\nMemory about {words}: the notes filed in {directory}/.\n"

