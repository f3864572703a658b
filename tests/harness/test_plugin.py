"""The Claude Code plugin shipped in the repository: its marketplace and plugin files as Claude Code reads them, the
launcher that finds the memsearch command and says so in the session when it cannot, the memory root created valid
on first use, and, with the real Claude Code CLI from npm, `claude plugin validate --strict`, `/plugin marketplace
add` + `/plugin install` on the clone, and two `claude -p` sessions with the default settings (the service
auto-starts) whose hooks create the root, keep each session as memory and recall the first in the second."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memsearch.harness import claude_code, plugin
from memsearch.memory.validator import validate
from tests.conftest import REPO

PLUGIN = REPO / "plugins" / "memsearch"
LAUNCHER = PLUGIN / "scripts" / "memsearch-plugin"
MEMSEARCH = str(Path(sys.executable).parent / "memsearch")
EVENTS = {"SessionStart": "session-start", "UserPromptSubmit": "prompt", "Stop": "session-log",
          "SessionEnd": "session-log", "PreCompact": "session-log"}


def launch(args: list[str], home: Path, stdin: str = "{}", **env) -> subprocess.CompletedProcess:
    """The launcher as Claude Code runs it: a shell command, the plugin's options as CLAUDE_PLUGIN_OPTION_*."""
    base = {"HOME": str(home), "PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1", "MEMSEARCH_AUTOSTART": "0",
            "PYTHONPATH": str(REPO)}
    return subprocess.run([str(LAUNCHER), *args], input=stdin, capture_output=True, text=True, timeout=120,
                          env=base | env, cwd=home)


def test_the_marketplace_offers_the_plugin_and_its_files_are_what_claude_code_reads():
    market = json.loads((REPO / ".claude-plugin" / "marketplace.json").read_text())
    (entry,) = market["plugins"]
    assert market["name"] == "memsearch" and market["owner"]["name"] and entry["name"] == "memsearch"
    assert (REPO / entry["source"]).resolve() == PLUGIN
    manifest = json.loads((PLUGIN / ".claude-plugin" / "plugin.json").read_text())
    from memsearch import __version__

    assert manifest["name"] == "memsearch" and manifest["version"] == entry["version"] == __version__
    launcher_text = LAUNCHER.read_text()
    for key in manifest["userConfig"]:  # every option reaches the launcher under the name Claude Code exports
        assert f"CLAUDE_PLUGIN_OPTION_{key.upper()}" in launcher_text, key
    hooks = json.loads((PLUGIN / "hooks" / "hooks.json").read_text())["hooks"]
    assert {event: shlex.split(groups[0]["hooks"][0]["command"])[1:] for event, groups in hooks.items()} == {
        event: ["hook", arg] for event, arg in EVENTS.items()}
    for event, groups in hooks.items():
        (hook,) = groups[0]["hooks"]
        assert shlex.split(hook["command"])[0] == "${CLAUDE_PLUGIN_ROOT}/scripts/memsearch-plugin"
        assert hook["type"] == "command" and hook["timeout"] == 10
        assert hook.get("async", False) == (event in claude_code.BACKGROUND)  # as the project install writes them
    server = json.loads((PLUGIN / ".mcp.json").read_text())["mcpServers"]["memsearch"]
    assert server["command"] == "${CLAUDE_PLUGIN_ROOT}/scripts/memsearch-plugin" and server["args"] == ["serve"]
    assert os.access(LAUNCHER, os.X_OK)


def test_without_the_memsearch_command_the_session_is_told_how_to_fix_it(tmp_path):
    session = launch(["hook", "session-start"], tmp_path)
    assert session.returncode == 0, session.stderr
    notice = json.loads(session.stdout)
    assert "cannot find the memsearch command" in notice["systemMessage"] and "make install" in notice["systemMessage"]
    assert "not working" in notice["hookSpecificOutput"]["additionalContext"]
    prompt = launch(["hook", "prompt"], tmp_path, json.dumps({"prompt": "hi"}))
    assert prompt.returncode == 0 and prompt.stdout == ""  # said once, at session start
    served = launch(["serve"], tmp_path, "")
    assert served.returncode == 1 and "memsearch_command" in served.stderr
    wrong = launch(["hook", "session-start"], tmp_path, CLAUDE_PLUGIN_OPTION_MEMSEARCH_COMMAND=str(tmp_path / "nope"))
    assert "is not an executable file" in json.loads(wrong.stdout)["systemMessage"]


