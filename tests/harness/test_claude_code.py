"""Claude Code: `memsearch claude-code install` writes the hooks and MCP server with absolute paths, and each hook,
fed the JSON Claude Code documents on stdin, answers with its JSON through a real daemon, and never fails."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time

import pytest

from memsearch.harness import claude_code, clients, hooklimits, hooks
from memsearch.service import process
from tests.conftest import REPO

# The hooks start daemons, as users get them. Their bound is lifted: these tests check what a hook answers, and a
# busy machine must not turn a slow answer into none (benchmarks.perf.hooks measures their times).
# Read at each call: the test's own $XDG_RUNTIME_DIR (tests/conftest.py) is set after this module is imported.
SETTINGS = {"PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1", "MEMSEARCH_AUTOSTART": "1", "MEMSEARCH_HOOK_TIMEOUT": "90"}


def env_now() -> dict:
    return dict(os.environ, **SETTINGS)
FILES = {"MEMORY.md": "# Ada's memory\nAda prefers short answers.\n",
         "projects/MEMORY.md": "# Projects\nOne file per project.\n",
         "projects/atlas.md": "# Atlas\n## Decisions\nWe chose ClickHouse as the Atlas warehouse for fast scans.\n",
         "notes/MEMORY.md": "# Notes\nDated notes.\n",
         "notes/2026-08-12.md": "# Standup\nThe deploy moved to Wednesday.\n"}


def run_hook(command: str, payload, cwd, **env) -> tuple[subprocess.CompletedProcess, float]:
    """Run a hook command as Claude Code does (a shell command, the hook's JSON on stdin); its wall time."""
    data = payload if isinstance(payload, str) else json.dumps(payload)
    start = time.perf_counter()
    done = subprocess.run(command, shell=True, input=data, capture_output=True, text=True, timeout=120,
                          env=env_now() | env, cwd=cwd)
    return done, time.perf_counter() - start


def test_install_writes_hooks_and_mcp_server_and_keeps_other_settings(make_tree, tmp_path):
    root = make_tree(FILES)
    project = tmp_path / "project"
    (project / ".claude").mkdir(parents=True)
    other = {"matcher": "Bash", "hooks": [{"type": "command", "command": "echo other"}]}
    (project / ".claude" / "settings.json").write_text(json.dumps(
        {"permissions": {"allow": ["Read"]}, "hooks": {"UserPromptSubmit": [other], "PreToolUse": [other]}}))
    cmd = [sys.executable, "-m", "memsearch", "claude-code", "install", str(root), "--project", str(project), "--yes"]
    for _ in range(2):  # twice: idempotent, memsearch's hooks replaced, never doubled
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env_now(), stdin=subprocess.DEVNULL)
        assert done.returncode == 0, done.stderr
    settings = json.loads((project / ".claude" / "settings.json").read_text())
    tools = [f"mcp__memsearch__{name}" for name in ("memory_search", "memory_read", "memory_list", "memory_core")]
    assert settings["permissions"] == {"allow": ["Read"] + tools}  # `claude -p` calls them without asking
    assert settings["enabledMcpjsonServers"] == ["memsearch"] and settings["hooks"]["PreToolUse"] == [other]
    assert not set(claude_code.LOG_EVENTS) & set(settings["hooks"])  # no session log without --log-sessions
    prompt_groups = settings["hooks"]["UserPromptSubmit"]
    assert prompt_groups[0] == other and len(prompt_groups) == 2
    for event, arg in claude_code.EVENTS.items():
        (hook,) = settings["hooks"][event][-1]["hooks"]
        assert hook["type"] == "command" and hook["timeout"] == 90 + hooklimits.CLAUDE_MARGIN_S  # as install read it
        argv = shlex.split(hook["command"])
        assert os.path.isabs(argv[0]) and argv[1] in ("-I", "-P") and argv[2:5] == ["-m", "memsearch.harness.hooks", arg]
        assert argv[5:7] == ["--root", str(root.resolve())]
    server = json.loads((project / ".mcp.json").read_text())["mcpServers"]["memsearch"]
    assert os.path.isabs(server["command"]) and server["args"] == ["serve", str(root.resolve())]

    # --writable --log-sessions, then neither: the memory tool's rule and the session hooks come and go
    done = subprocess.run(cmd + ["--writable", "--log-sessions"], capture_output=True, text=True, timeout=120, env=env_now(),
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    settings = json.loads((project / ".claude" / "settings.json").read_text())
    assert settings["permissions"]["allow"] == ["Read"] + tools + ["mcp__memsearch__memory"]
    for event in claude_code.LOG_EVENTS:
        (hook,) = settings["hooks"][event][-1]["hooks"]
        assert shlex.split(hook["command"])[4:7] == ["session-log", "--root", str(root.resolve())]
        assert hook.get("async", False) == (event != "SessionEnd")  # Stop follows every turn: in the background
    subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env_now(), stdin=subprocess.DEVNULL, check=True)
    settings = json.loads((project / ".claude" / "settings.json").read_text())
    assert settings["permissions"]["allow"] == ["Read"] + tools and settings["enabledMcpjsonServers"] == ["memsearch"]
    assert not set(claude_code.LOG_EVENTS) & set(settings["hooks"]) and settings["hooks"]["PreToolUse"] == [other]

    plugin = tmp_path / "plugin"
    spec = clients.server_spec(root)
    for change in claude_code.plan_plugin(spec, root.resolve(), plugin):
        clients.apply(change)
    assert json.loads((plugin / ".claude-plugin" / "plugin.json").read_text())["name"] == "memsearch"
    assert set(json.loads((plugin / "hooks" / "hooks.json").read_text())["hooks"]) == set(claude_code.EVENTS)
    assert json.loads((plugin / ".mcp.json").read_text())["mcpServers"]["memsearch"]["command"] == spec.command


