"""An index's parameters file (``index.json``: model, chunker, format version), local or on object storage."""

from __future__ import annotations

import json
import os
from pathlib import Path

from ...errors import Hint, IndexDamaged
from ...location import META_FILE
from ...memory.files import atomic_write_json
from .remote import RemoteDB

__all__ = ["read", "write", "stamp"]


def read(db: Path, remote: RemoteDB | None = None) -> dict | None:
    """The parameters the index in folder ``db`` (or ``remote``) was built with (None before its first build);
    damage is :class:`IndexDamaged`."""
    if remote is not None:
        return remote.read_meta()
    path = db / META_FILE
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as err:
        raise IndexDamaged(f"the index parameters in {path} are unreadable ({str(err)[:120]})",
                           hint=Hint("rebuild")) from None
    if not isinstance(data, dict) or not isinstance(data.get("chunker", {}), dict):
        raise IndexDamaged(f"the index parameters in {path} are not the object memsearch writes", hint=Hint("rebuild"))
    return data


def write(db: Path, data: dict, remote: RemoteDB | None = None) -> None:
    """Replace the parameters whole (a rename, or one PUT)."""
    if remote is not None:
        return remote.write_meta(data)
    atomic_write_json(db / META_FILE, data, indent=2, sort_keys=True)


def stamp(db: Path, remote: RemoteDB | None = None) -> tuple | None:
    """What changes whenever ``index.json`` is replaced (a new inode and mtime, or a new etag)."""
    if remote is not None:
        return remote.stamp()
    try:
        st = os.stat(db / META_FILE)
    except OSError:
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_size)