def test_the_memory_root_is_created_valid_on_first_use_and_a_bad_one_is_said(tmp_path):
    link = tmp_path / ".local" / "bin" / "memsearch"  # where `make install` links it
    link.parent.mkdir(parents=True)
    link.symlink_to(MEMSEARCH)
    started = launch(["hook", "session-start"], tmp_path)
    root = tmp_path / ".memsearch" / "memory"  # the default root
    assert started.returncode == 0 and validate(root).valid and (root / "MEMORY.md").read_text() == plugin.ROOT_INDEX
    assert "<core_memory>" in json.loads(started.stdout)["hookSpecificOutput"]["additionalContext"]
    assert (root / "MEMORY.md").stat().st_mode & 0o777 == 0o600 and root.stat().st_mode & 0o777 == 0o700
    chosen = tmp_path / "notes"
    launch(["hook", "session-start"], tmp_path, CLAUDE_PLUGIN_OPTION_MEMORY_ROOT=str(chosen))
    assert validate(chosen).valid
    (tmp_path / "a-file").write_text("x")
    bad = launch(["hook", "session-start"], tmp_path, MEMSEARCH_MEMORY_ROOT=str(tmp_path / "a-file"))
    assert "is not a folder" in json.loads(bad.stdout)["systemMessage"]


def test_a_relative_memory_root_is_refused_and_a_home_one_expanded(tmp_path):
    """Claude Code starts the hooks and the server in the folder it was started in: a relative memory_root would make
    a memory tree in each. It is refused, in the session's message naming the fix, and nothing is created; ``~/...``
    is the home folder. Before: ``relative/dir`` was created, with a MEMORY.md, in the current folder."""
    env = {"MEMSEARCH_COMMAND": MEMSEARCH}
    for where in ({"CLAUDE_PLUGIN_OPTION_MEMORY_ROOT": "relative/dir"}, {"MEMSEARCH_MEMORY_ROOT": "./mem"}):
        for event in ("session-start", "prompt"):
            done = launch(["hook", event], tmp_path, json.dumps({"prompt": "hi"}), CLAUDE_PLUGIN_OPTION_LOG_SESSIONS="true",
                          **env, **where)
            assert done.returncode == 0 and done.stderr == "", done.stderr
            if event == "session-start":
                message = json.loads(done.stdout)["systemMessage"]
                assert "is a relative path" in message and "memory_root option to an absolute path" in message
                assert "--config memory_root=" in message and "restart Claude Code" in message
            else:
                assert done.stdout == ""
        served = launch(["serve"], tmp_path, "", **env, **where)
        assert served.returncode != 0 and "is a relative path" in served.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == [], "nothing is created in the folder Claude Code runs in"
    started = launch(["hook", "session-start"], tmp_path, **env, CLAUDE_PLUGIN_OPTION_MEMORY_ROOT="~/mem")
    assert "<core_memory>" in json.loads(started.stdout)["hookSpecificOutput"]["additionalContext"]
    assert validate(tmp_path / "mem").valid and not (tmp_path / "~").exists()


