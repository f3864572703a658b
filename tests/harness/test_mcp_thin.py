"""``memsearch serve`` as a thin client of the daemon, seen by a real MCP client (the ``mcp`` SDK over stdio), and
the memory tool's writes from other processes (``memsearch edit``, :func:`memsearch.edit`) carried out by the daemon.

With autostart on (the default), the server starts the root's daemon and forwards every call to it: the same
results, errors, ``outputSchema`` and ``structuredContent`` as the in-process server (autostart off), and the
server process maps no LanceDB, pyarrow, torch, ONNX Runtime or tiktoken library.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from memsearch.tools import MEMORY_TOOL, TOOLS
from tests.conftest import EXAMPLES, REPO

BASE = {"HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"} | {
    k: v for k, v in os.environ.items() if k.startswith(("TIKTOKEN_", "HF_")) or k in ("PATH", "HOME")}
IN_PROCESS = BASE | {"MEMSEARCH_AUTOSTART": "0"}
THIN = BASE | {"MEMSEARCH_AUTOSTART": "1", "MEMSEARCH_IDLE_EXIT": "300"}
HEAVY = ("lancedb", "pyarrow", "libtorch", "_tiktoken", "onnxruntime")


def with_runtime(env: dict) -> dict:
    """``env`` and this test's own ``$XDG_RUNTIME_DIR`` (tests.conftest.private_service): without it a server would use
    the shared /tmp/memsearch-UID, where another test's service may run and embed the in-process server's first
    build, whose first answer is then partial."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    return env | {"XDG_RUNTIME_DIR": runtime} if runtime else env

CALLS = [
    ("memory_search", {"query": "materialized view that keeps the newest grid value", "k": 3}),
    ("memory_search", {"query": "Atlas", "mode": "keyword", "k": 2}),
    ("memory_search", {"query": "x", "scope": "nowhere"}),
    ("memory_search", {"query": "x", "k": "many"}),
    ("memory_read", {"path": "projects/atlas/MEMORY.md", "start_line": 1, "end_line": 4}),
    ("memory_read", {"path": "../../etc/passwd"}),
    ("memory_list", {"path": "projects"}),
    ("memory_core", {}),
    ("memory_write", {"path": "MEMORY.md"}),
]


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    base = tmp_path_factory.mktemp("thin")
    root = base / "memory"
    shutil.copytree(EXAMPLES, root, ignore=shutil.ignore_patterns(".memsearch"))
    yield root, base / "index"
    subprocess.run([sys.executable, "-m", "memsearch", "stop", str(root), "--db", str(base / "index")],
                   env=with_runtime(THIN), cwd=str(REPO), capture_output=True, timeout=120)


def payload(result) -> dict:
    data = json.loads(result.content[0].text)
    assert result.structured_content == data and result.is_error == ("error" in data)
    return data


