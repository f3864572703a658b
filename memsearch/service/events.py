"""Which file events matter to the daemon: :class:`MemoryFilter`, a watchfiles filter on the tree model."""

from __future__ import annotations

import os
import stat
from typing import Iterable

import watchfiles

from ..memory.tree import ancestors, classify, foreign_dirs

__all__ = ["MemoryFilter", "ancestors"]


class MemoryFilter:
    """A watchfiles filter: keep the events that may change what the index holds.

    Files are judged by :func:`memsearch.memory.tree.classify`, the indexer's own tree model.
    Directory events are kept (a renamed or deleted folder moves or removes every file in
    it, and inotify reports only the folder): a folder that exists, or one that held
    indexed files (``known_dirs``) and is gone.
    """

    def __init__(self, root: str | os.PathLike[str], *, foreign=None, include_core: bool = False,
                 ignore_paths: Iterable[str | os.PathLike[str]] = (), known_dirs: Iterable[str] = ()):
        self.root = str(root).rstrip(os.sep)
        self.foreign = foreign_dirs(foreign)
        self.include_core = include_core
        self.ignore_paths = tuple(str(p).rstrip(os.sep) for p in ignore_paths)
        self.known_dirs: set[str] = set(known_dirs)

    def relative(self, path: str) -> str | None:
        """``path`` relative to the root (POSIX), or None for the root, outside it, or ignored."""
        for ignored in self.ignore_paths:
            if path == ignored or path.startswith(ignored + os.sep):
                return None
        if not path.startswith(self.root + os.sep):
            return None
        return path[len(self.root) + 1:].replace(os.sep, "/") or None

    def kind(self, change: watchfiles.Change, path: str) -> str | None:
        """``"file"`` (a memory file event), ``"dir"`` (re-scan) or None (not memory)."""
        rel = self.relative(path)
        if rel is None:
            return None
        what = classify(rel, foreign=self.foreign)
        if what in ("hidden", "foreign"):
            return None
        try:
            is_dir = stat.S_ISDIR(os.lstat(path).st_mode)
            exists = True
        except OSError:
            is_dir = exists = False
        if is_dir:
            return "dir"
        if what == "other":
            return "dir" if not exists and rel in self.known_dirs else None
        if what == "core" and not self.include_core:
            return None
        return "file"

    def __call__(self, change: watchfiles.Change, path: str) -> bool:
        return self.kind(change, path) is not None

    def __repr__(self) -> str:
        return f"MemoryFilter(root={self.root!r}, foreign={self.foreign!r}, include_core={self.include_core})"