def test_a_relative_db_is_written_absolute_everywhere(make_tree, tmp_path):
    root = make_tree(FILES)
    project = tmp_path / "project"
    project.mkdir()
    cmd = [sys.executable, "-m", "memsearch", "claude-code", "install", os.path.relpath(root, project), "--project",
           ".", "--db", "./idx", "--log-sessions", "--yes"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env_now(), stdin=subprocess.DEVNULL,
                          cwd=project)
    assert done.returncode == 0, done.stderr
    settings = json.loads((project / ".claude" / "settings.json").read_text())
    commands = [h["command"] for groups in settings["hooks"].values() for g in groups for h in g["hooks"]]
    assert len(commands) == len(claude_code.EVENTS) + len(claude_code.LOG_EVENTS)
    for command in commands:
        argv = shlex.split(command)
        assert argv[argv.index("--db") + 1] == str(project / "idx") and os.path.isabs(argv[0])
        assert argv[argv.index("--root") + 1] == str(root.resolve())
    server = json.loads((project / ".mcp.json").read_text())["mcpServers"]["memsearch"]
    assert server["args"] == ["serve", str(root.resolve()), "--db", str(project / "idx")]


@pytest.mark.parametrize("event", ["SessionStart", "Stop"])
def test_settings_whose_event_is_not_a_list_are_refused_naming_it_and_left_alone(make_tree, tmp_path, event):
    """An event's hooks given as an object (not the list Claude Code reads) stopped the install with a TypeError
    traceback; it is refused in one line naming the key, and nothing is written."""
    root = make_tree(FILES)
    settings = tmp_path / "project" / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    before = json.dumps({"hooks": {event: {"hooks": [{"type": "command", "command": "echo mine"}]}}})
    settings.write_text(before)
    done = subprocess.run([sys.executable, "-m", "memsearch", "claude-code", "install", str(root), "--project",
                           str(settings.parent.parent), "--log-sessions", "--yes"], capture_output=True, text=True,
                          timeout=120, env=env_now(), stdin=subprocess.DEVNULL)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert f"expected a list at hooks.{event!r}; fix it, then run again" in done.stderr, done.stderr
    assert settings.read_text() == before and not (settings.parent.parent / ".mcp.json").exists()


