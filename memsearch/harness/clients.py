"""MCP client configurations (Claude Desktop, Claude Code, Codex, Cursor) with absolute paths, and their files.

A client started from a desktop has no virtual environment on its ``PATH``, so the configuration names the
``memsearch`` executable and the memory root by absolute path. Formats and locations, as each client documents them:

- Claude Desktop: ``claude_desktop_config.json``, ``{"mcpServers": {NAME: {"command", "args", "env"?}}}``, in
  ``~/Library/Application Support/Claude/`` on macOS (https://modelcontextprotocol.io/quickstart/user); Claude
  Desktop has no Linux build, so Linux uses ``$XDG_CONFIG_HOME/Claude/`` as community builds do;
- Claude Code: the project's ``.mcp.json``, the same shape plus ``"type": "stdio"``
  (https://code.claude.com/docs/en/mcp, "project scope");
- Codex: ``$CODEX_HOME/config.toml`` (default ``~/.codex/config.toml``), a ``[mcp_servers.NAME]`` table with
  ``command`` and ``args`` (https://developers.openai.com/codex/mcp);
- Cursor: ``~/.cursor/mcp.json``, or ``.cursor/mcp.json`` in a project, the ``mcpServers`` shape
  (https://cursor.com/docs/mcp).
"""

from __future__ import annotations

import difflib
import json
import os
import re
import shutil
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from ..errors import ClientConfigError, InvalidArgument
from ..memory.files import atomic_write_text
from ..memory.root import resolve_root

__all__ = ["CLIENTS", "ServerSpec", "ConfigChange", "memsearch_executable", "absolute_db", "server_spec", "render",
           "project_dir", "plan_install", "apply"]

#: The clients ``memsearch mcp-config --client`` knows.
CLIENTS = ("claude-desktop", "claude-code", "codex", "cursor")
_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


@dataclass(frozen=True)
class ServerSpec:
    """One stdio MCP server: its name in the client's configuration, the command and its arguments."""

    name: str
    command: str
    args: tuple[str, ...]


@dataclass(frozen=True)
class ConfigChange:
    """What installing a configuration does to one file: its path, its text before (None: new) and after."""

    path: Path
    before: str | None
    after: str

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def diff(self) -> str:
        """A unified diff of the change, for the user to read before it is written."""
        before = (self.before or "").splitlines(keepends=True)
        lines = difflib.unified_diff(before, self.after.splitlines(keepends=True),
                                     fromfile=str(self.path) if self.before is not None else "/dev/null",
                                     tofile=str(self.path))
        return "".join(lines)


def memsearch_executable() -> str:
    """The absolute path of the ``memsearch`` command of this installation (the one beside this Python)."""
    beside = Path(sys.executable).parent / "memsearch"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside.absolute())
    found = shutil.which("memsearch")
    if found:
        return str(Path(found).absolute())
    raise ClientConfigError("cannot find the memsearch command of this installation: run `make install` in the clone "
                            "(or install memsearch into a virtual environment) first")


def absolute_db(db: str | None) -> str | None:
    """``--db`` as every configuration writes it: a local path made absolute (a client runs in another folder,
    where a relative one would name a second index), a URL (``s3://...``) as given."""
    if not db:
        return None
    return db if "://" in db else str(Path(db).expanduser().resolve())


def server_spec(root, *, db: str | None = None, writable: bool = False, name: str = "memsearch",
                executable: str | None = None) -> ServerSpec:
    """The ``memsearch serve`` server for ``root``, every path absolute."""
    if not _NAME.match(name):
        raise InvalidArgument(f"--name {name!r}: use letters, digits, '-' and '_' (at most 64)")
    args = ["serve", str(resolve_root(root))]  # a root that is missing, a file or unreadable: its one-line error
    if db:
        args += ["--db", absolute_db(db)]
    if writable:
        args.append("--writable")
    return ServerSpec(name, executable or memsearch_executable(), tuple(args))


def _entry(spec: ServerSpec, client: str) -> dict:
    entry = {"type": "stdio"} if client == "claude-code" else {}
    entry.update({"command": spec.command, "args": list(spec.args)})
    return entry


def _toml_table(spec: ServerSpec) -> str:
    # A JSON string is a valid TOML basic string (the same escapes).
    args = ", ".join(json.dumps(a) for a in spec.args)
    return f"[mcp_servers.{spec.name}]\ncommand = {json.dumps(spec.command)}\nargs = [{args}]\n"


def _check_client(client: str) -> None:
    if client not in CLIENTS:
        raise InvalidArgument(f"unknown client {client!r}: choose one of {', '.join(CLIENTS)}")


def render(spec: ServerSpec, client: str) -> str:
    """The configuration text to paste into ``client``'s file (JSON, or TOML for Codex)."""
    _check_client(client)
    if client == "codex":
        return _toml_table(spec)
    return json.dumps({"mcpServers": {spec.name: _entry(spec, client)}}, indent=2) + "\n"


