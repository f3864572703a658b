"""A read replica says what it is: ``memsearch status`` on its machine names it, and a search before its writer's
first commit says that the index has no build yet.

Before: a replica (``serve ROOT --http --db URI --read-only``) holds no writer lock, so ``status`` never asked
its socket and said "served by: no memsearch process", while the replica answered the shell commands of that
machine on the socket status then named; and ``memory_search`` on a replica started before its writer ever wrote
said "no hits: try other words", so a model took an index not built yet for a memory holding nothing. A real
replica process on loopback (its own state directory, as on its own machine), real SeaweedFS, the real CLI.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import REPO
from tests.s3.test_remote_index import TREE
from tests.support.replicas import Cluster, Node
from tests.support.tenants import call, free_port

pytestmark = pytest.mark.slow


def _status(node, root, uri, *extra) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "memsearch", "status", str(root), "--db", uri, *extra], env=node.env,
                          cwd=REPO, capture_output=True, text=True, timeout=120)


def _replica(cluster: Cluster, root, uri, tmp_path) -> Node:
    port = free_port()  # --no-warm: it serves at once, before any writer built the index
    replica = Node("replica", ["serve", str(root), "--http", "--port", str(port), "--db", uri, "--read-only",
                               "--no-warm"], cluster.env, tmp_path, port).start()
    cluster.nodes.append(replica)
    cluster.wait_healthy([replica])
    return replica


def test_status_on_a_replica_s_machine_names_the_replica(s3, make_tree, tmp_path):
    root, uri = make_tree(TREE), s3.uri("replicated")
    cluster = Cluster(root, uri, s3.subprocess_env(MEMSEARCH_AUTOSTART="0"), tmp_path)
    try:
        replica = _replica(cluster, root, uri, tmp_path)
        done = _status(replica, root, uri)
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
        first = done.stdout.splitlines()[0]
        assert first.startswith(f"served by a read replica: running, pid {replica.pid}, no index yet"), done.stdout
        assert str(replica.socket()) in done.stdout, done.stdout
        info = json.loads(_status(replica, root, uri, "--json").stdout)
        assert (info["by"], info["pid"], info["serving"], info["replica"]["version"]) == ("replica", replica.pid, True, None)
        # stop names it too (it stops where it was started), and the index by its address, not this machine's state
        stopped = subprocess.run([sys.executable, "-m", "memsearch", "stop", str(root), "--db", uri], env=replica.env,
                                 cwd=REPO, capture_output=True, text=True, timeout=120)
        assert stopped.returncode == 0 and f"(index {uri})" in stopped.stdout, stopped.stdout
        assert f"a read replica (pid {replica.pid}) serves it here" in stopped.stdout and replica.alive, stopped.stdout
    finally:
        cluster.close()


def test_a_search_before_the_writer_s_first_commit_says_the_index_is_not_built(s3, make_tree, tmp_path):
    root, uri = make_tree(TREE), s3.uri("unbuilt")
    cluster = Cluster(root, uri, s3.subprocess_env(MEMSEARCH_AUTOSTART="0"), tmp_path)
    try:
        replica = _replica(cluster, root, uri, tmp_path)
        result = call(replica.url, "memory_search", {"query": "warehouse", "mode": "keyword"})
        assert result["hits"] == [] and result["note"].startswith("no hits yet: this memory's index has not been built"), result
        assert "memory_list" in result["note"] and "try other words" not in result["note"]
        done = subprocess.run([sys.executable, "-m", "memsearch", "search", str(root), "warehouse", "--db", uri,
                               "--mode", "keyword"], env=replica.env, cwd=REPO, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
        assert "no hits yet: the index of" in done.stdout and "has no build yet" in done.stdout, done.stdout
    finally:
        cluster.close()
