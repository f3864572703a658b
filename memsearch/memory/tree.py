"""The Agent Memory tree model: one walk that classifies everything under a memory root.

Every other part of memsearch (validator, harness contract, indexer, watcher) asks this
module what a path *is*, so they can never disagree:

* **core files**: ``*.md`` directly in the root; always in the agent's context.
* **external files**: ``*.md`` below the root inside memory directories (nested
  ``MEMORY.md`` included); never auto-loaded, found through search and listings.
* **memory directory**: a directory below the root that holds Markdown directly or holds
  another memory directory (``a/b/c/note.md`` makes ``a``, ``a/b`` and ``a/b/c`` memory).
* **foreign directories**: governed by another format and skipped whole (default:
  ``skills/`` at the root, for Agent Skills). Set with ``foreign=`` or ``MEMSEARCH_FOREIGN``.
* names starting with ``.`` are never memory (``.git``, editor state, our own index);
  directory links are never followed (so a link loop cannot hang a walk), and file links
  count only when they resolve inside the root to a memory file (decided on the resolved
  path: a link to a hidden file is not memory); non-Markdown files are ignored.
* reads (and writes) go through :func:`open_memory`: descriptors, never a second lookup by name.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from .. import settings
from ..errors import (
    Hint,
    InvalidArgument,
    MemoryFileNotFound,
    MemsearchError,
    NotAMemoryRoot,
    NotMemoryFile,
    PathOutsideRoot,
    shown,
)
from . import rootfs
from .names import MEMORIES_PREFIX, in_memories
from .root import resolve_root

__all__ = [
    "INDEX_NAME",
    "DEFAULT_FOREIGN",
    "MemoryTree",
    "scan",
    "resolve_root",
    "foreign_dirs",
    "classify",
    "refuse_other_dir",
    "misnamed_index",
    "empty_index",
    "safe_path",
    "path_parts",
    "memory_kind",
    "open_memory",
    "read_memory",
    "valid_name",
    "printable",
    "ancestors",
]

INDEX_NAME = "MEMORY.md"
MARKDOWN_SUFFIX = ".md"
DEFAULT_FOREIGN: tuple[str, ...] = settings.SETTINGS["foreign"].default


@dataclass(frozen=True)
class MemoryTree:
    """What one walk of a memory root found. Paths are relative to ``root``, POSIX style."""

    root: Path
    core_files: tuple[str, ...]
    external_files: tuple[str, ...]
    memory_dirs: tuple[str, ...]
    foreign_dirs: tuple[str, ...] = ()
    skipped_links: tuple[str, ...] = ()
    has_root_index: bool = False
    _dirs_with_index: frozenset[str] = field(default=frozenset(), repr=False)
    #: (directory, reason) for each directory that could not be listed; its branch is not memory.
    unreadable: tuple[tuple[str, str], ...] = ()
    #: FIFOs, sockets and device nodes: never memory, never opened.
    special: tuple[str, ...] = ()
    #: Markdown files and directories whose name is not valid UTF-8 (:func:`valid_name`): skipped whole.
    unnamed: tuple[str, ...] = ()

    @property
    def dirs_missing_index(self) -> tuple[str, ...]:
        """Memory directories that lack their ``MEMORY.md`` (spec violations)."""
        return tuple(d for d in self.memory_dirs if d not in self._dirs_with_index)

    def has_index(self, directory: str) -> bool:
        """Whether ``directory`` (relative, ``"."`` for the root) holds a ``MEMORY.md``."""
        if directory in ("", "."):
            return self.has_root_index
        return directory in self._dirs_with_index

    def files_in(self, directory: str) -> tuple[str, ...]:
        """External (or, for ``"."``, core) files directly inside ``directory``."""
        if directory in ("", "."):
            return self.core_files
        return tuple(f for f in self.external_files if parent_dir(f) == directory)

    def indexed_files(self, include_core: bool = False) -> tuple[str, ...]:
        """The files an index of this tree holds: external memory, and core memory when ``include_core``."""
        return self.external_files + (self.core_files if include_core else ())

    def nearest_dir(self, rel: str) -> str:
        """The nearest memory directory above ``rel`` (``"."`` at the top): what a path not found names to list, not
        a parent that is missing too."""
        return next((d for d in reversed(ancestors(rel)) if d in self.memory_dirs), ".")

    def child_dirs(self, directory: str) -> tuple[str, ...]:
        """Memory directories directly below ``directory``."""
        return tuple(d for d in self.memory_dirs if parent_dir(d) == (directory or "."))


def valid_name(name: str) -> bool:
    """Whether a name (or relative path) is valid UTF-8 text. The file system may hold any bytes (``\\xff.md``),
    which Python shows as lone surrogates; such a name can be neither searched, stored in the index, nor
    given back to a caller, so it is never memory: the walk skips it (the validator warns ``bad-name``), a
    read refuses it and a write never creates one."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def printable(rel: str) -> str:
    """A relative path for messages: bytes that are not UTF-8 written as ``\\xNN`` escapes."""
    if valid_name(rel):
        return rel
    try:
        return rel.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:  # a surrogate no byte decodes to (e.g. \\ud800): its code point
        return rel.encode("utf-8", "backslashreplace").decode("utf-8")


