"""``memsearch status ROOT --db s3://...`` on a read replica's machine names the replica serving the root there.

Before: a replica (``serve ROOT --http --db URI --read-only``) holds no writer lock, so ``status`` never asked
its socket and said "served by: no memsearch process", while the replica answered the shell commands of that
machine on the socket status then named. A real replica process on loopback (its own state directory, as on
its own machine), real SeaweedFS, the real CLI.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import REPO
from tests.s3.test_remote_index import TREE
from tests.support.replicas import Cluster, Node
from tests.support.tenants import free_port

pytestmark = pytest.mark.slow


def _status(node, root, uri, *extra) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "memsearch", "status", str(root), "--db", uri, *extra], env=node.env,
                          cwd=REPO, capture_output=True, text=True, timeout=120)


def test_status_on_a_replica_s_machine_names_the_replica(s3, make_tree, tmp_path):
    root, uri = make_tree(TREE), s3.uri("replicated")
    cluster = Cluster(root, uri, s3.subprocess_env(MEMSEARCH_AUTOSTART="0"), tmp_path)
    try:
        port = free_port()  # --no-warm: no model, it serves before any writer built the index
        replica = Node("replica", ["serve", str(root), "--http", "--port", str(port), "--db", uri, "--read-only",
                                   "--no-warm"], cluster.env, tmp_path, port).start()
        cluster.nodes.append(replica)
        cluster.wait_healthy([replica])
        done = _status(replica, root, uri)
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
        first = done.stdout.splitlines()[0]
        assert first.startswith(f"served by a read replica: running, pid {replica.pid}, no index yet"), done.stdout
        assert str(replica.socket()) in done.stdout, done.stdout
        info = json.loads(_status(replica, root, uri, "--json").stdout)
        assert (info["by"], info["pid"], info["serving"], info["replica"]["version"]) == ("replica", replica.pid, True, None)
    finally:
        cluster.close()