def test_a_mistyped_project_folder_is_refused_and_nothing_is_created(make_tree, tmp_path):
    """``--project`` naming no folder (a typo). Before: the folder was created, holding the hooks and the server, and
    the user's real project got nothing, with no word of it."""
    root = make_tree(FILES)
    (tmp_path / "myproject").mkdir()
    typo = tmp_path / "myprojct"
    for args in (["claude-code", "install", str(root)], ["mcp-config", str(root), "--client", "claude-code",
                                                          "--install"]):
        done = subprocess.run([sys.executable, "-m", "memsearch", *args, "--project", str(typo), "--yes"],
                              capture_output=True, text=True, timeout=120, env=env_now(), stdin=subprocess.DEVNULL)
        assert done.returncode == 2 and not typo.exists(), done.stderr
        assert done.stderr == (f"error: the project folder {typo} does not exist (create it first for a new project): "
                               "pass --project the folder you start claude in\n"), done.stderr


def test_settings_kept_as_links_stay_links_and_their_targets_get_the_change(make_tree, tmp_path):
    """``.claude/settings.json`` and ``.mcp.json`` as symbolic links into a dotfiles folder (or shared by worktrees).
    Before: each link was replaced by a plain file, so the shared file no longer was the project's."""
    root = make_tree(FILES)
    project, dotfiles = tmp_path / "project", tmp_path / "dotfiles"
    (project / ".claude").mkdir(parents=True)
    dotfiles.mkdir()
    (dotfiles / "settings.json").write_text(json.dumps({"permissions": {"allow": ["Read"]}}))
    (dotfiles / "mcp.json").write_text(json.dumps({"mcpServers": {"other": {"command": "other"}}}))
    (project / ".claude" / "settings.json").symlink_to("../../dotfiles/settings.json")
    (project / ".mcp.json").symlink_to(dotfiles / "mcp.json")
    done = subprocess.run([sys.executable, "-m", "memsearch", "claude-code", "install", str(root), "--project",
                           str(project), "--yes"], capture_output=True, text=True, timeout=120, env=env_now(),
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    assert f"wrote {project / '.claude' / 'settings.json'} (the link's target, {dotfiles / 'settings.json'})" in done.stderr
    assert (project / ".claude" / "settings.json").is_symlink() and (project / ".mcp.json").is_symlink()
    settings = json.loads((dotfiles / "settings.json").read_text())
    assert settings["permissions"]["allow"][:2] == ["Read", "mcp__memsearch__memory_search"] and settings["hooks"]
    assert set(json.loads((dotfiles / "mcp.json").read_text())["mcpServers"]) == {"other", "memsearch"}


def test_uninstall_takes_out_what_install_added_and_keeps_the_rest(make_tree, tmp_path):
    """There was no way back but editing two JSON files by hand; `claude-code uninstall` leaves the user's own
    hooks, rules, servers and settings as they were before the install, and the memory root as it is."""
    root = make_tree(FILES)
    project = tmp_path / "project"
    (project / ".claude").mkdir(parents=True)
    mine = {"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": "echo mine"}]}]},
            "permissions": {"allow": ["Read"]}, "model": "opus"}
    (project / ".claude" / "settings.json").write_text(json.dumps(mine))
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"other": {"command": "other"}}}))
    files = sorted((p.relative_to(root), p.read_bytes()) for p in root.rglob("*") if p.is_file())

    def memsearch(*args):
        return subprocess.run([sys.executable, "-m", "memsearch", "claude-code", *args, "--project", str(project),
                               "--yes"], capture_output=True, text=True, timeout=120, env=env_now(),
                              stdin=subprocess.DEVNULL)

    assert memsearch("install", str(root), "--writable", "--log-sessions").returncode == 0
    done = memsearch("uninstall")
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert json.loads((project / ".claude" / "settings.json").read_text()) == mine
    assert json.loads((project / ".mcp.json").read_text()) == {"mcpServers": {"other": {"command": "other"}}}
    again = memsearch("uninstall")
    assert again.returncode == 0 and again.stderr == "memsearch is not installed there: nothing to change\n"
    assert sorted((p.relative_to(root), p.read_bytes()) for p in root.rglob("*") if p.is_file()) == files