def serve_pids(root: Path) -> list[int]:
    """The ``memsearch serve ROOT`` processes (from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            args = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"serve" in args and str(root).encode() in args:
            found.append(int(entry.name))
    return found


def mapped(pid: int) -> set[str]:
    text = Path(f"/proc/{pid}/maps").read_text()
    return {lib for lib in HEAVY if lib in text}


def session(root, db, env, *, writable=False, script=None, timeout: float = 180):
    """Run one stdio MCP session (``db`` None: the root's own index); returns what ``script(client)`` returns."""
    args = (["-m", "memsearch", "serve", str(root)] + (["--db", str(db)] if db is not None else [])
            + (["--writable"] if writable else []))
    params = StdioServerParameters(command=sys.executable, args=args, env=with_runtime(env), cwd=str(REPO))

    async def run():
        with anyio.fail_after(timeout):
            async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
                await client.initialize()
                return await script(client)

    return anyio.run(run)


async def answers(client) -> dict:
    tools = {t.name: t for t in (await client.list_tools()).tools}
    shown = {name: (t.input_schema, t.output_schema, t.annotations.read_only_hint) for name, t in tools.items()}
    results = [payload(await client.call_tool(name, arguments)) for name, arguments in CALLS]
    resources = sorted((r.uri, r.title, r.size) for r in (await client.list_resources()).resources)
    core = (await client.read_resource("memory://core")).contents[0].text
    return {"tools": shown, "results": results, "resources": resources, "core": core}


async def first_hits(client, query="materialized view that keeps the newest grid value") -> dict:
    """The first search of a session: hits, or the service's "starting" answer, then hits once it listens."""
    started = time.monotonic()
    while True:
        found = payload(await client.call_tool("memory_search", {"query": query, "k": 3}))
        if "error" not in found:
            return found
        assert found["error"]["type"] == "IndexBuilding" and "memory_list and memory_read work now" in \
            found["error"]["message"], found
        assert time.monotonic() - started < 120


@pytest.mark.slow
def test_the_thin_server_answers_as_the_in_process_one_without_loading_the_engine(tree):
    root, db = tree
    here = session(root, db, IN_PROCESS, script=answers)  # builds the index in-process, no daemon
    assert here["results"][0]["hits"][0]["path"] == "projects/atlas/schema.md"

    async def thin_script(client):
        await first_hits(client)  # the daemon this server started is up
        got = await answers(client)
        got["pids"] = serve_pids(root)
        got["mapped"] = {pid: mapped(pid) for pid in got["pids"]}
        return got

    thin = session(root, db, THIN, script=thin_script)
    assert thin["tools"] == here["tools"]
    assert {name for name in thin["tools"]} == {t.name for t in TOOLS}
    for spec in TOOLS:
        assert thin["tools"][spec.name][1] == spec.output_schema()
    assert thin["results"] == here["results"] and thin["resources"] == here["resources"] and thin["core"] == here["core"]
    assert [r["error"]["type"] for r in thin["results"] if "error" in r] == [
        "MemoryFileNotFound", "InvalidArgument", "PathOutsideRoot", "UnknownTool"]
    assert len(thin["pids"]) == 1 and thin["mapped"] == {thin["pids"][0]: set()}, thin["mapped"]
    status = subprocess.run([sys.executable, "-m", "memsearch", "status", str(root), "--db", str(db), "--json"],
                            env=with_runtime(THIN), cwd=str(REPO), capture_output=True, text=True, timeout=60)
    assert json.loads(status.stdout)["serving"] is True, status.stdout


@pytest.mark.slow
def test_the_thin_servers_memory_tool_writes_through_the_daemon(tree):
    root, db = tree

    async def script(client):
        await first_hits(client)
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert tools["memory"].output_schema == MEMORY_TOOL.output_schema()
        call = {"command": "create", "path": "/memories/notes/otter.md",
                "file_text": "# Otter census\n\nThe otter census moved to the third Tuesday of May.\n"}
        created = payload(await client.call_tool("memory", call))
        again = payload(await client.call_tool("memory", call))
        found = payload(await client.call_tool("memory_search", {"query": "when is the otter census", "k": 1}))
        return created, again, found, {pid: mapped(pid) for pid in serve_pids(root)}

    created, again, found, maps = session(root, db, THIN, writable=True, script=script)
    assert created["changed"] == ["notes/otter.md"] and created["index"]["via"] == "daemon"
    assert created["index"]["synced"] is True and created["index"]["chunks_embedded"] >= 1
    assert again["error"]["type"] == "MemoryFileExists" and "str_replace" in again["error"]["message"]
    assert found["hits"][0]["path"] == "notes/otter.md"
    assert maps and all(not libs for libs in maps.values()), maps


@pytest.mark.slow
def test_memsearch_edit_and_the_library_write_through_the_daemon(tree):
    root, db = tree
    run = [sys.executable, "-m", "memsearch", "edit", str(root), "--db", str(db)]
    assert subprocess.run([sys.executable, "-m", "memsearch", "watch", str(root), "--db", str(db), "--detach"],
                          env=with_runtime(THIN), cwd=str(REPO), capture_output=True, timeout=180).returncode == 0
    made = subprocess.run(run + ["create", "/memories/people/ann.md", "--text", "# Ann\n\nAnn restores canoes.\n",
                                 "--json"], env=with_runtime(THIN), cwd=str(REPO), capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stderr
    result = json.loads(made.stdout)
    assert result["changed"] == ["people/ann.md"] and result["index"]["via"] == "daemon", result
    assert "being written" not in made.stderr
    twice = subprocess.run(run + ["create", "/memories/people/ann.md", "--text", "# Ann\n"], env=with_runtime(THIN), cwd=str(REPO),
                           capture_output=True, text=True, timeout=120)
    assert twice.returncode == 2 and twice.stderr.startswith("error: /memories/people/ann.md already exists")
    assert "str_replace" in twice.stderr and "Traceback" not in twice.stderr
    code = ("import sys, memsearch; r = memsearch.edit(sys.argv[1], 'str_replace', db=sys.argv[2], "
            "path='/memories/people/ann.md', old_str='canoes', new_str='kayaks'); "
            "print(r.index['via'], r.changed, [m for m in ('lancedb', 'torch', 'tiktoken') if m in sys.modules])")
    lib = subprocess.run([sys.executable, "-c", code, str(root), str(db)], env=with_runtime(THIN), cwd=str(REPO),
                         capture_output=True, text=True, timeout=120)
    assert lib.returncode == 0 and lib.stdout.split() == ["daemon", "('people/ann.md',)", "[]"], lib.stderr + lib.stdout
    hit = subprocess.run([sys.executable, "-m", "memsearch", "search", str(root), "who restores kayaks", "--db",
                          str(db), "--json", "-k", "1"], env=with_runtime(THIN), cwd=str(REPO), capture_output=True, text=True,
                         timeout=120)
    assert json.loads(hit.stdout)["hits"][0]["path"] == "people/ann.md"


@pytest.mark.slow
def test_a_stopped_service_is_given_up_after_a_probe_not_waited_for_each_call(make_tree, autostart):
    """The service stopped with ``kill -STOP`` (or hung): each forwarded call used to wait SERVED_TIMEOUT_S (30 s)
    before answering in-process, so every memory tool call of every session took 30 s. The server now asks the
    service for its status beside the call after the client timeout, and gives a service that answers neither up."""
    import signal

    from memsearch.service import process

    root = make_tree({"MEMORY.md": "# Memory\n\nAda keeps the harbor notes.\n", "notes/MEMORY.md": "# Notes\n\nNotes.\n",
                      "notes/a.md": "# A\n\nThe harbor outage.\n"})
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    done = subprocess.run([sys.executable, "-m", "memsearch", "search", str(root), "harbor"], capture_output=True,
                          text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    deadline = time.monotonic() + 120
    while not (status := process.daemon_status(root)).get("serving"):
        assert time.monotonic() < deadline, status
        time.sleep(0.2)
    os.kill(status["pid"], signal.SIGSTOP)
    try:
        server = subprocess.Popen([sys.executable, "-m", "memsearch", "serve", str(root)], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=str(REPO))
        requests = [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
                    {"jsonrpc": "2.0", "method": "notifications/initialized"},
                    {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                     "params": {"name": "memory_read", "arguments": {"path": "MEMORY.md"}}}]
        out, err = server.communicate("".join(json.dumps(r) + "\n" for r in requests), timeout=300)
    finally:
        os.kill(status["pid"], signal.SIGCONT)
    replies = {r["id"]: r for r in map(json.loads, out.splitlines())}
    assert "Ada keeps the harbor notes." in replies[2]["result"]["structuredContent"]["text"], replies
    assert "nor a status request beside it within 3 s (stopped or hung); answering in-process" in err, err
    assert "within 30 s" not in err, err
