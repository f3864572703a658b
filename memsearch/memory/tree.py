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
  count only when they resolve inside the root; non-Markdown files are ignored.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from .. import settings
from ..errors import InvalidArgument, NotAMemoryRoot, PathOutsideRoot

__all__ = [
    "INDEX_NAME",
    "DEFAULT_FOREIGN",
    "MemoryTree",
    "scan",
    "resolve_root",
    "foreign_dirs",
    "classify",
    "safe_path",
]

INDEX_NAME = "MEMORY.md"
MARKDOWN_SUFFIX = ".md"
DEFAULT_FOREIGN: tuple[str, ...] = settings.SETTINGS["foreign"].default
FOREIGN_ENV = settings.env_name("foreign")


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

    def child_dirs(self, directory: str) -> tuple[str, ...]:
        """Memory directories directly below ``directory``."""
        return tuple(d for d in self.memory_dirs if parent_dir(d) == (directory or "."))


def parent_dir(relpath: str) -> str:
    """Parent of a relative POSIX path, ``"."`` at the top."""
    parent = str(PurePosixPath(relpath).parent)
    return "." if parent in ("", ".") else parent


def resolve_root(root: str | os.PathLike[str]) -> Path:
    """The absolute, resolved memory root; raises :class:`NotAMemoryRoot` if unusable."""
    path = Path(root).expanduser()
    if not path.exists():
        raise NotAMemoryRoot(f"memory root {str(root)!r} does not exist: pass the path of a memory directory")
    if not path.is_dir():
        raise NotAMemoryRoot(f"memory root {str(root)!r} is not a directory: pass the folder that holds MEMORY.md")
    return path.resolve()


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
    """Walk ``root`` once and classify every entry. Raises :class:`NotAMemoryRoot`."""
    base = resolve_root(root)
    foreign_set = set(foreign_dirs(foreign))
    core: list[str] = []
    external: list[str] = []
    memory: list[str] = []
    with_index: set[str] = set()
    found_foreign: list[str] = []
    skipped: list[str] = []
    has_root_index = False

    def walk(directory: Path, rel: str) -> bool:
        """Walk one directory; return whether it is (or holds) memory."""
        nonlocal has_root_index
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError:
            return False
        has_md = False
        has_child_memory = False
        for entry in entries:
            name = entry.name
            if name.startswith("."):
                continue
            child_rel = name if rel == "." else f"{rel}/{name}"
            try:
                if entry.is_symlink():
                    # Directory links are never followed (no loops, no escapes); file links
                    # count only when they resolve to a Markdown file inside the root.
                    target = Path(entry.path).resolve()
                    if target.is_dir() or not _inside(target, base):
                        skipped.append(child_rel)
                        continue
                    if not (name.endswith(MARKDOWN_SUFFIX) and target.is_file()):
                        continue
                elif entry.is_dir(follow_symlinks=False):
                    if child_rel in foreign_set:
                        found_foreign.append(child_rel)
                    elif walk(Path(entry.path), child_rel):
                        has_child_memory = True
                    continue
                elif not (name.endswith(MARKDOWN_SUFFIX) and entry.is_file(follow_symlinks=False)):
                    continue
            except (OSError, RuntimeError):  # RuntimeError: link loop on older Pythons
                continue
            has_md = True
            if rel == ".":
                core.append(child_rel)
                if name == INDEX_NAME:
                    has_root_index = True
            else:
                external.append(child_rel)
                if name == INDEX_NAME:
                    with_index.add(rel)
        is_memory = has_md or has_child_memory
        if is_memory and rel != ".":
            memory.append(rel)
        return is_memory

    walk(base, ".")
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
    )


def safe_path(root: Path, path: str | os.PathLike[str]) -> tuple[Path, str]:
    """Resolve a user-given path inside ``root``; return (absolute path, relative POSIX path).

    Refuses absolute paths, ``..`` escapes and links whose target leaves the root, with
    :class:`PathOutsideRoot`. ``root`` must already be resolved (see :func:`resolve_root`).
    """
    text = str(path).strip()
    if text in ("", "."):
        return root, "."
    if "\x00" in text:
        raise PathOutsideRoot(f"path {text!r} contains a NUL byte: give a path relative to the memory root")
    if os.path.isabs(text) or text.startswith("~"):
        raise PathOutsideRoot(f"path {text!r} is absolute: give a path relative to the memory root, e.g. 'notes/2026-08-12.md'")
    parts = PurePosixPath(text.replace(os.sep, "/")).parts
    if ".." in parts:
        raise PathOutsideRoot(f"path {text!r} leaves the memory root: '..' is not allowed")
    candidate = root.joinpath(*parts)
    resolved = candidate.resolve()
    if not _inside(resolved, root):
        raise PathOutsideRoot(f"path {text!r} is a link that leads outside the memory root; only memory inside the root can be read")
    rel = "/".join(parts) or "."
    return candidate, rel


def classify(rel: str, *, foreign: tuple[str, ...] = DEFAULT_FOREIGN) -> str:
    """What a relative POSIX path is by name alone: ``core``, ``external``, ``hidden``,
    ``foreign`` or ``other`` (not Markdown). Existence and links are the caller's concern."""
    parts = PurePosixPath(rel).parts
    if any(p.startswith(".") for p in parts):
        return "hidden"
    for i in range(1, len(parts)):
        if "/".join(parts[:i]) in foreign:
            return "foreign"
    if not rel.endswith(MARKDOWN_SUFFIX):
        return "other"
    return "core" if len(parts) == 1 else "external"
