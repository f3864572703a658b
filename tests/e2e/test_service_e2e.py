"""The daemon serving real clients, end to end: the real model, real daemon processes, real sockets.

One daemon (``memsearch watch --detach``) serves a copy of examples/memory for the module;
the CLI, ``memsearch.search()``, ``ToolBox`` and the MCP server get the same answers through it
as without it, and load no model of their own. The last test kills it with ``-9``.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from tests.conftest import EXAMPLES, REPO, stop_service

pytestmark = pytest.mark.slow

#: The default settings (autostart on), with a runtime folder of this module's own: a per-user service
#: started here is this module's, stopped at its end.
RUNTIME = Path(tempfile.mkdtemp(prefix="ms-e2e-"))
ENV = dict(os.environ, PYTHONPATH=str(REPO), HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false",
           XDG_RUNTIME_DIR=str(RUNTIME))
ENV.pop("MEMSEARCH_DB", None)
ENV.pop("MEMSEARCH_AUTOSTART", None)
QUERY = "when is the next milestone"


def cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "memsearch", *args], capture_output=True, text=True, timeout=timeout, env=ENV)


def typer_cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """The full typer CLI, bypassing the fast path of ``python -m memsearch``."""
    code = "import sys; from memsearch.cli.app import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=timeout, env=ENV)


def status(root: Path) -> dict:
    result = cli("status", str(root), "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def until(condition, timeout: float = 300, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.2)
    return value


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    root = tmp_path_factory.mktemp("service") / "memory"
    shutil.copytree(EXAMPLES, root, ignore=shutil.ignore_patterns(".memsearch"))
    started = cli("watch", str(root), "--detach")
    assert started.returncode == 0, started.stderr
    info = until(lambda: (s := status(root))["last_sync"] and s["serving"] and s, what="the daemon's catch-up")
    yield root, info
    cli("stop", str(root))
    if (pid := status(root)["pid"]):
        os.kill(pid, signal.SIGKILL)
    stop_service(RUNTIME)


def test_daemon_serves_on_an_owner_only_socket_and_detach_is_idempotent(daemon):
    root, info = daemon
    sock = Path(info["socket"])
    assert sock == root / ".memsearch" / "run" / "daemon.sock"
    assert stat.S_ISSOCK(os.stat(sock).st_mode) and stat.S_IMODE(os.stat(sock).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(sock.parent).st_mode) == 0o700
    again = cli("watch", str(root), "--detach")
    assert again.returncode == 0 and f"already keeps this index: pid {info['pid']}" in again.stdout, again.stderr
    assert status(root)["pid"] == info["pid"]  # no second daemon


def test_a_foreground_watch_of_a_served_root_is_refused_in_one_line_before_loading_anything(daemon):
    """``memsearch watch ROOT`` (foreground) of a root a daemon serves used to load the model first (seconds) and
    log ``INFO memsearch.service: ROOT: index open, ...`` to the terminal before its refusal."""
    root, info = daemon
    again = cli("watch", str(root))
    assert again.returncode == 2 and again.stdout == "", again.stderr
    assert again.stderr.startswith(f"error: a watch daemon (pid {info['pid']}) already keeps"), again.stderr
    assert len(again.stderr.splitlines()) == 1 and f"`memsearch stop {root}`" in again.stderr


@pytest.mark.parametrize("args", [
    ("search", "{root}", QUERY, "-k", "3"),
    ("search", "{root}", QUERY, "--json", "--mode", "keyword", "--scope", "projects"),
    ("read", "{root}", "projects/MEMORY.md", "--lines", "1:4"),
    ("ls", "{root}", "projects"),
    ("core", "{root}", "--json"),
    ("read", "{root}", "../outside.md"),
])
def test_cli_output_is_the_same_with_and_without_the_daemon(daemon, args):
    root, _ = daemon
    argv = [a.format(root=root) for a in args]
    fast, full, local = cli(*argv), typer_cli(*argv), cli(*argv, "--local")
    assert (fast.returncode, fast.stdout, fast.stderr) == (full.returncode, full.stdout, full.stderr)
    assert (fast.returncode, fast.stdout, fast.stderr) == (local.returncode, local.stdout, local.stderr)
    assert fast.stdout or fast.stderr


HARNESS = textwrap.dedent("""
    import json, sys
    import memsearch
    from memsearch.tools import ToolBox

    root, query = sys.argv[1], sys.argv[2]
    served = {"search": memsearch.search(query, root, k=5),
              "tool": ToolBox(root).dispatch("memory_search", {"query": query, "k": 4})}
    served["model_loaded"] = "torch" in sys.modules or "sentence_transformers" in sys.modules
    local = {"search": memsearch.search(query, root, k=5, local=True),
             "tool": ToolBox(root, daemon=False).dispatch("memory_search", {"query": query, "k": 4})}
    print(json.dumps({"served": served, "local": local}))
