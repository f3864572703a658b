"""Claude Code integration: the memsearch hooks and MCP server written into a project (or a plugin folder).

Formats as Claude Code documents them: hooks in the project's ``.claude/settings.json``
(https://code.claude.com/docs/en/hooks:
``{"hooks": {EVENT: [{"hooks": [{"type": "command", "command", "timeout"}]}]}}``), the MCP server in the
project's ``.mcp.json`` (https://code.claude.com/docs/en/mcp), and a plugin as a folder with
``.claude-plugin/plugin.json``, ``hooks/hooks.json`` and ``.mcp.json``
(https://code.claude.com/docs/en/plugins-reference).
Every command names the memsearch installation, the memory root and the index by absolute path. A project
install also allows memsearch's MCP tools (``permissions.allow``: without a rule, ``claude -p`` denies them)
and approves its ``.mcp.json`` server (``enabledMcpjsonServers``, what Claude Code's approval dialog records).
With ``log_sessions`` the Stop, SessionEnd and PreCompact hooks keep each session in the memory tree
(:mod:`memsearch.harness.session_log`).
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from ..errors import ClientConfigError
from ..launch import python_argv
from . import clients
from .clients import ConfigChange, ServerSpec, absolute_db
from .hooklimits import claude_timeout

__all__ = ["HOOK_MODULE", "EVENTS", "LOG_EVENTS", "hook_command", "hooks_config", "allowed_tools", "plan_project",
           "plan_plugin", "plan_uninstall"]

#: The module Claude Code runs for each hook (``python -m``); also how memsearch recognises its own entries.
HOOK_MODULE = "memsearch.harness.hooks"
#: Claude Code's hook events memsearch uses, and the event argument of :data:`HOOK_MODULE`.
EVENTS = {"SessionStart": "session-start", "UserPromptSubmit": "prompt"}
#: The events that keep a session as memory (``--log-sessions``): each runs the ``session-log`` hook, which reads
#: the event's name and ``transcript_path`` from the hook's JSON.
LOG_EVENTS = {"Stop": "session-log", "SessionEnd": "session-log", "PreCompact": "session-log"}
#: The session log's events Claude Code runs in the background (``"async": true``, Claude Code 2.1 on): Stop
#: follows every turn, and waiting for the log to be written and indexed would hold up the next prompt
#: (docs/benchmarks.md, "The session log"). SessionEnd stays in the foreground: it writes the whole session
#: before ``claude -p`` exits, which cancels what still runs in the background.
BACKGROUND = ("Stop", "PreCompact")


def hook_command(event: str, root: Path, db: str | None = None, python: str | None = None) -> str:
    """The shell command Claude Code runs for ``event``, every path absolute; Python runs isolated from the
    project it is started in (:mod:`memsearch.launch`), so the project's own modules never load."""
    arg = EVENTS.get(event) or LOG_EVENTS[event]
    parts = python_argv(HOOK_MODULE, arg, "--root", str(Path(root).expanduser().resolve()), python=python)
    if db:
        parts += ["--db", absolute_db(db)]
    return shlex.join(parts)


def hooks_config(root: Path, db: str | None = None, python: str | None = None, *, log_sessions: bool = False) -> dict:
    """``{"hooks": ...}`` with memsearch's SessionStart and UserPromptSubmit hooks (and, with ``log_sessions``,
    the session log's Stop, SessionEnd and PreCompact hooks)."""
    events = list(EVENTS) + (list(LOG_EVENTS) if log_sessions else [])
    return {"hooks": {event: [{"hooks": [{"type": "command", "command": hook_command(event, root, db, python),
                                          "timeout": claude_timeout()} | ({"async": True} if event in BACKGROUND else {})]}]
                      for event in events}}


def allowed_tools(spec: ServerSpec) -> list[str]:
    """The permission rules that let Claude Code call ``spec``'s tools without asking (``mcp__SERVER__TOOL``)."""
    from .specs import MEMORY_TOOL, TOOL_NAMES

    names = TOOL_NAMES + ((MEMORY_TOOL.name,) if "--writable" in spec.args else ())
    return [f"mcp__{spec.name}__{name}" for name in names]


def _ours(group) -> bool:
    return isinstance(group, dict) and any(isinstance(h, dict) and HOOK_MODULE in str(h.get("command", ""))
                                           for h in group.get("hooks") or [])


def _drop_ours(hooks: dict) -> bool:
    """Remove memsearch's hook groups from ``hooks`` (an event left with none goes); whether there were any."""
    found = False
    for event in list(hooks):
        groups = hooks[event]
        if isinstance(groups, list) and any(_ours(g) for g in groups):
            found = True
            kept = [g for g in groups if not _ours(g)]
            if kept:
                hooks[event] = kept
            else:
                del hooks[event]
    return found


def _list(data: dict, key: str, path: Path, where: str = "") -> list:
    value = data[key] = [] if data.get(key) is None else data[key]
    if not isinstance(value, list):
        raise ClientConfigError(f"{path}: expected a list at {where}{key!r}; fix it, then run again")
    return value


