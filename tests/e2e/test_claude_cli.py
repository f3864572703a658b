"""The real Claude Code CLI (``@anthropic-ai/claude-code`` from npm) against memsearch, its model a loopback stub.

`memsearch claude-code install ROOT --project DIR --log-sessions` on a copy of examples/memory, then ``claude -p``
in DIR twice: a cold session (the root never indexed, no daemon) and a warm one (the daemon the first started). The stub of
the Messages API (:mod:`tests.support.messages_stub`) scripts the model: fetch the deferred memory tool through
``ToolSearch``, call ``mcp__memsearch__memory_search``, answer. What reached the model is asserted from the
requests it recorded: the SessionStart context (core memory and the listing), the prompt's recall in both
sessions, the tool's hits with their ``MEMORY.md``, and in the second session's recall the first session's log
(``ROOT/project/DATE.md``). The CLI is installed once into a cache
(``~/.cache/memsearch-tests/claude-code-VERSION``; ``MEMSEARCH_TEST_CLAUDE_CODE`` names another version); the
test skips, saying why, only where npm or the package cannot be had. Claude Code refuses
``--dangerously-skip-permissions`` as root, so the tool is allowed with ``--allowedTools``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memsearch.service import process
from tests.conftest import EXAMPLES, REPO
from tests.support.claude_cli import installed
from tests.support.messages_stub import SEARCH_TOOL, TOOL_SEARCH, MessagesStub

PROMPT = "which warehouse did we choose for Atlas"


@pytest.fixture(scope="module")
def claude() -> Path:
    """The ``claude`` executable of the pinned version (:mod:`tests.support.claude_cli`)."""
    return installed()


def _env(home: Path, stub: MessagesStub) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CLAUDE", "PYTHONPATH"))}
    return env | {
        "HOME": str(home), "ANTHROPIC_BASE_URL": stub.url, "ANTHROPIC_API_KEY": "sk-ant-test-dummy",
        "DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1", "DISABLE_ERROR_REPORTING": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "MEMSEARCH_AUTOSTART": "1",  # the default users get (the test suite turns it off elsewhere)
        # Behaviour, not speed, is tested here: a busy machine must not turn a slow hook into a missing one
        # (the hooks' times are measured by benchmarks.perf.hooks).
        "MEMSEARCH_HOOK_TIMEOUT": "90",
    }


def _texts(body: dict) -> str:
    """Everything of one request the model reads, as text."""
    return json.dumps(body.get("messages"), ensure_ascii=False)


def _context(body: dict, marker: str) -> str:
    """The text block (or message) of ``body`` that holds ``marker``, as the model sees it."""
    for message in body.get("messages") or []:
        content = message.get("content")
        for text in [content] if isinstance(content, str) else [b.get("text", "") for b in content or []]:
            if isinstance(text, str) and marker in text:
                return text
    return ""


def session(claude: Path, project: Path, home: Path, stub: MessagesStub) -> dict:
    """One ``claude -p`` session; what reached the model, and its wall time."""
    stub.requests.clear()
    started = time.perf_counter()
    done = subprocess.run([str(claude), "-p", PROMPT, "--allowedTools", SEARCH_TOOL, "--output-format", "json"],
                          cwd=project, env=_env(home, stub), capture_output=True, text=True, timeout=600,
                          stdin=subprocess.DEVNULL)
    seconds = time.perf_counter() - started
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
    result = json.loads(done.stdout)
    assert result.get("is_error") is False and result["result"] == stub.answer, result
    first = stub.conversations()[0]
    return {"seconds": seconds, "first": first, "searched": stub.tool_result(SEARCH_TOOL),
            "tool_search": stub.tool_result(TOOL_SEARCH), "requests": list(stub.requests)}


def check(seen: dict) -> None:
    """What every session must have put before the model."""
    start = _context(seen["first"], "SessionStart")
    assert "# Memory: Wren, working with Maya Chen" in start  # core memory: the root MEMORY.md
    assert "projects/ (projects/MEMORY.md)" in start  # the listing of the memory directories
    recall = _context(seen["first"], "Memory recalled for this prompt")
    assert recall, f"no prompt recall reached the model: {_texts(seen['first'])[:3000]}"
    assert "- notes/2026-08-04.md:" in recall and "folder index: notes/MEMORY.md" in recall, recall
    # The deferred tool was fetched through ToolSearch (Claude Code 2.1), then called. A ToolSearch asked again
    # after "still connecting" reaches the model as Claude Code's "[Tool result missing ...]" (messages_stub).
    deferred = [t for r in seen["requests"] for t in r.get("tools") or [] if t.get("name") == SEARCH_TOOL]
    assert deferred and all(t.get("defer_loading") for t in deferred), deferred
    assert seen["tool_search"] is not None, "ToolSearch was never called"
    assert SEARCH_TOOL in seen["tool_search"] or "Tool result missing" in seen["tool_search"], seen["tool_search"]
    assert seen["searched"] is not None, "memory_search was never called"
    hits = json.loads(seen["searched"])["hits"]
    assert ("notes/2026-08-04.md", "Atlas v2 warehouse decision") in [(h["path"], h["heading"]) for h in hits], hits
    assert all(hit["memory_md"]["path"].endswith("MEMORY.md") for hit in hits), hits


def test_claude_code_cli_recalls_memory_in_a_cold_and_a_warm_session(claude, tmp_path):
    root = shutil.copytree(EXAMPLES, tmp_path / "memory", ignore=shutil.ignore_patterns(".memsearch"))
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    with MessagesStub(PROMPT) as stub:
        install = subprocess.run([sys.executable, "-m", "memsearch", "claude-code", "install", str(root), "--project",
                                  str(project), "--log-sessions", "--yes"], capture_output=True, text=True, timeout=120,
                                 env=_env(home, stub), cwd=REPO)
        assert install.returncode == 0, install.stderr
        try:
            cold = session(claude, project, home, stub)
            deadline = time.monotonic() + 300
            while not ((status := process.daemon_status(root)).get("serving") and status.get("state") == "watching"
                       and not (status.get("pending") or {}).get("total") and not status.get("partial_files")):
                assert time.monotonic() < deadline, status
                time.sleep(0.5)
            warm = session(claude, project, home, stub)
        finally:
            process.stop(root)
    for seen in (cold, warm):
        check(seen)
    logs = sorted((root / "project").glob("????-??-??.md"))  # the first session, kept as memory
    assert logs and PROMPT in logs[-1].read_text() and (root / "project" / "MEMORY.md").is_file()
    recall = _context(warm["first"], "Memory recalled for this prompt")
    assert "[partial]" not in recall  # the warm session's recall comes from the embedded index
    assert f"- project/{logs[-1].name}:" in recall, recall  # and finds the first session's log
    print(f"claude -p with memsearch: cold session {cold['seconds']:.1f} s, warm {warm['seconds']:.1f} s; "
          f"load {os.getloadavg()}")


def test_the_scripted_model_asks_toolsearch_again_while_the_server_connects(monkeypatch):
    """A busy machine: ToolSearch answers before the MCP server has connected; the script asks again, as a model
    would, instead of calling a tool it was not given (the test above failed so at load 5)."""
    from tests.support import messages_stub

    monkeypatch.setattr(messages_stub.time, "sleep", lambda s: None)
    stub = MessagesStub(PROMPT)
    tools = [{"name": TOOL_SEARCH}, {"name": SEARCH_TOOL, "defer_loading": True}]

    def asked(*results):
        content = [{"type": "tool_result", "tool_use_id": key, "content": text} for key, text in results]
        return stub.reply({"tools": tools, "messages": [{"role": "user", "content": content}]})[0][0]

    first = stub.reply({"tools": tools, "messages": [{"role": "user", "content": PROMPT}]})[0][0]
    assert first["name"] == TOOL_SEARCH
    again = asked((first["id"], "The MCP server memsearch is still connecting"))
    assert again["name"] == TOOL_SEARCH and again["id"] != first["id"]
    found = [{"type": "tool_reference", "tool_name": SEARCH_TOOL}]
    call = asked((first["id"], "still connecting"), (again["id"], found))
    assert call["name"] == SEARCH_TOOL and call["input"] == {"query": PROMPT}
    # Claude Code 2.1.332 sends a retried ToolSearch's result as a placeholder; the tool is offered by then.
    missing = "[Tool result missing due to internal error]"
    call = asked((first["id"], "still connecting"), (again["id"], missing))
    assert call["name"] == SEARCH_TOOL
    tools[1:] = []  # not offered yet: ask again
    assert asked((first["id"], "still connecting"), (again["id"], missing))["name"] == TOOL_SEARCH


def test_claude_p_in_a_folder_never_trusted_needs_the_trust_the_install_names(claude, tmp_path):
    """Claude Code 2.1 ignores a project's permission rules until its folder is trusted, and `claude -p` never shows
    the trust dialog: the memory tools the install allowed were denied, while the docs said `claude -p` counted as
    trusting. The install now ends by saying so; what it says is checked here with the real CLI: denied, allowed with
    `--allowedTools mcp__memsearch`, and allowed with no flag once the folder is trusted."""
    root = tmp_path / "memory"
    shutil.copytree(EXAMPLES / "notes", root / "notes")
    (root / "MEMORY.md").write_text("# Memory\n\nNotes in notes/.\n")
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    with MessagesStub(PROMPT) as stub:
        env = _env(home, stub) | {"MEMSEARCH_AUTOSTART": "0"}  # what is allowed is tested, not recall
        install = subprocess.run([sys.executable, "-m", "memsearch", "claude-code", "install", str(root), "--project",
                                  str(project), "--yes"], capture_output=True, text=True, timeout=120, env=env, cwd=REPO)
        assert install.returncode == 0, install.stderr
        note = install.stderr.strip().splitlines()[-1]
        assert note.startswith(f"next, unless you have before: start `claude` in {project} and accept"), note
        assert "`--allowedTools mcp__memsearch`" in note

        def searched(*flags) -> tuple[str, str]:
            stub.requests.clear()
            done = subprocess.run([str(claude), "-p", PROMPT, *flags, "--output-format", "json"], cwd=project, env=env,
                                  capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
            assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
            return stub.tool_result(SEARCH_TOOL) or "", done.stderr

        denied, said = searched()
        assert "haven't granted it yet" in denied and "this workspace has not been trusted" in said, (denied, said)
        allowed, _ = searched("--allowedTools", "mcp__memsearch")
        assert '"hits"' in allowed, allowed
        config = home / ".claude.json"  # what accepting the dialog records
        data = json.loads(config.read_text())
        data.setdefault("projects", {}).setdefault(str(project), {})["hasTrustDialogAccepted"] = True
        config.write_text(json.dumps(data))
        trusted, said = searched()
        assert '"hits"' in trusted and "not been trusted" not in said, (trusted, said)
