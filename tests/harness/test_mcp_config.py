"""`memsearch mcp-config`: each client's configuration with absolute paths, merged into the client's file without
losing anything, and a printed configuration that starts a working MCP server from a clean environment."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from memsearch.errors import ClientConfigError, InvalidArgument, NotAMemoryRoot
from memsearch.harness import clients
from tests.conftest import REPO

ENV = dict(os.environ, PYTHONPATH=str(REPO), HF_HUB_OFFLINE="1")
SPEC = clients.ServerSpec("memsearch", "/opt/ms/bin/memsearch", ("serve", "/home/ada/memory", "--writable"))


def cli(*args, env=None, cwd=None):
    return subprocess.run([sys.executable, "-m", "memsearch", *args], capture_output=True, text=True, timeout=120,
                          env=env or ENV, cwd=cwd, stdin=subprocess.DEVNULL)


@pytest.fixture
def memory(make_tree):
    return make_tree({"MEMORY.md": "# Ada's memory\nCore facts.\n",
                      "notes/MEMORY.md": "# Notes\nDated notes.\n",
                      "notes/2026-08-12.md": "# Standup\nWe chose ClickHouse for Atlas: fast scans.\n"})


def test_each_client_gets_its_format_with_absolute_paths(memory, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    spec = clients.server_spec(os.path.relpath(memory), db="idx", writable=True)
    assert os.path.isabs(spec.command) and os.path.exists(spec.command)
    assert spec.args == ("serve", str(memory.resolve()), "--db", str(tmp_path / "idx"), "--writable")
    for client in ("claude-desktop", "cursor"):
        assert json.loads(clients.render(spec, client)) == {
            "mcpServers": {"memsearch": {"command": spec.command, "args": list(spec.args)}}}
    assert json.loads(clients.render(spec, "claude-code"))["mcpServers"]["memsearch"]["type"] == "stdio"
    codex = tomllib.loads(clients.render(spec, "codex"))
    assert codex == {"mcp_servers": {"memsearch": {"command": spec.command, "args": list(spec.args)}}}
    with pytest.raises(InvalidArgument, match="choose one of claude-desktop"):
        clients.render(spec, "vscode")
    with pytest.raises(NotAMemoryRoot, match="does not exist: pass the path of a memory directory"):
        clients.server_spec(tmp_path / "nope")


def test_config_paths_follow_each_client(tmp_path):
    env = {"HOME": "/home/ada"}
    assert clients.config_path("claude-desktop", environ=env, platform="darwin") == \
        tmp_path.__class__("/home/ada/Library/Application Support/Claude/claude_desktop_config.json")
    assert str(clients.config_path("claude-desktop", environ=env, platform="linux")) == \
        "/home/ada/.config/Claude/claude_desktop_config.json"
    assert str(clients.config_path("codex", environ=env)) == "/home/ada/.codex/config.toml"
    assert str(clients.config_path("codex", environ={**env, "CODEX_HOME": "/c"})) == "/c/config.toml"
    assert str(clients.config_path("cursor", environ=env)) == "/home/ada/.cursor/mcp.json"
    assert clients.config_path("cursor", project=tmp_path) == tmp_path / ".cursor" / "mcp.json"
    assert clients.config_path("claude-code", project=tmp_path) == tmp_path / ".mcp.json"


def test_install_merges_keeping_everything_else(tmp_path):
    env = {"HOME": str(tmp_path)}
    cursor = tmp_path / ".cursor" / "mcp.json"
    cursor.parent.mkdir()
    cursor.write_text(json.dumps({"mcpServers": {"other": {"command": "x"}}, "theme": "dark"}))
    change = clients.plan_install(SPEC, "cursor", environ=env)
    assert change.changed and "+      \"command\": \"/opt/ms/bin/memsearch\"" in change.diff()
    assert cursor.read_text() == change.before  # planning writes nothing
    clients.apply(change)
    data = json.loads(cursor.read_text())
    assert data["theme"] == "dark" and data["mcpServers"]["other"] == {"command": "x"}
    assert data["mcpServers"]["memsearch"]["args"] == list(SPEC.args)
    assert not clients.plan_install(SPEC, "cursor", environ=env).changed  # idempotent

    codex = tmp_path / ".codex" / "config.toml"
    codex.parent.mkdir()
    codex.write_text('model = "o4"\n\n[mcp_servers.memsearch]\ncommand = "old"\nargs = []\n\n[mcp_servers.docs]\n'
                     'command = "docs-server"\n')
    clients.apply(clients.plan_install(SPEC, "codex", environ=env))
    data = tomllib.loads(codex.read_text())
    assert data["model"] == "o4" and data["mcp_servers"]["docs"] == {"command": "docs-server"}
    assert data["mcp_servers"]["memsearch"] == {"command": SPEC.command, "args": list(SPEC.args)}

    cursor.write_text("{not json")
    with pytest.raises(ClientConfigError, match="not valid JSON"):
        clients.plan_install(SPEC, "cursor", environ=env)
    codex.write_text("[mcp_servers.memsearch]\ncommand = 'x'\nenv = { A = '1' }\n")
    with pytest.raises(ClientConfigError, match="keys memsearch would lose"):
        clients.plan_install(SPEC, "codex", environ=env)


def test_cli_prints_and_installs_only_when_told(memory, tmp_path):
    done = cli("mcp-config", str(memory), "--client", "codex")
    assert done.returncode == 0, done.stderr
    assert tomllib.loads(done.stdout)["mcp_servers"]["memsearch"]["args"] == ["serve", str(memory.resolve())]
    env = dict(ENV, HOME=str(tmp_path))
    done = cli("mcp-config", str(memory), "--client", "cursor", "--install", env=env)  # no terminal, no --yes
    assert done.returncode == 2 and "add --yes" in done.stderr and "+++" in done.stderr
    assert not (tmp_path / ".cursor").exists()
    done = cli("mcp-config", str(memory), "--client", "cursor", "--install", "--yes", env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / ".cursor" / "mcp.json").read_text())["mcpServers"]["memsearch"]
    done = cli("mcp-config", str(memory), "--client", "emacs")
    assert done.returncode == 2 and done.stderr.startswith("error: unknown client") and "Traceback" not in done.stderr



@pytest.mark.parametrize("command", [("mcp-config", "{root}", "--client", "cursor"),
                                     ("claude-code", "install", "{root}", "--plugin", "{tmp}/plugin")])
def test_a_root_that_is_missing_or_a_file_gets_the_one_root_error_of_every_command(memory, tmp_path, command):
    """``mcp-config`` and ``claude-code install`` had a check of their own: ``the memory root /x is not a
    directory`` for a missing root too, with no fix; now the error every other command gives."""
    from memsearch.memory.root import resolve_root

    for root in (tmp_path / "nope", memory / "MEMORY.md"):
        done = cli(*(a.format(root=root, tmp=tmp_path) for a in command))
        with pytest.raises(NotAMemoryRoot) as refused:
            resolve_root(root)
        assert (done.returncode, done.stderr) == (2, f"error: {refused.value}\n"), done.stderr
        assert not (tmp_path / "plugin").exists()


@pytest.mark.slow
def test_printed_config_starts_a_working_server_from_a_clean_environment(memory, tmp_path):
    done = cli("mcp-config", str(memory), "--client", "claude-desktop")
    assert done.returncode == 0, done.stderr
    server = json.loads(done.stdout)["mcpServers"]["memsearch"]
    # As a desktop client starts it: no PATH, no virtual environment, no PYTHONPATH, another working directory.
    # MEMSEARCH_AUTOSTART=0 only so that no daemon outlives the test (conftest does the same for every test).
    params = StdioServerParameters(command="/usr/bin/env", cwd=str(tmp_path),
                                   args=["-i", f"HOME={tmp_path}", "MEMSEARCH_AUTOSTART=0", server["command"],
                                         *server["args"]])

    async def session():
        with anyio.fail_after(300):
            async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
                await client.initialize()
                names = {t.name for t in (await client.list_tools()).tools}
                assert {"memory_search", "memory_read", "memory_list", "memory_core"} <= names
                core = json.loads((await client.call_tool("memory_core", {})).content[0].text)
                assert "Core facts." in json.dumps(core)
                found = json.loads((await client.call_tool("memory_search", {"query": "which database for Atlas"}))
                                   .content[0].text)
                assert found["hits"][0]["path"] == "notes/2026-08-12.md"

    anyio.run(session)


@pytest.mark.parametrize("argv, said", [
    (["claude-code", "install", "{root}", "--project", "{tmp}/typo", "--yes"], "the project folder {tmp}/typo does not exist"),
    (["claude-code", "install", "{root}", "--project", "{root}/MEMORY.md", "--yes"], "is not a folder"),
    (["mcp-config", "{root}", "--client", "cursor", "--install", "--project", "{tmp}/typo", "--yes"],
     "the project folder {tmp}/typo does not exist"),
    (["claude-code", "install", "{root}", "--project", "{tmp}", "--plugin", "{tmp}/plugin", "--yes"],
     "give either --project DIR (a project's own configuration) or --plugin DIR (a plugin folder), not both"),
])
def test_a_project_that_is_no_folder_or_given_with_a_plugin_is_refused(make_tree, tmp_path, capsys, argv, said):
    """`--project ~/code/myprojetc` (a typo) wrote a new folder of configuration no client reads, and `--project
    DIR --plugin DIR`, which docs/commands.md gives as either-or, wrote the plugin and ignored the project."""
    from tests.conftest import run_cli

    root = make_tree({"MEMORY.md": "# M\n\nm\n"})
    before = sorted(tmp_path.rglob("*"))
    code, _, err = run_cli([a.format(root=root, tmp=tmp_path) for a in argv], capsys)
    assert code == 2 and said.format(tmp=tmp_path) in err and "Traceback" not in err, err
    assert sorted(tmp_path.rglob("*")) == before  # nothing written