def test_a_hook_timeout_over_the_plugins_is_kept_within_it(tmp_path):
    """Claude Code cancels a plugin hook at hooks.json's ``timeout`` (10 s), killing it mid-work; a hook_timeout raised
    past it (the docs' advice for a crowded machine) let the hook run on until then. The plugin's hooks now give up
    by themselves within it: here a hook whose stdin never ends stops at 8 s and says so in hooks.log, not at 30 s."""
    from memsearch.location import hooks_log_file

    timeouts = {h["timeout"] for groups in json.loads((PLUGIN / "hooks" / "hooks.json").read_text())["hooks"].values()
                for g in groups for h in g["hooks"]}
    assert timeouts == {plugin.HOOKS_TIMEOUT_S}
    base = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1", "MEMSEARCH_AUTOSTART": "0",
            "PYTHONPATH": str(REPO), "XDG_RUNTIME_DIR": os.environ["XDG_RUNTIME_DIR"], "MEMSEARCH_COMMAND": MEMSEARCH,
            "MEMSEARCH_MEMORY_ROOT": str(tmp_path / "mem"), "MEMSEARCH_HOOK_TIMEOUT": "30"}
    hook = subprocess.Popen([str(LAUNCHER), "hook", "prompt"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=base, cwd=tmp_path)
    try:
        assert hook.wait(timeout=120) == 0  # its stdin held open: it gives up at its own bound
    finally:
        hook.stdin.close()
    assert hook.stdout.read() == b"" and hook.stderr.read() == b""
    (line,) = hooks_log_file().read_text().splitlines()
    assert f"prompt hook, {tmp_path / 'mem'}: no answer within the hook_timeout setting (8 s;" in line, line


def test_the_session_log_is_off_unless_the_option_turns_it_on(tmp_path):
    from tests.harness.test_session_log import transcript

    env = {"MEMSEARCH_COMMAND": MEMSEARCH, "MEMSEARCH_MEMORY_ROOT": str(tmp_path / "mem")}
    log = transcript(tmp_path / "t.jsonl", str(tmp_path / "proj"), [("Rotate the signing key", "Rotated.", "")])
    stop = json.dumps({"session_id": "s-1", "transcript_path": log, "hook_event_name": "Stop"})
    for value in ("", "false"):
        assert launch(["hook", "session-log"], tmp_path, stop, CLAUDE_PLUGIN_OPTION_LOG_SESSIONS=value, **env).stdout == ""
        assert not (tmp_path / "mem").exists()
    done = launch(["hook", "session-log"], tmp_path, stop, CLAUDE_PLUGIN_OPTION_LOG_SESSIONS="true", **env)
    assert done.returncode == 0 and done.stdout == "", done.stderr
    assert "Rotate the signing key" in (tmp_path / "mem" / "proj" / "2026-11-03.md").read_text()
    assert validate(tmp_path / "mem").valid


@pytest.mark.slow
def test_the_plugin_server_is_the_memsearch_mcp_server_on_the_plugin_root(tmp_path):
    import anyio
    from mcp import ClientSession, StdioServerParameters, stdio_client

    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1", "MEMSEARCH_AUTOSTART": "0",
           "MEMSEARCH_COMMAND": MEMSEARCH, "CLAUDE_PLUGIN_OPTION_MEMORY_ROOT": str(tmp_path / "mem"),
           "CLAUDE_PLUGIN_OPTION_WRITABLE": "true"}
    params = StdioServerParameters(command=str(LAUNCHER), args=["serve"], env=env, cwd=str(tmp_path))
    seen = {}

    async def session() -> None:
        with anyio.fail_after(120):
            async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
                await client.initialize()
                seen["tools"] = [t.name for t in (await client.list_tools()).tools]
                seen["core"] = (await client.call_tool("memory_core", {})).structured_content

    anyio.run(session)
    assert seen["tools"] == ["memory_search", "memory_read", "memory_list", "memory_core", "memory"]  # writable
    assert seen["core"]["files"][0]["path"] == "MEMORY.md" and validate(tmp_path / "mem").valid


# --- the real Claude Code CLI ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def claude_cli() -> str:
    """``claude`` from npm, the pinned version the end-to-end test runs too (:mod:`tests.support.claude_cli`)."""
    from tests.support.claude_cli import installed

    return str(installed())


PROMPT = "Where is the retry test? my password=hunter2-hunter2"


def _recall(stub) -> str:
    """The prompt hook's context as the model of ``stub``'s first conversation saw it, or ''."""
    from tests.support.messages_stub import _tool_names  # noqa: PLC2701 - the stub's own reading of a request

    for body in stub.requests:
        if _tool_names(body):
            text = json.dumps(body.get("messages"), ensure_ascii=False)
            at = text.find("Memory recalled for this prompt")
            return text[at:at + 3000] if at >= 0 else ""
    return ""


