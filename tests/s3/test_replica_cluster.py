"""The whole of one writer, a standby and three read replicas of an ``s3://`` index, with real parts: SeaweedFS,
the real model, five ``memsearch`` processes on loopback (each its own state directory, as on its own
machine) and MCP clients searching every replica while files are written. The active writer is killed
(SIGKILL) in the middle of a sync, then a replica. Reported (``-s`` prints it, and the test keeps it in
``tmp_path/report.json``): searches served and failed per replica, the longest gap in service, commit-to-
visible p50/p95 on every replica; checked: no search failed on a surviving replica, the standby took over
and indexed the files written meanwhile, and the final index is what a fresh build gives (``memsearch check``).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from tests.conftest import REPO
from tests.s3.test_remote_index import TREE
from tests.support.replicas import Cluster, Searches, VersionWatch, percentile

QUERIES = ["what did we choose for the warehouse", "deploy broke the API", "zeppelin project", "daily notes",
           "fact about topic 3", "what starts in May"]


def _note(i: int) -> str:
    return f"# Live note {i}\n\nThe token livetok{i}x marks note {i}. Fact {i} about topic {i % 7}.\n"


def _until(predicate, timeout: float, what: str, nodes=()) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            logs = "\n".join(f"--- {n.name}\n{n.text()[-2000:]}" for n in nodes)
            raise AssertionError(f"timed out waiting for {what}\n{logs}")
        time.sleep(0.1)


@pytest.mark.slow
def test_replicas_keep_answering_through_a_writer_and_a_replica_killed(s3, make_tree, tmp_path):
    root = make_tree(TREE | {f"bulk/n{i}.md": f"# Note {i}\n\nFact {i} about topic {i % 7}.\n" for i in range(12)})
    uri = s3.uri("cluster")
    # small batches: the burst's sync is a dozen commits, so the kill lands among them
    env = s3.subprocess_env(MEMSEARCH_LOG_LEVEL="INFO", MEMSEARCH_FOLLOW_S="0.5", MEMSEARCH_DEBOUNCE_MS="200",
                            MEMSEARCH_BATCH_CHUNKS="16")
    cluster = Cluster(root, uri, env, tmp_path)
    try:
        first = cluster.writer("writer-a")
        _until(lambda: first.daemon_state().get("state") == "watching", 240, "the first writer's catch-up", [first])
        standby = cluster.writer("writer-b")
        replicas = [cluster.replica(f"replica-{i}") for i in range(1, 4)]
        cluster.wait_healthy(replicas)
        _until(lambda: "standing by" in standby.text(), 60, "the standby to wait", [standby])
        watch = VersionWatch(uri, replicas, env=env).start()
        watch.wait_ready()
        load = Searches(replicas, root, QUERIES, per_replica=2, transport="mcp").start()
        started = time.time()
        written = 0
        for _ in range(8):  # writes while all is well, one a second
            (root / "live").mkdir(exist_ok=True)
            (root / "live" / f"n{written}.md").write_text(_note(written))
            written += 1
            time.sleep(1.0)
        burst = [root / "burst" / f"b{i}.md" for i in range(30)]  # a sync long enough to be killed inside
        (root / "burst").mkdir()
        for i, path in enumerate(burst):
            path.write_text(_note(1000 + i) * 4)
        _until(lambda: first.daemon_state().get("state") == "syncing", 30, "the burst's sync", [first])
        time.sleep(0.5)
        first.kill9()
        killed_writer = time.time()
        for _ in range(4):  # written while no writer holds the lease: the standby must index them
            (root / "live" / f"n{written}.md").write_text(_note(written))
            written += 1
            time.sleep(0.5)
        _until(lambda: "took the writer lock" in standby.text(), 60, "the standby's take-over", [standby])
        took_over = time.time()
        for _ in range(6):
            (root / "live" / f"n{written}.md").write_text(_note(written))
            written += 1
            time.sleep(1.0)
        victim = replicas[2]
        victim.kill9()
        killed_replica = time.time()
        for _ in range(4):
            (root / "live" / f"n{written}.md").write_text(_note(written))
            written += 1
            time.sleep(1.0)
        survivors = replicas[:2]
        last = written - 1

        def everywhere() -> bool:
            return all(n.health() and _finds(root, n, f"livetok{last}x") for n in survivors)
        _until(everywhere, 120, "the last write on every surviving replica", [standby, *survivors])
        load.stop()
        ended = time.time()
        newest = max(watch.commits)  # every commit so far reaches every survivor before the watcher stops
        _until(lambda: all(watch.seen[n.name] and watch.seen[n.name][-1][1] >= newest for n in survivors), 60,
               "the survivors to serve the last commit", survivors)
        watch.stop()
        for i in range(written):  # every file written, before or after the kill, is searchable on the survivors
            assert all(_finds(root, n, f"livetok{i}x") for n in survivors), i
        _read_list_core(survivors[0], root)
        lags = watch.lags(started, ended)
        lags[victim.name] = watch.lags(started, killed_replica - 2.0)[victim.name]
        summary = load.summary({n.name for n in survivors}, until={victim.name: killed_replica})
        report = {
            "searches": summary,
            "commit_to_visible_s": {name: _lag_summary(v) for name, v in lags.items()},
            "takeover_s": round(took_over - killed_writer, 2), "seconds": round(ended - started, 1),
            "files_written": written + len(burst), "commits": len(watch.commits),
            "commit_polls": watch.polls, "commit_poll_errors": watch.errors[:3],
        }
        (tmp_path / "report.json").write_text(json.dumps(report, indent=2))
        print(json.dumps(report, indent=2))
        for node in survivors:
            assert summary["replicas"][node.name]["failed"] == 0, summary
            assert summary["replicas"][node.name]["served"] > 0
            assert report["commit_to_visible_s"][node.name]["versions"] and not report["commit_to_visible_s"][
                node.name]["never_seen"], report
        assert "writer no longer holds" not in standby.text()
        for node in cluster.nodes:
            if node.alive and node is not standby:
                node.stop()
        standby.stop()
        check = subprocess.run([sys.executable, "-m", "memsearch", "check", str(root), "--db", uri, "--json"],
                               capture_output=True, text=True, cwd=REPO, env=env, timeout=300)
        result = json.loads(check.stdout)
        assert check.returncode == 0 and result["ok"] and not result["stale"], check.stdout + check.stderr
        assert result["files"] == len(list(root.rglob("*.md"))) - 1  # every file but the root's MEMORY.md (core)
    finally:
        cluster.close()


def _finds(root, node, token: str) -> bool:
    from memsearch.service.client import Client

    sock = node.socket()
    if sock is None:
        return False
    try:
        hits = Client(root, path=sock, timeout=10).call("search", query=token, k=1, mode="keyword")["hits"]
    except Exception:  # noqa: BLE001 - not up yet
        return False
    return bool(hits) and token in hits[0]["text"]


def _round(x):
    return None if x is None else round(x, 3)


def _lag_summary(lags: list) -> dict:
    seen = [x for x in lags if x is not None]
    return {"versions": len(seen), "never_seen": len(lags) - len(seen), "p50": _round(percentile(seen, 0.5)),
            "p95": _round(percentile(seen, 0.95)), "max": _round(max(seen, default=None))}


def _read_list_core(node, root) -> None:
    """The other tools on a replica, over MCP HTTP and the daemon protocol: files come from its view of the tree."""
    from memsearch.service.client import Client
    from tests.support.tenants import call

    read = call(node.url, "memory_read", {"path": "live/n0.md"})
    assert "livetok0x" in read["text"], read
    listing = call(node.url, "memory_list", {"path": "live"})
    assert any(f["path"] == "live/n0.md" for f in listing["files"]), listing
    core = call(node.url, "memory_core", {})
    assert [f["path"] for f in core["files"]] == ["MEMORY.md"], core
    answer = Client(root, path=node.socket(), timeout=10).call("read", path="projects/atlas.md", lines=None)
    assert "ClickHouse" in answer["text"]
