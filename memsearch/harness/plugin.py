"""The Claude Code plugin's side in Python: its memory root (a setting, created valid on first use), its hooks, its server.

The plugin (``plugins/memsearch`` in the repository, offered by ``.claude-plugin/marketplace.json``) runs
everything through ``scripts/memsearch-plugin``, a shell launcher that finds the ``memsearch`` command and runs
``memsearch claude-code plugin hook EVENT`` (SessionStart, UserPromptSubmit; Stop, SessionEnd and PreCompact
for the session log) or ``memsearch claude-code plugin serve`` (the MCP server). The launcher turns the plugin's
options into settings (``memory_root`` -> ``MEMSEARCH_MEMORY_ROOT``, ``log_sessions`` ->
``MEMSEARCH_LOG_SESSIONS``, ``writable`` -> ``serve --writable``); this module reads them through
:mod:`memsearch.settings`. A root that cannot be used is said in the session (a SessionStart ``systemMessage``
and context line) and by the server's exit message, never as a traceback.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

__all__ = ["ROOT_INDEX", "HOOKS_TIMEOUT_S", "USAGE", "plugin_root", "hook", "serve_argv", "main"]

#: Claude Code's ``timeout`` of every hook of the plugin (``hooks/hooks.json``): fixed, where ``claude-code install``
#: writes it from the ``hook_timeout`` setting. A hook's own bound is kept within it less the margin
#: (:func:`_bound`): past it Claude Code cancels the hook, killing it mid-write, instead of letting it give up.
HOOKS_TIMEOUT_S = 10

#: The root ``MEMORY.md`` written when the plugin's memory root is first used (core memory: kept short).
ROOT_INDEX = ("# Memory\n\n"
              "Long-term memory kept by memsearch for Claude Code. Notes live in folders, each with a MEMORY.md "
              "saying what it holds; Markdown files here, at the root, are always in context: keep them short.\n")


def plugin_root(value=None) -> Path:
    """The plugin's memory root (``value``, else ``MEMSEARCH_MEMORY_ROOT``, else ``~/.memsearch/memory``), created
    with a ``MEMORY.md`` (owner-only) when missing. Raises :class:`~memsearch.errors.InvalidArgument` naming the
    setting when it cannot be used: a relative path (``~`` is the home folder) is refused, since Claude Code runs
    hooks and the server in whatever folder it was started in, and each would make its own memory there."""
    from .. import settings
    from ..errors import InvalidArgument
    from ..memory.files import atomic_write_text

    root = Path(settings.get("memory_root", value)).expanduser()
    if not root.is_absolute():
        raise InvalidArgument(f"the memory root {str(root)!r} is a relative path, which would make a memory in "
                              "whatever folder Claude Code starts in: set the plugin's memory_root option to an "
                              "absolute path or one starting with ~ (/plugin, then memsearch, then configure; or "
                              "`claude plugin install memsearch@memsearch --config memory_root=~/memory`), "
                              "or MEMSEARCH_MEMORY_ROOT, then restart Claude Code")
    try:
        if root.exists() and not root.is_dir():
            raise InvalidArgument(f"the memory root {root} is not a folder: set the plugin's memory_root option "
                                  "(or MEMSEARCH_MEMORY_ROOT) to a folder")
        if not root.exists():
            root.mkdir(mode=0o700, parents=True)
        if not any(root.iterdir()):  # new or empty: made valid Agent Memory
            atomic_write_text(root / "MEMORY.md", ROOT_INDEX)
            os.chmod(root / "MEMORY.md", 0o600)
    except OSError as exc:
        raise InvalidArgument(f"cannot use the memory root {root}: {exc.strerror or exc}; set the plugin's "
                              "memory_root option (or MEMSEARCH_MEMORY_ROOT) to a folder you can write") from None
    return root


def _notice(text: str) -> str:
    """SessionStart output that shows ``text`` to the user and tells the model memory is unavailable."""
    return json.dumps({"systemMessage": f"memsearch plugin: {text}", "hookSpecificOutput": {
        "hookEventName": "SessionStart", "additionalContext": f"The memsearch memory plugin is not working: {text}"}})


def _bound() -> None:
    """A ``hook_timeout`` over what the plugin's Claude Code ``timeout`` allows (:data:`HOOKS_TIMEOUT_S` less
    :data:`~memsearch.harness.hooklimits.CLAUDE_MARGIN_S`) is lowered to it for this hook."""
    from .. import settings
    from .hooklimits import CLAUDE_MARGIN_S

    most = HOOKS_TIMEOUT_S - CLAUDE_MARGIN_S
    if settings.get("hook_timeout") > most:
        os.environ["MEMSEARCH_HOOK_TIMEOUT"] = str(most)


def hook(event: str, argv: list[str]) -> int:
    """``memsearch claude-code plugin hook EVENT [--db DB]``: the hook of :mod:`memsearch.harness.hooks` on the
    plugin's root; ``session-log`` only when the session log is turned on. Always exits 0."""
    from .. import settings
    from ..errors import MemsearchError
    from . import hooks
    from .hooklimits import log_failure

    try:
        if event == "session-log" and not settings.get("log_sessions"):
            return 0
        _bound()
        root = plugin_root()
    except MemsearchError as exc:
        if event == "session-start":
            sys.stdout.write(_notice(str(exc)) + "\n")
        log_failure(event, settings.get("memory_root") or "the plugin's memory root", exc)
        return 0
    return hooks.main([event, "--root", str(root), *argv])


def serve_argv(argv: list[str]) -> list[str] | None:
    """``memsearch claude-code plugin serve [OPTIONS]`` as the command it is: ``memsearch serve ROOT [OPTIONS]`` on the
    plugin's root, which the command line then runs; None (the one line Claude Code shows written) when the root
    cannot be used."""
    try:
        root = plugin_root()
    except Exception as exc:  # noqa: BLE001 - the one line Claude Code shows for a server that did not start
        sys.stderr.write(f"memsearch plugin: {exc}\n")
        return None
    return ["serve", str(root), *argv]


USAGE = "usage: memsearch claude-code plugin hook EVENT | serve [--writable]\n"


def main(argv: list[str]) -> int:
    """``hook EVENT ...`` (what the plugin's launcher runs for a hook; its server is :func:`serve_argv`'s command)."""
    if argv[:1] == ["hook"] and len(argv) > 1:
        return hook(argv[1], argv[2:])
    sys.stderr.write(USAGE)
    return 2