def parent_dir(relpath: str) -> str:
    """Parent of a relative POSIX path, ``"."`` at the top."""
    parent = str(PurePosixPath(relpath).parent)
    return "." if parent in ("", ".") else parent


def foreign_dirs(foreign: str | os.PathLike[str] | tuple | list | None = None) -> tuple[str, ...]:
    """Foreign directories (relative to the root): argument, else ``MEMSEARCH_FOREIGN``, else default.

    ``MEMSEARCH_FOREIGN`` is a comma-separated list; ``none`` means none.
    """
    if foreign is None:
        foreign = settings.get("foreign")
    elif isinstance(foreign, (str, os.PathLike)):
        foreign = [foreign]
    out = []
    for item in foreign:
        text = str(PurePosixPath(str(item).strip().replace(os.sep, "/")))
        if text in ("", ".") or text.startswith(("/", "..")):
            raise InvalidArgument(f"foreign directory {item!r} must be a path relative to the memory root, e.g. 'skills'")
        out.append(text)
    return tuple(out)


def _inside(path: Path, root: Path) -> bool:
    try:
        path.relative_to(root)
    except ValueError:
        return False
    return True


def scan(root: str | os.PathLike[str], *, foreign: tuple[str, ...] | list[str] | None = None) -> MemoryTree:
    """Walk ``root`` once (iteratively: any depth) and classify every entry. Raises :class:`NotAMemoryRoot`.

    Directories that cannot be listed and entries that are neither files nor directories
    (FIFOs, sockets, devices) are skipped and reported in ``unreadable`` and ``special``.
    """
    base = resolve_root(root)
    foreign_set = set(foreign_dirs(foreign))
    core: list[str] = []
    external: list[str] = []
    with_index: set[str] = set()
    found_foreign: list[str] = []
    skipped: list[str] = []
    unreadable: list[tuple[str, str]] = []
    special: list[str] = []
    unnamed: list[str] = []
    has_root_index = False

    def descend(rel: str, entry: rootfs.Entry) -> bool:
        return not entry.name.startswith(".") and valid_name(entry.name) and rel not in foreign_set

    root_fd = rootfs.open_root(base)
    try:
        for listed in rootfs.walk_dirs(root_fd, str(base), [], descend):
            rel = listed.rel
            if listed.error is not None:
                if rel != ".":
                    unreadable.append((rel, listed.error))
                continue
            for entry in listed.entries:
                name = entry.name
                if name.startswith("."):
                    continue
                child_rel = name if rel == "." else f"{rel}/{name}"
                if not valid_name(name):
                    if entry.kind == "dir" or name.endswith(MARKDOWN_SUFFIX):
                        unnamed.append(child_rel)  # never memory: no path can name it (see valid_name)
                    continue
                if entry.kind == "link":
                    # Directory links are never followed (no loops, no escapes); a file link counts
                    # when it resolves, by the reader's own rules, to a memory file inside the root.
                    if not name.endswith(MARKDOWN_SUFFIX) or not _link_is_memory(root_fd, base, child_rel, foreign_set):
                        skipped.append(child_rel)
                        continue
                elif entry.kind == "dir":
                    if child_rel in foreign_set:
                        found_foreign.append(child_rel)
                    continue
                elif entry.kind == "special":
                    special.append(child_rel)
                    continue
                elif not name.endswith(MARKDOWN_SUFFIX):
                    continue
                if rel == ".":
                    core.append(child_rel)
                    has_root_index = has_root_index or name == INDEX_NAME
                else:
                    external.append(child_rel)
                    if name == INDEX_NAME:
                        with_index.add(rel)
    except MemsearchError as exc:
        raise NotAMemoryRoot(f"memory root {shown(str(root))} cannot be used ({exc})") from None
    finally:
        os.close(root_fd)
    memory = {a for f in external for a in ancestors(f)}
    core.sort(key=lambda p: (p != INDEX_NAME, p))
    return MemoryTree(
        root=base,
        core_files=tuple(core),
        external_files=tuple(sorted(external)),
        memory_dirs=tuple(sorted(memory)),
        foreign_dirs=tuple(sorted(found_foreign)),
        skipped_links=tuple(sorted(skipped)),
        has_root_index=has_root_index,
        _dirs_with_index=frozenset(with_index),
        unreadable=tuple(sorted(unreadable)),
        special=tuple(sorted(special)),
        unnamed=tuple(sorted(unnamed)),
    )


