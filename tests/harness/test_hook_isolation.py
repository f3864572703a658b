"""Issue 33 item 1: a project folder's own Python modules never run in the Claude Code hooks, the MCP server or the
daemon they start. The project holds a ``json.py``, ``typing.py``, ``socket.py``, ``logging.py``, ``memsearch.py`` (and
more) that would each write a marker file and break the import; the commands `memsearch claude-code install` writes
run there, as Claude Code runs them, and still answer, and no marker is ever written."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest

from memsearch import launch
from memsearch.service import autostart, process
from tests.conftest import REPO, build

#: Modules a hook, the MCP server or a daemon imports (directly or through the standard library).
PLANTED = ("json", "typing", "socket", "logging", "memsearch", "signal", "pathlib", "subprocess", "threading",
           "selectors", "tempfile", "re", "enum", "argparse", "asyncio", "numpy", "anyio")
FILES = {"MEMORY.md": "# Ada's memory\nAda prefers short answers.\n",
         "projects/MEMORY.md": "# Projects\nOne file per project.\n",
         "projects/atlas.md": "# Atlas\n## Decisions\nWe chose ClickHouse as the Atlas warehouse for fast scans.\n"}


def plant(project: Path, marker: Path) -> None:
    """Modules in ``project`` that record their import in ``marker`` and then fail loudly."""
    for name in PLANTED:
        (project / f"{name}.py").write_text(
            f"open({str(marker)!r}, 'a').write({name!r} + ' imported from the project\\n')\n"
            f"raise SystemExit('planted {name}.py ran')\n")


def env(**extra) -> dict:
    """Claude Code's environment, as a user's shell gives it: no PYTHONPATH pointing at the checkout."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"HF_HUB_OFFLINE": "1"} | extra


def install(root: Path, project: Path) -> dict:
    done = subprocess.run([sys.executable, "-m", "memsearch", "claude-code", "install", str(root), "--project",
                           str(project), "--yes"], capture_output=True, text=True, timeout=120, env=env(),
                          stdin=subprocess.DEVNULL, cwd=REPO)
    assert done.returncode == 0, done.stderr
    settings = json.loads((project / ".claude" / "settings.json").read_text())
    commands = {event: groups[-1]["hooks"][0]["command"] for event, groups in settings["hooks"].items()}
    return {"hooks": commands, "mcp": json.loads((project / ".mcp.json").read_text())["mcpServers"]["memsearch"]}


def hook(command: str, payload: dict, project: Path, **extra) -> subprocess.CompletedProcess:
    return subprocess.run(command, shell=True, input=json.dumps(payload), capture_output=True, text=True, timeout=60,
                          env=env(**extra), cwd=project)


def test_every_command_memsearch_starts_runs_python_isolated(tmp_path):
    from memsearch.harness import claude_code
    from memsearch.location import IndexLocation

    where = IndexLocation.of(tmp_path)
    for argv in (shlex.split(claude_code.hook_command("UserPromptSubmit", tmp_path)), autostart.command(where)):
        assert argv[0] == sys.executable and argv[1] in ("-I", "-P") and argv[2] == "-m"
    assert launch.DETACHED_CWD == os.path.abspath(os.sep)


def test_python_flag_is_isolated_unless_memsearch_comes_from_pythonpath():
    flag = subprocess.run([sys.executable, "-c", "from memsearch import launch; print(launch.python_flag())"],
                          capture_output=True, text=True, env=env(), cwd=REPO / "tests").stdout.strip()
    assert flag == "-I"  # installed (editable) into the venv: isolated mode finds it
    flag = subprocess.run([sys.executable, "-c", "from memsearch import launch; print(launch.python_flag())"],
                          capture_output=True, text=True, env=env(PYTHONPATH=str(REPO)), cwd=REPO / "tests")
    assert flag.stdout.strip() == "-P", flag.stderr  # -I would drop PYTHONPATH: only the working directory goes


def test_planted_modules_never_run_in_the_hooks(tmp_path):
    """Without a daemon (autostart off): the session-start hook answers in-process from a planted project."""
    root = build(tmp_path / "memory", FILES)
    project, marker = tmp_path / "project", tmp_path / "MARKER"
    project.mkdir()
    plant(project, marker)
    commands = install(root, project)["hooks"]
    start = hook(commands["SessionStart"], {"hook_event_name": "SessionStart", "source": "startup"}, project,
                 MEMSEARCH_AUTOSTART="0")
    assert start.returncode == 0 and start.stderr == "", start.stderr
    assert "Ada prefers short answers." in json.loads(start.stdout)["hookSpecificOutput"]["additionalContext"]
    prompt = hook(commands["UserPromptSubmit"], {"hook_event_name": "UserPromptSubmit", "prompt": "warehouse"},
                  project, MEMSEARCH_AUTOSTART="0")
    assert prompt.returncode == 0 and prompt.stderr == "", prompt.stderr
    assert not marker.exists(), marker.read_text()
    # The planted modules do run for a plain `python -m` there: the test would see the flaw.
    naive = subprocess.run([sys.executable, "-m", "memsearch.harness.hooks", "session-start", "--root", str(root)],
                           capture_output=True, text=True, env=env(MEMSEARCH_AUTOSTART="0"), cwd=project, timeout=60)
    assert naive.returncode != 0 and marker.exists()


@pytest.mark.slow
def test_mcp_server_and_daemon_started_from_a_planted_project_never_import_it(tmp_path):
    """The MCP server `.mcp.json` names, started in the project, auto-starts the daemon: that daemon runs in
    DETACHED_CWD; then the hooks answer through it; the project's modules never run in any of them."""
    from mcp import ClientSession, StdioServerParameters, stdio_client

    root = build(tmp_path / "memory", FILES)
    project, marker = tmp_path / "project", tmp_path / "MARKER"
    project.mkdir()
    plant(project, marker)
    commands = install(root, project)
    server = StdioServerParameters(command=commands["mcp"]["command"], args=commands["mcp"]["args"],
                                   env=env(MEMSEARCH_AUTOSTART="1"), cwd=str(project))

    async def search() -> dict:
        with anyio.fail_after(240):
            async with stdio_client(server) as (read, write), ClientSession(read, write) as client:
                await client.initialize()
                while True:  # on a cold root the server may first say the service is starting: ask again
                    result = await client.call_tool("memory_search", {"query": "which warehouse for Atlas"})
                    found = json.loads(result.content[0].text)
                    if found.get("error", {}).get("type") != "IndexBuilding":
                        return found
                    await anyio.sleep(1)

    try:
        found = anyio.run(search)
        assert found.get("hits") and found["hits"][0]["path"] == "projects/atlas.md", found
        deadline = time.monotonic() + 240
        while not (status := process.daemon_status(root)).get("serving") or status.get("state") != "watching":
            assert time.monotonic() < deadline, status
            time.sleep(0.5)
        pid = status["pid"]
        assert os.readlink(f"/proc/{pid}/cwd") == launch.DETACHED_CWD
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        assert cmdline[1] in (b"-I", b"-P") and cmdline[2:4] == [b"-m", b"memsearch"]
        done = hook(commands["hooks"]["UserPromptSubmit"],
                    {"hook_event_name": "UserPromptSubmit", "prompt": "which warehouse for Atlas"}, project,
                    MEMSEARCH_AUTOSTART="1")
        assert done.returncode == 0 and done.stderr == "", done.stderr
        assert "projects/atlas.md" in json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    finally:
        process.stop(root)
    assert not marker.exists(), marker.read_text()
