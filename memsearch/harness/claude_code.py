"""Claude Code integration: the memsearch hooks and MCP server written into a project (or a plugin folder).

Formats as Claude Code documents them: hooks in the project's ``.claude/settings.json``
(https://code.claude.com/docs/en/hooks:
``{"hooks": {EVENT: [{"hooks": [{"type": "command", "command", "timeout"}]}]}}``), the MCP server in the
project's ``.mcp.json`` (https://code.claude.com/docs/en/mcp), and a plugin as a folder with
``.claude-plugin/plugin.json``, ``hooks/hooks.json`` and ``.mcp.json``
(https://code.claude.com/docs/en/plugins-reference).
Every command names the memsearch installation and the memory root by absolute path.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from ..errors import ClientConfigError
from ..launch import python_argv
from . import clients
from .clients import ConfigChange, ServerSpec
from .hooks import CLAUDE_TIMEOUT_S

__all__ = ["HOOK_MODULE", "EVENTS", "hook_command", "hooks_config", "plan_project", "plan_plugin"]

#: The module Claude Code runs for each hook (``python -m``); also how memsearch recognises its own entries.
HOOK_MODULE = "memsearch.harness.hooks"
#: Claude Code's hook events memsearch uses, and the event argument of :data:`HOOK_MODULE`.
EVENTS = {"SessionStart": "session-start", "UserPromptSubmit": "prompt"}


def hook_command(event: str, root: Path, db: str | None = None, python: str | None = None) -> str:
    """The shell command Claude Code runs for ``event``, every path absolute; Python runs isolated from the
    project it is started in (:mod:`memsearch.launch`), so the project's own modules never load."""
    parts = python_argv(HOOK_MODULE, EVENTS[event], "--root", str(root), python=python)
    if db:
        parts += ["--db", db]
    return shlex.join(parts)


def hooks_config(root: Path, db: str | None = None, python: str | None = None) -> dict:
    """``{"hooks": ...}`` with memsearch's SessionStart and UserPromptSubmit hooks."""
    return {"hooks": {event: [{"hooks": [{"type": "command", "command": hook_command(event, root, db, python),
                                          "timeout": CLAUDE_TIMEOUT_S}]}]
                      for event in EVENTS}}


def _ours(group) -> bool:
    return isinstance(group, dict) and any(isinstance(h, dict) and HOOK_MODULE in str(h.get("command", ""))
                                           for h in group.get("hooks") or [])


def merge_settings(before: str | None, ours: dict, path: Path) -> str:
    """``before`` (Claude Code settings JSON, or None) with memsearch's hooks in place of any earlier ones."""
    try:
        data = json.loads(before) if before and before.strip() else {}
    except ValueError as exc:
        raise ClientConfigError(f"{path} is not valid JSON ({exc}): fix it, then run again") from None
    hooks = data.setdefault("hooks", {}) if isinstance(data, dict) else None
    if not isinstance(hooks, dict):
        raise ClientConfigError(f"{path}: expected a JSON object with an object 'hooks'; fix it, then run again")
    for event, groups in ours["hooks"].items():
        kept = [g for g in hooks.get(event) or [] if not _ours(g)]
        hooks[event] = kept + groups
    return json.dumps(data, indent=2) + "\n"


def _change(path: Path, after: str) -> ConfigChange:
    before = path.read_text(encoding="utf-8") if path.is_file() else None
    return ConfigChange(path, before, after)


def plan_project(spec: ServerSpec, root: Path, project: Path, db: str | None = None) -> list[ConfigChange]:
    """The changes that install memsearch into ``project``: ``.claude/settings.json`` (hooks) and ``.mcp.json``."""
    project = project.absolute()
    settings = project / ".claude" / "settings.json"
    try:
        before = settings.read_text(encoding="utf-8") if settings.is_file() else None
    except (OSError, UnicodeDecodeError) as exc:
        raise ClientConfigError(f"cannot read {settings}: {exc}") from None
    hooks = ConfigChange(settings, before, merge_settings(before, hooks_config(root, db), settings))
    return [hooks, clients.plan_install(spec, "claude-code", project=project)]


def plan_plugin(spec: ServerSpec, root: Path, folder: Path, db: str | None = None) -> list[ConfigChange]:
    """The files of a Claude Code plugin folder with the same hooks and MCP server."""
    from .. import __version__

    folder = folder.absolute()
    manifest = {"name": "memsearch", "version": __version__,
                "description": f"Agent Memory at {root}: core memory at session start, memory recalled for each "
                               "prompt, and the memsearch MCP tools."}
    mcp = {"mcpServers": {spec.name: {"command": spec.command, "args": list(spec.args)}}}
    return [_change(folder / ".claude-plugin" / "plugin.json", json.dumps(manifest, indent=2) + "\n"),
            _change(folder / "hooks" / "hooks.json", json.dumps(hooks_config(root, db), indent=2) + "\n"),
            _change(folder / ".mcp.json", json.dumps(mcp, indent=2) + "\n")]
