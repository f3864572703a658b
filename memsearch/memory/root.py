"""The memory-root check: a path made into the absolute, resolved root, or a clear error.

Its own module, standard library and errors only, so that the daemon's thin client (through
:mod:`memsearch.location`) checks a root without importing the tree model.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ..errors import Hint, NotAMemoryRoot, shown

__all__ = ["resolve_root", "given_root", "dir_identity"]


def given_root(root):
    """``root`` itself, unless it is None or empty (blank): :class:`NotAMemoryRoot`, since ``Path("")`` would be the
    working directory. :func:`resolve_root` checks this first; the CLI checks each ROOT argument with it before
    typer makes ``""`` into ``Path(".")`` (:func:`memsearch.cli.options.memory_root`)."""
    if root is None or (isinstance(root, (str, bytes)) and not root.strip()):
        raise NotAMemoryRoot(f"no memory root given ({shown(root)}): pass the path of a memory directory "
                             "(`.` for the working directory: an empty path is refused, not taken for it)")
    return root


def resolve_root(root: str | os.PathLike[str]) -> Path:
    """The absolute, resolved memory root; raises :class:`NotAMemoryRoot` if unusable (an empty path or None too,
    which would otherwise be the working directory, or a TypeError)."""
    path = Path(given_root(root)).expanduser()
    try:
        os.stat(path)
        if not path.is_dir():
            raise NotAMemoryRoot(f"memory root {shown(str(root))} is not a directory: pass the folder that holds MEMORY.md")
        resolved = path.resolve()
        os.listdir(resolved)
    except (FileNotFoundError, NotADirectoryError):
        # the fix, as a hint: a caller passes another path; a model, whose server's root vanished, tells the user
        raise NotAMemoryRoot(f"memory root {shown(str(root))} does not exist", hint=Hint("root_gone")) from None
    except PermissionError:
        raise NotAMemoryRoot(f"memory root {shown(str(root))} cannot be read: permission denied. Run as its owner or "
                             "fix its permissions (chmod)") from None
    except (OSError, RuntimeError, ValueError) as err:
        raise NotAMemoryRoot(f"memory root {shown(str(root))} cannot be used ({getattr(err, 'strerror', None) or err})") from None
    return resolved


def dir_identity(path: str | os.PathLike[str]) -> tuple[int, int] | None:
    """The directory at ``path`` as ``(st_dev, st_ino)``, or None when nothing (or no directory) is there: a
    serving process compares it with the one it loaded to tell a root moved, deleted or replaced."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return (st.st_dev, st.st_ino) if stat.S_ISDIR(st.st_mode) else None