@pytest.mark.slow
def test_the_real_cli_validates_installs_and_runs_the_plugin(claude_cli, tmp_path):
    """The documented install, then two `claude -p` sessions with the default settings (the service auto-starts):
    the first creates the root and is kept as memory, the second's first prompt recalls the first session."""
    from memsearch.service import process
    from tests.support.messages_stub import MessagesStub

    home = tmp_path / "home"
    home.mkdir()
    env = {"HOME": str(home), "PATH": os.environ["PATH"], "HF_HUB_OFFLINE": "1",
           "XDG_RUNTIME_DIR": os.environ["XDG_RUNTIME_DIR"],  # the test's own service (tests/conftest.py)
           # behaviour, not speed: a busy machine must not turn a slow hook into a missing one
           "MEMSEARCH_HOOK_TIMEOUT": "90",
           "DISABLE_AUTOUPDATER": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}

    def claude(*args, cwd=home, **extra):
        return subprocess.run([claude_cli, *args], capture_output=True, text=True, timeout=300, env=env | extra,
                              cwd=cwd, stdin=subprocess.DEVNULL)

    for path in (REPO, PLUGIN):
        checked = claude("plugin", "validate", "--strict", str(path))
        assert checked.returncode == 0 and "Validation passed" in checked.stdout, checked.stdout + checked.stderr
    clone = tmp_path / "clone"  # `/plugin marketplace add` on a clone of the repository
    shutil.copytree(REPO / ".claude-plugin", clone / ".claude-plugin")
    shutil.copytree(PLUGIN, clone / "plugins" / "memsearch")
    added = claude("plugin", "marketplace", "add", str(clone))
    assert added.returncode == 0, added.stdout + added.stderr
    root = tmp_path / "memory"
    installed = claude("plugin", "install", "memsearch@memsearch", "--config", f"memory_root={root}", "--config",
                       "log_sessions=true", "--config", f"memsearch_command={MEMSEARCH}")
    assert installed.returncode == 0 and "Successfully installed" in installed.stdout, installed.stdout
    details = claude("plugin", "details", "memsearch@memsearch")
    assert "SessionStart, UserPromptSubmit, Stop, SessionEnd, PreCompact" in details.stdout, details.stdout

    project = tmp_path / "ledger"
    (project / ".git").mkdir(parents=True)
    recalled = []
    try:
        for _ in range(2):
            with MessagesStub(PROMPT) as stub:
                done = claude("-p", PROMPT, cwd=project, ANTHROPIC_API_KEY="sk-x", ANTHROPIC_BASE_URL=stub.url)
                assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
                recalled.append(_recall(stub))
            if len(recalled) == 1:  # the first session's log, indexed by the service SessionStart started
                assert [p for p in (root / "ledger").glob("*.md") if p.name != "MEMORY.md"], sorted(root.rglob("*"))
                deadline = time.monotonic() + 300  # a new HOME: the service exports the ONNX model first
                while not ((status := process.daemon_status(root)).get("serving") and status.get("state") == "watching"
                           and not (status.get("pending") or {}).get("total") and not status.get("partial_files")):
                    assert time.monotonic() < deadline, status
                    time.sleep(0.5)
    finally:
        process.stop(root)
    assert validate(root).valid and (root / "MEMORY.md").read_text() == plugin.ROOT_INDEX  # SessionStart made it
    (log,) = [p for p in (root / "ledger").glob("*.md") if p.name != "MEMORY.md"]  # the sessions, logged
    text = log.read_text()
    assert "Where is the retry test?" in text and "hunter2" not in text and "password=[masked]" in text
    assert text.count("## Session ") == 2  # one section per session, never a duplicate (Stop, then SessionEnd)
    assert f"- ledger/{log.name}:" in recalled[1], recalled  # the second session recalls the first


def test_the_plugin_folder_claude_code_install_writes_passes_strict_validation(claude_cli, make_tree, tmp_path):
    """`memsearch claude-code install ROOT --plugin DIR` writes a plugin folder; `claude plugin validate --strict` on
    it failed (no author in plugin.json, a warning --strict counts), as the repository's own plugin does not."""
    root = make_tree({"MEMORY.md": "# Memory\n"})
    folder = tmp_path / "my plugin"
    done = subprocess.run([sys.executable, "-m", "memsearch", "claude-code", "install", str(root), "--plugin",
                           str(folder), "--log-sessions", "--yes"], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=str(REPO)), stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    checked = subprocess.run([claude_cli, "plugin", "validate", "--strict", str(folder)], capture_output=True, text=True,
                             timeout=300, env={"HOME": str(tmp_path), "PATH": os.environ["PATH"],
                                               "DISABLE_AUTOUPDATER": "1"}, stdin=subprocess.DEVNULL)
    assert checked.returncode == 0 and "Validation passed" in checked.stdout, checked.stdout + checked.stderr
