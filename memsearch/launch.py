"""How memsearch starts its own Python processes (Claude Code hooks, daemons) so that no folder they run in can inject code.

``python -m MODULE`` puts the working directory first on ``sys.path``: a hook Claude Code runs in a
project, or a daemon started from it, would import that project's ``json.py``, ``socket.py`` or
``memsearch.py`` before the standard library's and memsearch's own. So every such command line is
``python -I -m ...`` (isolated: neither the working directory nor ``PYTHON*`` variables nor the user's
site-packages reach ``sys.path``), or ``python -P -m ...`` (only the working directory left out) where
this memsearch is itself imported from ``PYTHONPATH`` or the user's site-packages, which ``-I`` would
drop; and a background process runs in :data:`DETACHED_CWD`, not in the caller's folder.
"""

from __future__ import annotations

import functools
import os
import site
import sys
from pathlib import Path

__all__ = ["DETACHED_CWD", "python_flag", "python_argv"]

#: The working directory of a process memsearch starts in the background (``/``, as daemons do): it never
#: runs in, or keeps busy, the folder it was started from. Every path it is given is absolute.
DETACHED_CWD = os.path.abspath(os.sep)


def _under(path: Path, entries) -> bool:
    for entry in entries:
        try:
            if entry and path.is_relative_to(Path(entry).resolve()):
                return True
        except (OSError, ValueError):
            continue
    return False


@functools.cache
def python_flag() -> str:
    """``-I``, or ``-P`` when this memsearch is imported from a ``PYTHONPATH`` entry or the user's site-packages."""
    package = Path(__file__).resolve().parent
    outside = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    if site.ENABLE_USER_SITE:
        outside.append(site.getusersitepackages())
    return "-P" if _under(package, outside) else "-I"


def python_argv(module: str, *args: str, python: str | None = None) -> list[str]:
    """The command line that runs ``python -m module args...`` isolated from its working directory."""
    return [python or sys.executable, python_flag(), "-m", module, *args]