def merge_settings(before: str | None, ours: dict, path: Path, spec: ServerSpec | None = None) -> str:
    """``before`` (Claude Code settings JSON, or None) with memsearch's hooks in place of any earlier ones and,
    given ``spec``, its tools allowed and its ``.mcp.json`` server approved; everything else kept."""
    try:
        data = json.loads(before) if before and before.strip() else {}
    except ValueError as exc:
        raise ClientConfigError(f"{path} is not valid JSON ({exc}): fix it, then run again") from None
    hooks = data.setdefault("hooks", {}) if isinstance(data, dict) else None
    if not isinstance(hooks, dict):
        raise ClientConfigError(f"{path}: expected a JSON object with an object 'hooks'; fix it, then run again")
    _drop_ours(hooks)  # memsearch's earlier hooks go, those of events it no longer uses too
    for event, groups in ours["hooks"].items():
        hooks[event] = _list(hooks, event, path, "hooks.") + groups
    if spec is not None:
        permissions = data.setdefault("permissions", {})
        if not isinstance(permissions, dict):
            raise ClientConfigError(f"{path}: expected an object at 'permissions'; fix it, then run again")
        allow = _list(permissions, "allow", path, "permissions.")
        prefix = f"mcp__{spec.name}__memory"  # this server's earlier rules go (the memory tool may be gone)
        allow[:] = [r for r in allow if not (isinstance(r, str) and r.startswith(prefix))] + allowed_tools(spec)
        approved = _list(data, "enabledMcpjsonServers", path)
        if spec.name not in approved:
            approved.append(spec.name)
    return json.dumps(data, indent=2) + "\n"


def _change(path: Path, after: str) -> ConfigChange:
    before = path.read_text(encoding="utf-8") if path.is_file() else None
    return ConfigChange(path, before, after)


def plan_project(spec: ServerSpec, root: Path, project: Path, db: str | None = None, *,
                 log_sessions: bool = False) -> list[ConfigChange]:
    """The changes that install memsearch into ``project``: ``.claude/settings.json`` (hooks, the tools' permission
    rules, the server approved) and ``.mcp.json``."""
    project = clients.project_dir(project)
    settings = project / ".claude" / "settings.json"
    try:
        before = settings.read_text(encoding="utf-8") if settings.is_file() else None
    except (OSError, UnicodeDecodeError) as exc:
        raise ClientConfigError(f"cannot read {settings}: {exc}") from None
    ours = hooks_config(root, db, log_sessions=log_sessions)
    hooks = ConfigChange(settings, before, merge_settings(before, ours, settings, spec))
    return [hooks, clients.plan_install(spec, "claude-code", project=project)]


def plan_plugin(spec: ServerSpec, root: Path, folder: Path, db: str | None = None, *,
                log_sessions: bool = False) -> list[ConfigChange]:
    """The files of a Claude Code plugin folder with the same hooks and MCP server."""
    from .. import __version__

    folder = folder.absolute()
    manifest = {"name": "memsearch", "version": __version__, "author": {"name": "memsearch"},
                "description": f"Agent Memory at {root}: core memory at session start, memory recalled for each "
                               "prompt, and the memsearch MCP tools."}
    mcp = {"mcpServers": {spec.name: {"command": spec.command, "args": list(spec.args)}}}
    return [_change(folder / ".claude-plugin" / "plugin.json", json.dumps(manifest, indent=2) + "\n"),
            _change(folder / "hooks" / "hooks.json",
                    json.dumps(hooks_config(root, db, log_sessions=log_sessions), indent=2) + "\n"),
            _change(folder / ".mcp.json", json.dumps(mcp, indent=2) + "\n")]


def _object(text: str, path: Path) -> dict:
    try:
        data = json.loads(text) if text.strip() else {}
    except ValueError as exc:
        raise ClientConfigError(f"{path} is not valid JSON ({exc}): fix it, then run again") from None
    if not isinstance(data, dict):
        raise ClientConfigError(f"{path}: expected a JSON object; fix it, then run again")
    return data


def _strip_settings(before: str, path: Path, name: str = "memsearch") -> str:
    """``before`` without memsearch's hooks, its tools' permission rules and its server's approval (a key left
    empty goes); unchanged when it holds none of them."""
    data, found = _object(before, path), False
    hooks = data.get("hooks")
    if isinstance(hooks, dict) and _drop_ours(hooks):
        found = True
        if not hooks:
            del data["hooks"]
    permissions = data.get("permissions")
    if isinstance(permissions, dict) and isinstance(permissions.get("allow"), list):
        prefix = f"mcp__{name}__memory"
        kept = [r for r in permissions["allow"] if not (isinstance(r, str) and r.startswith(prefix))]
        if kept != permissions["allow"]:
            found, permissions["allow"] = True, kept
            if not kept:
                del permissions["allow"]
            if not permissions:
                del data["permissions"]
    approved = data.get("enabledMcpjsonServers")
    if isinstance(approved, list) and name in approved:
        found = True
        approved.remove(name)
        if not approved:
            del data["enabledMcpjsonServers"]
    return json.dumps(data, indent=2) + "\n" if found else before


def _strip_server(before: str, path: Path, name: str = "memsearch") -> str:
    """``before`` (``.mcp.json``) without memsearch's server; unchanged when it has none."""
    data = _object(before, path)
    servers = data.get("mcpServers")
    if not isinstance(servers, dict) or name not in servers:
        return before
    del servers[name]
    if not servers:
        del data["mcpServers"]
    return json.dumps(data, indent=2) + "\n"


def plan_uninstall(project: Path) -> list[ConfigChange]:
    """The changes that take memsearch out of ``project`` (what :func:`plan_project` added: its hooks, its tools'
    permission rules, its server's approval and the server in ``.mcp.json``), everything else kept. The memory
    root, session logs included, is left as it is."""
    project = clients.project_dir(project)
    changes = []
    for path, strip in ((project / ".claude" / "settings.json", _strip_settings), (project / ".mcp.json", _strip_server)):
        try:
            before = path.read_text(encoding="utf-8") if path.is_file() else None
        except (OSError, UnicodeDecodeError) as exc:
            raise ClientConfigError(f"cannot read {path}: {exc}") from None
        if before is not None:
            changes.append(ConfigChange(path, before, strip(before, path)))
    return changes