def ancestors(rel: str) -> list[str]:
    """The folders above ``rel`` (a file or a folder, relative to the root), outermost first:
    ``a/b/c.md`` -> ``a``, ``a/b``. The root itself is not among them."""
    parts = rel.split("/")[:-1]
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


def _link_is_memory(root_fd: int, base: Path, rel: str, foreign_set) -> bool:
    try:
        with rootfs.walk(root_fd, str(base), rel.split("/"), rel) as opened:
            return memory_kind(rel, opened.real, foreign=tuple(foreign_set)) in ("core", "external")
    except (MemsearchError, OSError):
        return False


def safe_path(root: Path, path: str | os.PathLike[str]) -> tuple[Path, str]:
    """Check a user-given path lexically inside ``root``; return (absolute path, relative POSIX path).

    Refuses absolute paths, ``..``, NUL bytes and links whose target leaves the root, with
    :class:`PathOutsideRoot`; over-long paths and text that is no valid path with
    :class:`InvalidArgument`. ``root`` must already be resolved (see :func:`resolve_root`).
    This is a check by name: read and write through :func:`open_memory` (descriptors).
    """
    parts = path_parts(path)
    if not parts:
        return root, "."
    candidate = root.joinpath(*parts)
    try:
        resolved = candidate.resolve()
    except (OSError, RuntimeError):  # a link loop
        raise NotMemoryFile(f"path {shown(str(path))} is a symlink loop: fix or remove the link") from None
    if not _inside(resolved, root):
        raise PathOutsideRoot(
            f"path {shown(str(path))} is a link that leads outside the memory root; "
            f"only memory inside the root can be read"
        )
    return candidate, "/".join(parts)


def path_parts(path: str | os.PathLike[str]) -> list[str]:
    """The components of a path relative to the memory root, checked by name (``[]`` for the root)."""
    if not isinstance(path, (str, os.PathLike)):
        raise InvalidArgument(f"a path must be a string, got {type(path).__name__}")
    text = str(path).strip()
    if text in ("", "."):
        return []
    if "\x00" in text:
        raise PathOutsideRoot(f"path {shown(text)} contains a NUL byte: give a path relative to the memory root")
    if not valid_name(text):
        raise InvalidArgument(
            f"path '{printable(text)[:120]}' is not valid UTF-8; such names are never memory: "
            "rename the file with valid UTF-8 (validate lists them as bad-name)"
        )
    size = len(os.fsencode(text))
    if os.path.isabs(text) or text.startswith("~"):
        styled = in_memories(text)  # a memory tool path: name the same file relative to the root
        example = (text[len(MEMORIES_PREFIX):].strip("/") or ".") if styled else "notes/2026-08-12.md"
        raise PathOutsideRoot(f"path {shown(text)} is absolute: give a path relative to the memory root, e.g. {shown(example)}")
    parts = [p for p in PurePosixPath(text.replace(os.sep, "/")).parts if p != "."]
    if ".." in parts:
        raise PathOutsideRoot(f"path {shown(text)} leaves the memory root: '..' is not allowed")
    if size > rootfs.PATH_MAX:
        raise InvalidArgument(
            f"path {shown(text)} is {size:,} bytes long, over the {rootfs.PATH_MAX:,}-byte limit: no such memory file"
        )
    if any(len(os.fsencode(p)) > rootfs.NAME_MAX for p in parts):
        raise InvalidArgument(
            f"path {shown(text)} has a component longer than {rootfs.NAME_MAX} bytes: no such memory file"
        )
    return parts


def memory_kind(rel: str, real: str | None = None, *, foreign: tuple[str, ...] = DEFAULT_FOREIGN) -> str:
    """What a path is, decided on the name given *and* on the resolved path ``real``:
    a link ``alias.md -> .private/x.md`` is ``hidden``, one into ``skills/`` is ``foreign``."""
    given = classify(rel, foreign=foreign)
    if real is not None and real != rel:
        resolved = classify(real, foreign=foreign)
        if resolved in ("hidden", "foreign") and given not in ("hidden", "foreign"):
            return resolved
    return given


