"""The memory-root check: a path made into the absolute, resolved root, or a clear error.

Its own module, standard library and errors only, so that the daemon's thin client (through
:mod:`memsearch.location`) checks a root without importing the tree model.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import NotAMemoryRoot, shown

__all__ = ["resolve_root"]


def resolve_root(root: str | os.PathLike[str]) -> Path:
    """The absolute, resolved memory root; raises :class:`NotAMemoryRoot` if unusable."""
    path = Path(root).expanduser()
    try:
        os.stat(path)
        if not path.is_dir():
            raise NotAMemoryRoot(f"memory root {shown(str(root))} is not a directory: pass the folder that holds MEMORY.md")
        resolved = path.resolve()
        os.listdir(resolved)
    except (FileNotFoundError, NotADirectoryError):
        raise NotAMemoryRoot(f"memory root {shown(str(root))} does not exist: pass the path of a memory directory") from None
    except PermissionError:
        raise NotAMemoryRoot(f"memory root {shown(str(root))} cannot be read: permission denied. Run as its owner or "
                             "fix its permissions (chmod)") from None
    except (OSError, RuntimeError, ValueError) as err:
        raise NotAMemoryRoot(f"memory root {shown(str(root))} cannot be used ({getattr(err, 'strerror', None) or err})") from None
    return resolved
