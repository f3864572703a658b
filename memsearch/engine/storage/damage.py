"""A damaged or full index: recognise the failure and name the fix (:func:`translated`, behind :meth:`Store.guard`).

The index is derived data: while the Markdown exists nothing in it is lost, so every kind
of damage (a truncated or deleted data file, missing manifests or ``_indices``, garbage in a
table, an ``index.json`` that is not the object we wrote) becomes either
:class:`~memsearch.errors.IndexDamaged`, naming ``memsearch index ROOT --rebuild``, or a
rebuild on its own by a writer (``memsearch index``, the daemon, a sync before a search).
A full disk is :class:`~memsearch.errors.StorageFull`: the previous index stays searchable.
"""

from __future__ import annotations

import contextlib
import errno
import re
from typing import Iterator

from ...errors import Hint, IndexDamaged, MemsearchError, RemoteStoreError, StorageFull
from .remote import RemoteDB, translate

__all__ = ["damage_reason", "disk_full", "index_error", "is_panic", "reason_of", "translated"]

_FULL_ERRNOS = (errno.ENOSPC, errno.EDQUOT)
_FULL_TEXT = ("no space left on device", "os error 28", "disk quota exceeded", "os error 122", "file too large",
              "os error 27")
_RUST_PATH = re.compile(r",?\s*/(?:rustc|root/\.cargo)/\S+")


def disk_full(exc: BaseException) -> bool:
    """Whether ``exc`` says the disk (or quota, or file size limit) is exhausted."""
    if isinstance(exc, OSError) and exc.errno in (*_FULL_ERRNOS, errno.EFBIG):
        return True
    return any(marker in str(exc).lower() for marker in _FULL_TEXT)


def is_panic(exc: BaseException) -> bool:
    """Whether ``exc`` is a Rust panic surfaced by pyo3 (``pyo3_runtime.PanicException``, a BaseException
    that no ``except Exception`` catches); the class is made at run time, so it is known by its place."""
    kind = type(exc)
    return kind.__name__ == "PanicException" and kind.__module__ == "pyo3_runtime"


def reason_of(exc: BaseException, limit: int = 160) -> str:
    """One short line saying what failed (no Rust source paths, no multi-line dumps)."""
    text = _RUST_PATH.sub("", str(exc)).strip().splitlines()
    line = (text[0] if text else type(exc).__name__).strip()
    return line if len(line) <= limit else line[:limit] + "..."


def store_failure(exc: BaseException, remote: RemoteDB | None) -> RemoteStoreError | None:
    """The typed error when ``exc`` is a remote index's object store failing (down, 5xx, refused credentials,
    no bucket) rather than damage: nothing may be rebuilt for it. None for a local index or anything else."""
    if remote is None or isinstance(exc, MemsearchError):
        return None
    failure = translate(exc, remote)
    return None if type(failure) is RemoteStoreError else failure


def damage_reason(exc: BaseException, remote: RemoteDB | None = None) -> str:
    """:func:`reason_of` for a check that found ``exc``; the store's own failure is raised instead (no damage)."""
    failure = store_failure(exc, remote)
    if failure is not None:
        raise failure from None
    return reason_of(exc)


def index_error(exc: BaseException, db_path, root) -> MemsearchError:
    """The typed error for a failure of the store at ``db_path`` (a MemsearchError passes through)."""
    if isinstance(exc, MemsearchError):
        return exc
    if disk_full(exc):
        return StorageFull(f"the disk holding the index {db_path} is full ({reason_of(exc, 80)}): free some space, "
                           "or put the index elsewhere with --db, then run the command again; searches keep answering "
                           "from the index as it was")
    if isinstance(exc, PermissionError):
        return StorageFull(f"cannot write the index at {db_path}: permission denied. Pass --db DIR (or set "
                           "MEMSEARCH_DB) to a directory you can write")
    reason = f"the index at {db_path} is damaged ({reason_of(exc)})"
    return IndexDamaged(f"{reason}. It is derived from your Markdown, which is untouched", reason=reason,
                        hint=Hint("rebuild"))


@contextlib.contextmanager
def translated(db, root, remote: RemoteDB | None = None) -> Iterator[None]:
    """Turn what LanceDB, Arrow or the disk raise inside the block into the typed error for the index
    at ``db`` of the memory root ``root`` (a MemsearchError passes through; so does a Ctrl-C). A Rust
    panic of a ``remote`` index's object store is that store's error (:func:`.remote.translate`)."""
    try:
        yield
    except (OSError, RuntimeError, ValueError) as exc:
        raise (store_failure(exc, remote) or index_error(exc, db, root)) from None
    except BaseException as exc:  # a Rust panic (pyo3's PanicException) derives from BaseException
        if not is_panic(exc):
            raise
        raise (translate(exc, remote) if remote is not None else index_error(exc, db, root)) from None
