"""Writes racing a daemon's sync: in-process watcher (fast, HashEmbedder) and a real ``memsearch watch``
process with the real model; the MCP server with ``--writable``; the Claude memory-tool example."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import threading
import time

import anyio
import pytest

from memsearch.engine.index import MemoryIndex
from memsearch.engine.storage.lock import lock_holder
from memsearch.service.daemon import read_state
from memsearch.tools import ToolBox
from tests.conftest import REPO
from tests.harness.test_writes import BASE, rows
from tests.service.test_watcher import Running, hash_index

WAIT = 180.0


def race(box: ToolBox, names: str, n: int) -> list[dict]:
    """Writers in threads, each creating then editing its own notes and appending to a shared log."""
    results: list[dict] = []

    def writer(name: str) -> None:
        for i in range(n):
            for call in ({"command": "create", "path": f"/memories/race/{name}{i}.md", "file_text": f"# {name} {i}\n\nword{name}{i}\n"},
                         {"command": "str_replace", "path": f"/memories/race/{name}{i}.md", "old_str": f"word{name}{i}",
                          "new_str": f"edited{name}{i}"},
                         {"command": "insert", "path": "/memories/notes/atlas.md", "insert_line": 1, "insert_text": f"log {name}{i}"}):
                result = box.dispatch("memory", call)
                results.append(result)
                assert "error" not in result, result

    threads = [threading.Thread(target=writer, args=(name,)) for name in names]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


@pytest.mark.slow
@pytest.mark.parametrize("listen,via", [(True, "daemon"), (False, "daemon-events")])
def test_writes_racing_an_in_process_daemon_are_searchable_on_return(make_tree, tmp_path, listen, via):
    """Serving, the daemon syncs each write when asked on its socket; not serving, its file events do."""
    from contextlib import contextmanager

    from memsearch.service.host import WatchThread

    @contextmanager
    def serving(root, index):  # a daemon of the root in this process: watcher and socket server
        daemon = WatchThread(root, index=index).start()
        try:
            yield daemon
        finally:
            daemon.close()

    root = make_tree(BASE)
    with (serving if listen else Running)(root, hash_index(root)):
        box = ToolBox(root, index=hash_index(root), writable=True, sync=False)
        results = race(box, "pq", 4)
        assert all(r["index"]["synced"] and r["index"]["via"] == via for r in results), results
        hits = box.call("memory_search", {"query": "editedq3", "mode": "keyword"})["hits"]
        assert [h["path"] for h in hits] == ["race/q3.md"]
    assert sorted((root / "notes/atlas.md").read_text().splitlines()[1:-2]) == sorted(f"log {n}{i}" for n in "pq" for i in range(4))
    clean = tmp_path / "clean"
    hash_index(root, db=clean).sync()
    assert rows(root / ".memsearch") == rows(clean)


@pytest.mark.slow
def test_a_daemon_that_never_syncs_makes_the_write_say_so(make_tree):
    root = make_tree(BASE)
    index = hash_index(root)
    index.sync()
    index.lock.purpose = "watch"
    with index.lock:  # a "daemon" holding the index but not watching
        from memsearch.harness.edit import IndexSync, open_editor

        editor = open_editor(root, index=hash_index(root), timeout=0.3)
        assert isinstance(editor.on_change, IndexSync)
        result = editor.run("create", path="notes/late.md", file_text="# Late\n")
    assert result.index["synced"] is False and result.index["via"] == "daemon-events" and "memsearch status" in result.index["note"]
    assert (root / "notes/late.md").exists()  # the write stands


# --- with the real model ------------------------------------------------------------------------
def cli(*args: str, timeout: float = WAIT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "memsearch", *args], capture_output=True, text=True, timeout=timeout)


@pytest.mark.slow
def test_writes_racing_a_real_memsearch_watch(make_tree, tmp_path, real_embedder):
    root = make_tree(BASE)
    db = root / ".memsearch"
    started = cli("watch", str(root), "--detach", "--debounce", "100")
    assert started.returncode == 0, started.stderr
    try:
        deadline = time.monotonic() + WAIT
        while not (read_state(db) or {}).get("syncs"):
            assert time.monotonic() < deadline, "the daemon did not catch up"
            time.sleep(0.2)
        assert (lock_holder(db) or {}).get("purpose") == "watch"
        box = ToolBox(root, index=MemoryIndex(root, embedder=real_embedder), writable=True, sync=False)
        results = race(box, "pq", 2)
        assert all(r["index"]["synced"] and r["index"]["via"] == "daemon" for r in results), results
        hits = box.call("memory_search", {"query": "editedp1", "mode": "keyword"})["hits"]
        assert hits and hits[0]["path"] == "race/p1.md"
    finally:
        stopped = cli("stop", str(root))
    assert stopped.returncode == 0, stopped.stderr
    clean = tmp_path / "clean"
    MemoryIndex(root, db=clean, embedder=real_embedder).sync()
    assert rows(db) == rows(clean)


@pytest.mark.slow
def test_the_claude_memory_tool_example_with_the_real_model(examples_copy, real_embedder):
    spec = importlib.util.spec_from_file_location("claude_memory_tool", REPO / "examples" / "claude_memory_tool.py")
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    box = ToolBox(examples_copy, index=MemoryIndex(examples_copy, embedder=real_embedder), writable=True)
    lines: list[str] = []
    out = example.run(examples_copy, toolbox=box, out=lines.append)
    errors = [r for r in out["results"] if r.get("is_error")]
    assert [r["tool_use_id"] for r in errors] == ["toolu_06", "toolu_07"]
    assert "needs its MEMORY.md" in errors[0]["content"] and "outside the memory" in errors[1]["content"]
    # The call note is the first content hit; only the MEMORY.md stubs of its own folders may rank
    # above it (their few words repeat "acme": BM25 over all rows, the in-memory default, rates them high).
    paths = [h["path"] for h in out["hits"]]
    assert "customers/acme/calls/2026-11-20.md" in paths, paths
    first = paths.index("customers/acme/calls/2026-11-20.md")
    assert set(paths[:first]) <= {"customers/acme/MEMORY.md", "customers/acme/calls/MEMORY.md", "customers/MEMORY.md"}, paths
    assert "SAML" in out["hits"][first]["snippet"]
    assert out["results"][0]["content"].startswith("Here're the files and directories up to 2 levels deep in /memories")
    from memsearch.memory.validator import validate

    assert validate(examples_copy).valid


@pytest.mark.slow
def test_mcp_serve_writable_writes_and_searches(examples_copy, tmp_path):
    from mcp import ClientSession, StdioServerParameters, stdio_client

    from tests.harness.test_mcp import ENV, payload

    params = StdioServerParameters(command=sys.executable, args=["-m", "memsearch", "serve", str(examples_copy), "--writable",
                                                                 "--db", str(tmp_path / "index")], env=ENV, cwd=str(REPO))

    async def session() -> None:
        with anyio.fail_after(WAIT):
            async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
                await client.initialize()
                tools = {t.name: t for t in (await client.list_tools()).tools}
                assert tools["memory"].annotations.read_only_hint is False and tools["memory"].annotations.destructive_hint
                assert tools["memory_search"].annotations.read_only_hint is True
                made = payload(await client.call_tool("memory", {"command": "create", "path": "/memories/notes/oslo.md",
                                                                 "file_text": "# Oslo\n\nThe ferry to Nesodden leaves hourly.\n"}))
                # synced, or "busy": the server's start-up sync (model load included) still ran when the write's
                # wait was over (a loaded machine); either way the next search, which syncs first, finds it
                assert made["index"]["synced"] or made["index"]["via"] == "busy", made
                refused = payload(await client.call_tool("memory", {"command": "delete", "path": "/memories"}))
                assert refused["error"]["type"] == "EditRefused"
                hits = payload(await client.call_tool("memory_search", {"query": "ferry Nesodden", "k": 1}))["hits"]
                assert hits[0]["path"] == "notes/oslo.md"

    anyio.run(session)
    assert (examples_copy / "notes/oslo.md").exists()
    assert json.loads(cli("validate", str(examples_copy), "--json").stdout)["valid"]


PARAMS = {"rebuild": False, "model": None, "include_core": None, "check": False, "wait": 0.0}


def test_an_index_meeting_the_lock_of_a_server_that_took_the_root_meanwhile_is_done_by_that_server(make_tree):
    """The service loads a root (its model first, then the writer lock) while ``memsearch index`` opens it in-process:
    the in-process write meets the server's lock, and the server does the write after all (it said "being written by
    process N" before). Another writer's lock is still the refusal."""
    from memsearch.engine.storage.lock import WriterLock
    from memsearch.errors import IndexLocked
    from memsearch.location import IndexLocation
    from memsearch.service import route
    from memsearch.service.host import WatchThread

    root = make_tree(BASE)
    where = IndexLocation.of(root)
    (root / "notes" / "late.md").write_text("# Late\n\nwombatsnorkel\n")
    daemons = []

    def here():  # the server takes the index between route.write's look and this process's lock
        daemons.append(WatchThread(root, index=hash_index(root)).start())
        return hash_index(root).sync(wait=0.0)

    try:
        data, done = route.carried_out(where, "index", PARAMS, here)
        assert done is None and data["chunks_total"] > 0 and data["root"] == str(root), data
        assert lock_holder(where.state)["purpose"] == "watch"
        hits = ToolBox(root, index=hash_index(root), sync=False).call("memory_search",
                                                                       {"query": "wombatsnorkel", "mode": "keyword"})
        assert [h["path"] for h in hits["hits"]] == ["notes/late.md"]
    finally:
        for daemon in daemons:
            daemon.close()

    lock = WriterLock(where.state, purpose="index").acquire(timeout=0)  # not a memsearch server: the refusal
    try:
        with pytest.raises(IndexLocked, match="being written by process"):
            route.carried_out(where, "index", PARAMS, lambda: hash_index(root).sync(wait=0.0))
    finally:
        lock.release()
