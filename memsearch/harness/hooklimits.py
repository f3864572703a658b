"""How long a memsearch hook of Claude Code may take, and the hooks' log of why one gave up.

Shared by the hooks (:mod:`.hooks`), the session log (:mod:`.session_log`), the plugin (:mod:`.plugin`), the hook
settings memsearch writes (:mod:`.claude_code`) and ``memsearch serve``'s wait for a starting service
(:mod:`.forward`): each reads its bound here, so none imports the hooks themselves.
"""

from __future__ import annotations

import os
import time

from .. import settings
from ..errors import MemsearchError

__all__ = ["CLAUDE_MARGIN_S", "MARGIN_S", "claude_timeout", "answer_budget", "OutOfTime", "log_failure"]

#: What Claude Code's ``timeout`` (which memsearch's hook settings write) adds to the ``hook_timeout`` setting
#: (default 8 s: a search through a warm daemon takes about 0.2 s of wall time, Python's start included, a first
#: prompt answered in-process a few seconds: docs/benchmarks.md; past it a hook prints nothing and exits 0).
CLAUDE_MARGIN_S = 2
#: What a prompt answered in-process keeps of the ``hook_timeout`` to print its answer: the wait for the first
#: rows of a tree another writer (the daemon session start started) is building ends this long before it.
MARGIN_S = 1.0


def claude_timeout() -> int:
    """The ``timeout`` (whole seconds) memsearch's hook settings give Claude Code: the ``hook_timeout`` and a margin."""
    import math

    return math.ceil(settings.get("hook_timeout")) + CLAUDE_MARGIN_S


def answer_budget() -> float:
    """Seconds a session's first answer may take: the ``hook_timeout`` setting less :data:`MARGIN_S` (7 s by
    default). The prompt hook's budget, and how long ``memsearch serve`` waits for the service it started
    (:func:`memsearch.harness.forward.starting_wait`), so that both answer a session's first call within it."""
    return max(0.0, settings.get("hook_timeout") - MARGIN_S)


class OutOfTime(BaseException):
    """Raised in a hook by its alarm at the ``hook_timeout``: the hook gives up, prints nothing and exits 0."""


def log_failure(event: str, root, why: BaseException | str) -> None:
    """Say why the ``event`` hook on ``root`` gave up, one line in the hooks' log (owner-only, beside the service's:
    :func:`~memsearch.location.hooks_log_file`), with the traceback of an unexpected error; never raises."""
    try:
        from ..location import hooks_log_file, open_private, rotate_log

        if isinstance(why, OutOfTime):
            text = (f"no answer within the hook_timeout setting ({settings.get('hook_timeout'):g} s; "
                    "MEMSEARCH_HOOK_TIMEOUT raises it)")
        elif isinstance(why, (MemsearchError, OSError)):
            text = str(why)
        elif isinstance(why, BaseException):
            import traceback

            text = "".join(traceback.format_exception(why)).rstrip().replace("\n", "\n    ")
        else:
            text = str(why)
        path = hooks_log_file()
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        line = f"{time.strftime('%Y-%m-%d %H:%M:%S')} {event} hook, {root}: {text}\n"
        rotate_log(path, len(line.encode("utf-8", "replace")))  # a root gone for months: a line every prompt
        with os.fdopen(open_private(path), "a", encoding="utf-8", errors="replace") as log:
            log.write(line)
    except Exception:  # noqa: BLE001 - the log is a courtesy: a hook never fails the session
        pass