""")


def test_search_api_toolbox_and_mcp_get_the_daemons_answers_and_load_no_model(daemon):
    root, _ = daemon
    result = subprocess.run([sys.executable, "-c", HARNESS, str(root), QUERY], capture_output=True, text=True,
                            timeout=300, env=ENV)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["served"].pop("model_loaded") is False  # one model per root: the daemon's
    assert data["served"] == data["local"] and data["served"]["search"] and data["served"]["tool"]["hits"]

    params = StdioServerParameters(command=sys.executable, args=["-m", "memsearch", "serve", str(root)], env=ENV, cwd=str(REPO))

    async def session() -> dict:
        with anyio.fail_after(120):
            async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
                await client.initialize()
                found = await client.call_tool("memory_search", {"query": QUERY, "k": 4})
                return json.loads(found.content[0].text)

    assert anyio.run(session) == data["local"]["tool"]


def test_serve_watch_is_the_daemon_inside_the_mcp_server(tmp_path):
    root = tmp_path / "memory"
    shutil.copytree(EXAMPLES, root, ignore=shutil.ignore_patterns(".memsearch"))
    params = StdioServerParameters(command=sys.executable, args=["-m", "memsearch", "serve", str(root), "--watch"],
                                   env=ENV, cwd=str(REPO))

    async def session() -> tuple[dict, dict, dict]:
        with anyio.fail_after(300):
            async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
                await client.initialize()
                info = await anyio.to_thread.run_sync(lambda: until(lambda: (s := status(root))["serving"] and s["last_sync"] and s,
                                                                    what="the watcher's catch-up"))
                (root / "notes" / "2026-12-01.md").write_text("# 2026-12-01\n\nThe quokka census moved to Friday.\n")

                async def fresh():
                    found = json.loads((await client.call_tool("memory_search", {"query": "quokka census", "k": 2})).content[0].text)
                    return found if found["hits"] and found["hits"][0]["path"] == "notes/2026-12-01.md" else None

                with anyio.fail_after(120):
                    while not (found := await fresh()):
                        await anyio.sleep(0.2)
                shell = await anyio.to_thread.run_sync(lambda: cli("search", str(root), "quokka census", "-k", "2", "--json"))
                return info, found, json.loads(shell.stdout)

    info, found, shell = anyio.run(session)
    assert info["running"] and info["serving"]
    assert [(h["path"], h["start_line"]) for h in shell["hits"]] == [(h["path"], h["start_line"]) for h in found["hits"]]
    gone = until(lambda: (lambda s: s if not s["running"] else None)(status(root)), timeout=60,
                 what="the server to release the index")
    assert not gone["serving"] and gone["writer"] is None


def test_concurrent_searches_through_the_daemon_equal_serial_ones(daemon):
    """16 clients at once (their query encodes batched together) get exactly what one client gets alone."""
    import threading

    from benchmarks.perf.concurrency import QUERIES
    from memsearch.service.client import Client

    root, _ = daemon
    client = Client(root, timeout=60)
    calls = [dict(query=q, k=5, mode=mode) for q in QUERIES for mode in ("hybrid", "vector")]
    counted = client.call("status")
    serial = [client.call("search", **c)["hits"] for c in calls]
    assert all(serial)
    results: dict = {}

    def worker(n: int) -> None:
        mine = Client(root, timeout=60)
        for i in range(n, n + len(calls)):
            results[(n, i % len(calls))] = mine.call("search", **calls[i % len(calls)])["hits"]

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert len(results) == 16 * len(calls)
    for (_, i), hits in results.items():
        assert hits == serial[i], calls[i]
    # the daemon's counters (the concurrency benchmark's split of a search's CPU): every search and every
    # query encode counted, the encodes in fewer model calls than queries
    status = client.call("status")
    searches, encoder, before = status["searches"], status["query_encoder"], counted["query_encoder"]
    assert searches["count"] - counted["searches"]["count"] == 17 * len(calls)
    assert searches["cpu_s"] > counted["searches"]["cpu_s"]
    assert encoder["texts"] - before["texts"] == 17 * len(calls)
    assert encoder["batches"] - before["batches"] < encoder["texts"] - before["texts"]
    assert encoder["cpu_s"] > before["cpu_s"] and encoder["wall_s"] > before["wall_s"]


def test_after_kill_9_clients_work_in_process_at_once_and_a_new_daemon_serves(daemon):
    root, info = daemon
    before = cli("search", str(root), QUERY, "-k", "3")
    os.kill(info["pid"], signal.SIGKILL)
    until(lambda: not status(root)["running"], timeout=30, what="the killed daemon to be gone")
    assert Path(info["socket"]).exists()  # stale: nobody listens
    after = cli("search", str(root), QUERY, "-k", "3")
    assert (after.returncode, after.stdout) == (0, before.stdout)
    assert "warning" not in after.stderr  # absence is not news
    # with the default settings that call started the per-user service, which now serves the root
    served = until(lambda: (s := status(root))["serving"] and s["pid"] != info["pid"] and s, timeout=180,
                   what="the per-user service")
    assert served["socket"] == str(RUNTIME / "memsearch" / "service.sock")
    assert cli("search", str(root), QUERY, "-k", "3").stdout == before.stdout
    again = cli("watch", str(root), "--detach")  # idempotent: the service keeps this index
    assert again.returncode == 0 and f"already keeps this index: pid {served['pid']}" in again.stdout, again.stderr
    foreground = cli("watch", str(root))  # refused in one line, before any model loads (no log line)
    assert foreground.returncode == 2 and len(foreground.stderr.splitlines()) == 1, foreground.stderr
    assert foreground.stderr.startswith(f"error: the memsearch service (pid {served['pid']}) already keeps")