@pytest.mark.parametrize("stdin", ["", "not json", "[1, 2]", '{"prompt": 42}'])
def test_a_hook_never_fails_on_bad_input(tmp_path, stdin):
    for event in claude_code.EVENTS:
        command = claude_code.hook_command(event, tmp_path / "no-such-root")
        done, _ = run_hook(command, stdin, tmp_path)
        assert done.returncode == 0 and done.stderr == ""
        if event == "SessionStart" and stdin.startswith("{"):  # a hook's input: the missing root is said
            assert "no memory in this session" in json.loads(done.stdout)["systemMessage"]
        else:
            assert done.stdout == ""


def test_a_root_moved_away_is_said_at_session_start_and_no_hook_fails(make_tree, tmp_path):
    """The memory root moved after `claude-code install`: every hook still exits 0 without a word on stderr, and
    SessionStart tells the user (``systemMessage``) and the model (its context) that memory is gone and how to
    fix it. Before: the session started without memory and without a word; only hooks.log said why."""
    root = make_tree(FILES)
    project = tmp_path / "project"
    project.mkdir()
    done = subprocess.run([sys.executable, "-m", "memsearch", "claude-code", "install", str(root), "--project",
                           str(project), "--yes"], capture_output=True, text=True, timeout=120, env=env_now(),
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    settings = json.loads((project / ".claude" / "settings.json").read_text())
    commands = {event: settings["hooks"][event][-1]["hooks"][0]["command"] for event in claude_code.EVENTS}
    root.rename(tmp_path / "moved")
    payload = {"hook_event_name": "SessionStart", "session_id": "s1", "cwd": str(project), "prompt": "Atlas warehouse"}
    start, _ = run_hook(commands["SessionStart"], payload, project, MEMSEARCH_AUTOSTART="0")
    prompt, _ = run_hook(commands["UserPromptSubmit"], payload, project, MEMSEARCH_AUTOSTART="0")
    assert (start.returncode, start.stderr, prompt.returncode, prompt.stdout, prompt.stderr) == (0, "", 0, "", "")
    said = json.loads(start.stdout)
    shown = f"memory root {str(root.resolve())!r} does not exist"
    assert shown in said["systemMessage"] and "`memsearch claude-code install NEW_ROOT`" in said["systemMessage"]
    context = said["hookSpecificOutput"]
    assert context["hookEventName"] == "SessionStart" and shown in context["additionalContext"]
    assert "tell the user" in context["additionalContext"]


@pytest.mark.parametrize("stdin", ["", " \n", "not json", '{"prompt": ', "[1, 2]", '"text"', "null", b"\xff\xfe{"])
def test_input_that_is_not_a_json_object_is_one_line_in_the_hooks_log(make_tree, tmp_path, stdin):
    """Empty, malformed or non-object input: each hook prints nothing, exits 0, and says so in one line of hooks.log,
    never a traceback (that is for errors memsearch did not expect). Before: a traceback for malformed JSON, and
    nothing at all for empty or non-object input, which the hooks then ran on as if it were {}."""
    from memsearch.location import hooks_log_file

    root = make_tree(FILES)
    for event in claude_code.EVENTS:
        command = claude_code.hook_command(event, root)
        done = subprocess.run(command, shell=True, input=stdin.encode() if isinstance(stdin, str) else stdin,
                              capture_output=True, timeout=120, env=env_now() | {"MEMSEARCH_AUTOSTART": "0"},
                              cwd=tmp_path)
        assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    lines = hooks_log_file().read_text().splitlines()
    assert len(lines) == 2 and all("the hook's input is" in line and "Claude Code hook" in line for line in lines), lines
    assert [line.split(" hook, ")[0].split()[-1] for line in lines] == ["session-start", "prompt"]


def test_the_hooks_log_moves_aside_when_full(make_tree, tmp_path):
    """A root gone for months adds a line to hooks.log at every prompt. Before: the log grew without end; now it moves
    aside past LOG_MAX_BYTES, as the service's and the daemons' logs do, keeping LOG_BACKUPS older files."""
    import shutil

    from memsearch.location import LOG_BACKUPS, LOG_MAX_BYTES, hooks_log_file

    root = make_tree(FILES)
    command = claude_code.hook_command("UserPromptSubmit", root)
    shutil.rmtree(root)
    log = hooks_log_file()
    log.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    for n in range(LOG_BACKUPS + 1):
        log.write_text(f"old {n}\n" + "x" * LOG_MAX_BYTES)
        done = subprocess.run(command, shell=True, input=json.dumps({"prompt": "which warehouse"}).encode(),
                              capture_output=True, timeout=120, env=env_now() | {"MEMSEARCH_AUTOSTART": "0"},
                              cwd=tmp_path)
        assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
        lines = log.read_text().splitlines()
        assert len(lines) == 1 and "prompt hook" in lines[0] and str(root) in lines[0], lines
        assert log.stat().st_mode & 0o777 == 0o600
    kept = sorted(log.parent.glob(log.name + ".*"))
    assert [p.name for p in kept] == [f"{log.name}.{n}" for n in range(1, LOG_BACKUPS + 1)]
    assert [p.read_text().split("\n", 1)[0] for p in kept] == [f"old {LOG_BACKUPS - n}" for n in range(LOG_BACKUPS)]


@pytest.mark.parametrize("prompt", [5, 0.5, True, ["which warehouse"], {"text": "which warehouse"}, None])
def test_a_prompt_that_is_not_text_recalls_nothing(make_tree, monkeypatch, prompt):
    """Claude Code's prompt is a string: any other value is no prompt, as null is, and nothing is searched or
    injected. Before: ``{"prompt": 5}`` searched memory for "5" and injected the hits."""
    root = make_tree(FILES)
    asked = []
    hit = {"path": "notes/2026-08-12.md", "start_line": 1, "end_line": 2, "text": "The deploy moved to Wednesday."}
    monkeypatch.setattr(hooks, "_recall", lambda root, query, *args: asked.append(query) or [hit])
    assert hooks.run("prompt", root, {"hook_event_name": "UserPromptSubmit", "prompt": prompt}) is None
    assert asked == []
    assert "Wednesday" in hooks.run("prompt", root, {"prompt": "when is the deploy"})["hookSpecificOutput"][
        "additionalContext"] and asked == ["when is the deploy"]


@pytest.mark.slow
def test_hooks_answer_through_a_real_daemon(make_tree, tmp_path):
    root = make_tree(FILES)
    session = claude_code.hook_command("SessionStart", root)
    prompt = claude_code.hook_command("UserPromptSubmit", root)
    common = {"session_id": "abc", "transcript_path": str(tmp_path / "t.jsonl"), "cwd": str(tmp_path)}
    timings = {}
    try:
        # No daemon yet, a tree never indexed: the prompt hook starts one and answers by keyword in-process
        # (text rows first, hits partial, unless the service it started has embedded the three files first, as it
        # may on a busy machine: test_the_first_prompt_recalls_by_keyword_before_the_service_has_its_model holds the
        # partial case); its time is reported below, never bounded here: the hook's own time limit is raised for it,
        # since on a loaded machine this user's service (shared with the tests before) may write its first rows late.
        done, timings["prompt, no daemon, never indexed"] = run_hook(
            prompt, {**common, "hook_event_name": "UserPromptSubmit", "prompt": "which warehouse for Atlas"}, tmp_path,
            MEMSEARCH_HOOK_TIMEOUT="60")
        assert done.returncode == 0 and done.stderr == ""
        cold = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
        assert "- projects/atlas.md:" in cold and "ClickHouse" in cold
        deadline = time.monotonic() + 240
        while not (status := process.daemon_status(root)).get("serving") or status.get("state") != "watching":
            assert time.monotonic() < deadline, status
            time.sleep(0.5)

        done, timings["session start"] = run_hook(
            session, {**common, "hook_event_name": "SessionStart", "source": "startup"}, tmp_path)
        assert done.returncode == 0, done.stderr
        out = json.loads(done.stdout)["hookSpecificOutput"]
        assert out["hookEventName"] == "SessionStart"
        assert "Ada prefers short answers." in out["additionalContext"]  # core memory
        assert "projects/ (projects/MEMORY.md): Projects" in out["additionalContext"]  # the top-level listing

        warm = []
        for _ in range(5):
            done, seconds = run_hook(
                prompt, {**common, "hook_event_name": "UserPromptSubmit", "prompt": "which warehouse for Atlas"},
                tmp_path)
            warm.append(seconds)
            assert done.returncode == 0, done.stderr
            out = json.loads(done.stdout)["hookSpecificOutput"]
            assert out["hookEventName"] == "UserPromptSubmit"
            first = out["additionalContext"].splitlines()[1]
            assert first.startswith("- projects/atlas.md:") and "ClickHouse" in first
            assert "folder index: projects/MEMORY.md (Projects)" in out["additionalContext"]
        from memsearch.memory.tokens import count_tokens

        assert len(out["additionalContext"].encode()) <= hooks.PROMPT_BYTES
        assert count_tokens(out["additionalContext"]) <= hooks.PROMPT_BYTES  # a token is at least one byte
        short = hooks.prompt_context(root, "which warehouse for Atlas", limit=400)
        assert len(short.encode()) <= 400 and "projects/atlas.md" in short
        timings["prompt, warm daemon (median of 5)"] = sorted(warm)[2]
        done, _ = run_hook(prompt, {**common, "hook_event_name": "UserPromptSubmit", "prompt": "  "}, tmp_path)
        assert done.returncode == 0 and done.stdout == ""
        for chatter in ("continue", "ok, go ahead!", "thanks"):  # no topic: the vector leg's best is noise
            done, _ = run_hook(prompt, {**common, "hook_event_name": "UserPromptSubmit", "prompt": chatter}, tmp_path)
            assert done.returncode == 0 and done.stdout == "", (chatter, done.stdout)
        assert hooks.prompt_context(root, "continue with Atlas")  # a topic beside the chatter: recalled
    finally:
        process.stop(root)
    print("hook wall times (s):", {k: round(v, 3) for k, v in timings.items()}, "load", os.getloadavg())


def test_a_hung_daemon_does_not_block_the_prompt(make_tree, tmp_path):
    """A daemon that accepts and never answers: the hook gives up on it after its ask timeout and answers
    in-process (here with no daemon to start, so it would embed in-process: past its default bound it prints
    nothing); it exits 0 within its bound either way."""
    import socket
    import threading

    from memsearch.engine.index import MemoryIndex
    from memsearch.location import IndexLocation

    root = make_tree(FILES)
    MemoryIndex(root).sync(defer=True)  # an index with rows (text only: no model loads), which the hook asks for
    path = IndexLocation.of(root).socket
    path.parent.mkdir(parents=True)
    held = []
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(str(path))
        server.listen()
        threading.Thread(target=lambda: held.append(server.accept()), daemon=True).start()
        done, seconds = run_hook(claude_code.hook_command("UserPromptSubmit", root),
                                 {"hook_event_name": "UserPromptSubmit", "prompt": "which warehouse"}, tmp_path,
                                 MEMSEARCH_AUTOSTART="0", MEMSEARCH_HOOK_TIMEOUT="8")
    assert done.returncode == 0 and done.stderr == ""
    assert done.stdout == "" or "Memory recalled for this prompt" in done.stdout
    assert held  # the hook did reach the hung daemon (a hook that hung too would hit run_hook's 60 s timeout)
    print(f"prompt hook against a hung daemon: {seconds:.2f} s (ask timeout {hooks.ASK_TIMEOUT_S} s)")


def test_claude_code_gets_the_hook_timeout_and_a_margin(monkeypatch):
    monkeypatch.delenv("MEMSEARCH_HOOK_TIMEOUT", raising=False)
    assert hooklimits.claude_timeout() == 10  # the default 8 s, and 2 s for Claude Code to see it end
    monkeypatch.setenv("MEMSEARCH_HOOK_TIMEOUT", "2.5")
    assert hooklimits.claude_timeout() == 5


def test_the_hook_reads_the_command_line_it_is_given(tmp_path):
    for event, arg in claude_code.EVENTS.items():
        for db in (None, "s3://bucket/prefix", "/tmp/an index"):
            argv = shlex.split(claude_code.hook_command(event, tmp_path / "my memory", db))[4:]
            assert hooks.parse(argv) == (arg, str(tmp_path / "my memory"), db)
    assert hooks.parse(["prompt", "--root=/m", "--db=/d", "--later-option", "x"]) == ("prompt", "/m", "/d")
    for bad in ([], ["prompt"], ["prompt", "--root"], ["talk", "--root", "/m"], ["--root", "/m"], ["prompt", "--root="]):
        assert hooks.parse(bad) is None
        assert hooks.main(bad) == 0


@pytest.mark.slow
def test_the_first_prompt_of_a_cold_session_recalls(make_tree, tmp_path):
    """As `claude -p` runs them on a root never indexed with no daemon: the session-start hook (which starts the
    daemon) and at once the prompt hook, which answers from the first rows, keyword hits flagged partial; then
    the daemon answers, hits no longer partial."""
    root = make_tree(FILES)
    session = claude_code.hook_command("SessionStart", root)
    prompt = claude_code.hook_command("UserPromptSubmit", root)
    ask = {"hook_event_name": "UserPromptSubmit", "prompt": "which warehouse for Atlas", "cwd": str(tmp_path)}
    try:
        done, session_s = run_hook(session, {"hook_event_name": "SessionStart", "source": "startup"}, tmp_path)
        assert done.returncode == 0 and "Ada prefers short answers." in done.stdout
        done, first_s = run_hook(prompt, ask, tmp_path)
        assert done.returncode == 0 and done.stderr == ""
        first = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
        assert "- projects/atlas.md:" in first and "ClickHouse" in first
        deadline = time.monotonic() + 240
        while not (status := process.daemon_status(root)).get("serving") or status.get("state") != "watching":
            assert time.monotonic() < deadline, status
            time.sleep(0.5)
        done, warm_s = run_hook(prompt, ask, tmp_path)
        warm = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
        assert "- projects/atlas.md:" in warm and "[partial]" not in warm
    finally:
        process.stop(root)
    print(f"cold session: start {session_s:.2f} s, first prompt {first_s:.2f} s; warm prompt {warm_s:.2f} s; "
          f"load {os.getloadavg()}")


@pytest.mark.slow
def test_the_first_prompt_recalls_by_keyword_before_the_service_has_its_model(make_tree, tmp_path):
    """The session-start hook starts the service, which loads its model before it takes the index; until it has
    (here: never, its weights are damaged; on a new machine: the ONNX export, 16-27 s on 2 cores) it has no row to
    answer from. The first prompt is answered by the hook itself, by keyword from the text rows it writes, without
    loading the model (before: it waited for the service, or loaded the model itself, and answered nothing)."""
    import shutil

    from memsearch.engine.embed.embedder import load_embedder

    model = tmp_path / "all-MiniLM-L6-v2-damaged"  # a local copy of the default model: its dimension is known
    shutil.copytree(load_embedder().source, model, ignore=shutil.ignore_patterns("*.safetensors", "*.bin"))
    (model / "model.safetensors").write_bytes(b"\0" * 4096)
    root = make_tree(FILES)
    env = {"MEMSEARCH_MODEL": str(model), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    ask = {"hook_event_name": "UserPromptSubmit", "prompt": "which warehouse for Atlas", "cwd": str(tmp_path)}
    try:
        done, _ = run_hook(claude_code.hook_command("SessionStart", root), {"hook_event_name": "SessionStart"},
                           tmp_path, **env)
        assert done.returncode == 0 and "Ada prefers short answers." in done.stdout
        done, _ = run_hook(claude_code.hook_command("UserPromptSubmit", root), ask, tmp_path, **env)
        assert done.returncode == 0 and done.stderr == ""
        first = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
        assert "- projects/atlas.md:" in first and "[partial]" in first and "ClickHouse" in first, first
    finally:
        process.stop(root)