def open_memory(root: Path, path: str | os.PathLike[str], *, foreign=None) -> tuple[rootfs.Opened, str]:
    """Open a memory file inside ``root`` (resolved) by descriptor: ``(opened, relative path as given)``.

    The one gate for every read (contract, indexer, tools, MCP) and the model for writes:
    hidden and foreign are decided on the resolved path, the file is opened component by
    component with ``O_NOFOLLOW`` (:mod:`memsearch.memory.rootfs`) and only that descriptor is
    read. Raises :class:`PathOutsideRoot`, :class:`NotMemoryFile`, :class:`MemoryFileNotFound`,
    :class:`~memsearch.errors.MemoryUnreadable` or :class:`InvalidArgument`.
    """
    parts = path_parts(path)
    rel = "/".join(parts) or "."
    fdirs = foreign_dirs(foreign)
    kind = classify(rel, foreign=fdirs)
    if kind == "other" and rel not in fdirs and _is_folder(root, parts, rel):  # as for a folder named x.md
        raise MemoryFileNotFound(f"no memory file {shown(rel)}", hint=Hint("list_dir", rel))
    _refuse_kind(rel, kind)
    root_fd = rootfs.open_root(root)
    try:
        opened = rootfs.walk(root_fd, str(root), parts, rel)
    finally:
        os.close(root_fd)
    try:
        _refuse_kind(rel, memory_kind(rel, opened.real, foreign=fdirs))
    except BaseException:
        opened.close()
        raise
    return opened, rel


def _is_folder(root: Path, parts: list[str], rel: str) -> bool:
    """Whether ``parts`` is a folder inside ``root``, reached by descriptor as any read is (links not followed)."""
    root_fd = rootfs.open_root(root)
    try:
        rootfs.walk(root_fd, str(root), parts, rel, directory=True).close()
        return True
    except (MemsearchError, OSError):
        return False
    finally:
        os.close(root_fd)


def _refuse_kind(rel: str, kind: str) -> None:
    if kind == "hidden":
        raise NotMemoryFile(f"{shown(rel)} is hidden (a name starts with '.', or a link leads to one), not memory")
    if kind == "foreign":
        raise NotMemoryFile(
            f"{shown(rel)} belongs to a foreign directory (another format, e.g. Agent Skills), not memory"
        )
    if kind == "other":
        raise NotMemoryFile(f"{shown(rel)} is not a Markdown (.md) file; only memory files can be read")


def refuse_other_dir(rel: str, *, foreign: tuple[str, ...] = DEFAULT_FOREIGN, what: str = "", root=None) -> None:
    """Refuse, by name, a directory that is never memory: hidden (a name in it starts with ``.``, e.g. the index's
    ``.memsearch``) or foreign (``skills/``). The one rule of every directory argument (a listing, a search's scope);
    ``what`` names the argument in the message (``"scope "``), ``root`` the root its hint's command lists."""
    kind = classify(f"{rel}/x.md", foreign=foreign)
    if kind == "hidden":
        about = "a hidden directory (a name in its path starts with '.')"
    elif kind == "foreign":
        about = "a directory of another format (e.g. Agent Skills)"
    else:
        return
    raise NotMemoryFile(f"{what}{shown(rel)} is {about}, not memory, and is never listed, read or searched",
                        hint=Hint("list", ".", root=root))


def misnamed_index(name: str) -> bool:
    """Whether a file name differs from ``MEMORY.md`` by case only (``memory.md``): no index to any reader."""
    return name != INDEX_NAME and name.lower() == INDEX_NAME.lower()


def empty_index(rel: str, text: str) -> bool:
    """Whether ``rel`` is a ``MEMORY.md`` whose ``text`` says nothing (blank): its directory goes undescribed."""
    return rel.rsplit("/", 1)[-1] == INDEX_NAME and not text.strip()


def read_memory(root: Path, path: str | os.PathLike[str], *, foreign=None) -> tuple[bytes, str]:
    """The bytes of one memory file read through :func:`open_memory`, and its relative path."""
    opened, rel = open_memory(root, path, foreign=foreign)
    with opened:
        try:
            return rootfs.read_fd(opened.fd), rel
        except OSError as err:
            raise rootfs.error_for(err, rel) from None


def classify(rel: str, *, foreign: tuple[str, ...] = DEFAULT_FOREIGN) -> str:
    """What a relative POSIX path is by name alone: ``core``, ``external``, ``hidden``,
    ``foreign`` or ``other`` (not Markdown, or not valid UTF-8). Existence and links are the caller's concern."""
    parts = PurePosixPath(rel).parts
    if any(p.startswith(".") for p in parts):
        return "hidden"
    if not valid_name(rel):
        return "other"
    for i in range(1, len(parts)):
        if "/".join(parts[:i]) in foreign:
            return "foreign"
    if not rel.endswith(MARKDOWN_SUFFIX):
        return "other"
    return "core" if len(parts) == 1 else "external"