def project_dir(project: Path, client: str = "claude") -> Path:
    """``project`` made absolute; raises :class:`ClientConfigError` when it is not an existing folder (a mistyped
    ``--project`` would otherwise get a new folder holding the configuration, and the real project none)."""
    path = Path(project).expanduser().absolute()
    if not path.is_dir():
        what = "is not a folder" if path.exists() else "does not exist (create it first for a new project)"
        raise ClientConfigError(f"the project folder {path} {what}: pass --project the folder you start {client} in")
    return path


def config_path(client: str, *, project: Path | None = None, environ: Mapping[str, str] | None = None,
                platform: str | None = None) -> Path:
    """The file ``client`` reads its MCP servers from (``project``: Claude Code's and Cursor's project scope)."""
    _check_client(client)
    env = os.environ if environ is None else environ
    home = Path(env.get("HOME") or Path.home())
    if client == "claude-code":
        return project_dir(project or Path.cwd()) / ".mcp.json"
    if client == "cursor":
        return (project_dir(project, "Cursor") / ".cursor" / "mcp.json") if project else home / ".cursor" / "mcp.json"
    if client == "codex":
        return Path(env.get("CODEX_HOME") or home / ".codex") / "config.toml"
    if (platform or sys.platform) == "darwin":
        return home / "Library" / "Application Support" / "Claude" / "claude_desktop_config.json"
    return Path(env.get("XDG_CONFIG_HOME") or home / ".config") / "Claude" / "claude_desktop_config.json"


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise ClientConfigError(f"cannot read {path}: {exc}; fix or move it, then run again") from None


def merge_json(before: str | None, key: str, name: str, entry: dict, path: Path) -> str:
    """``before`` (a JSON object, or None) with ``entry`` at ``[key][name]``, everything else kept."""
    try:
        data = json.loads(before) if before and before.strip() else {}
    except ValueError as exc:
        raise ClientConfigError(f"{path} is not valid JSON ({exc}): fix it, or paste the printed configuration "
                                "by hand") from None
    if not isinstance(data, dict) or not isinstance(data.get(key, {}), dict):
        raise ClientConfigError(f"{path}: expected a JSON object with an object {key!r}; fix it, or paste the "
                                "printed configuration by hand")
    data.setdefault(key, {})[name] = entry
    return json.dumps(data, indent=2) + "\n"


def _merge_toml(before: str | None, spec: ServerSpec, path: Path) -> str:
    text = before or ""
    try:
        current = tomllib.loads(text).get("mcp_servers", {}).get(spec.name)
    except tomllib.TOMLDecodeError as exc:
        raise ClientConfigError(f"{path} is not valid TOML ({exc}): fix it, or paste the printed configuration "
                                "by hand") from None
    lost = sorted(set(current) - {"command", "args"}) if isinstance(current, dict) else []
    if lost:
        raise ClientConfigError(f"{path}: [mcp_servers.{spec.name}] has keys memsearch would lose ({', '.join(lost)}); "
                                "edit it by hand with the printed configuration, or pick another --name")
    header = re.compile(rf"^\[mcp_servers\.{re.escape(spec.name)}\]\s*$", re.M)
    table = _toml_table(spec)
    found = header.search(text)
    if found:  # replace our table: from its header to the next table header (or the end)
        following = re.compile(r"^\[", re.M).search(text, found.end())
        end = following.start() if following else len(text)
        after = text[:found.start()] + table + ("\n" if following else "") + text[end:]
    else:
        after = text + ("\n" if text and not text.endswith("\n\n") else "") + table if text else table
    parsed = tomllib.loads(after).get("mcp_servers", {}).get(spec.name)
    if parsed != {"command": spec.command, "args": list(spec.args)}:
        raise ClientConfigError(f"{path}: [mcp_servers.{spec.name}] is laid out in a way memsearch cannot replace "
                                "safely; edit it by hand with the printed configuration")
    return after


def plan_install(spec: ServerSpec, client: str, *, project: Path | None = None,
                 environ: Mapping[str, str] | None = None, platform: str | None = None) -> ConfigChange:
    """What ``--install`` would write for ``client``, nothing written yet (see :func:`apply`)."""
    path = config_path(client, project=project, environ=environ, platform=platform)
    before = _read(path)
    if client == "codex":
        return ConfigChange(path, before, _merge_toml(before, spec, path))
    return ConfigChange(path, before, merge_json(before, "mcpServers", spec.name, _entry(spec, client), path))


def apply(change: ConfigChange) -> Path:
    """Write ``change`` (atomically; the file's folder is created when missing); the file written. A file that is a
    symbolic link (settings kept in a dotfiles repository, shared by worktrees) is written where it points: the
    link stays, as the file it names gets the change."""
    target = Path(os.path.realpath(change.path)) if change.path.is_symlink() else change.path
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(target, change.after)
    except OSError as exc:
        raise ClientConfigError(f"cannot write {target}: {exc}") from None
    return target
