"""`memsearch status` of a root the service is still loading says what it waits for (issue: "waiting, model
None"): here the writer lock, held by another process, named with its pid; in both forms, end to end with the
real service and a real lock holder."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from memsearch.location import IndexLocation
from tests.conftest import REPO
from tests.e2e.test_one_service import memsearch, service, tree, until

pytestmark = pytest.mark.slow


def _root(status: dict, root: str) -> dict | None:
    return next((r for r in status.get("roots", []) if r["root"] == root), None)


def test_status_of_a_root_waiting_for_the_writer_lock_names_its_holder(tmp_path):
    root = os.path.realpath(tree(tmp_path, "mem", "The otter named Pip lives by the river."))
    memsearch("index", root)  # no service yet: built in-process
    other = tree(tmp_path, "other", "Nothing here.")
    until(lambda: memsearch("search", other, "nothing", "-k", "1") and service().get("running") is not False
          and service().get("roots"))  # the service runs (a client never starts one while a writer holds the index)
    holder = subprocess.Popen([sys.executable, "-c", "import sys\nfrom memsearch.engine.storage.lock import WriterLock\n"
                               "lock = WriterLock(sys.argv[1], 'index'); lock.acquire(); print('held', flush=True)\n"
                               "sys.stdin.readline()", str(IndexLocation.of(root).state)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                              env=dict(os.environ, PYTHONPATH=str(REPO)))
    try:
        assert holder.stdout.readline().strip() == "held"

        def waiting():
            memsearch("search", root, "otter", "-k", "1")
            mine = _root(service(), root)
            return mine if mine is not None and mine["phase"] == "waiting" else None

        mine = until(waiting, timeout=120)
        assert f"process {holder.pid}" in mine["waiting_for"] and mine["model"] == "all-MiniLM-L6-v2"
        text = memsearch("status").stdout
        line = next(line for line in text.splitlines() if line.strip().startswith(root + ":"))
        assert "None" not in line and f"waits for the writer lock of its index, held by process {holder.pid}" in line
        assert "model all-MiniLM-L6-v2" in line
    finally:
        holder.stdin.write("\n")
        holder.stdin.flush()
        holder.wait(30)

    def ready():
        mine = _root(service(), root)
        return mine if mine is not None and mine["phase"] == "ready" else None

    mine = until(ready, timeout=120)  # the lock released: it loads, and waits for nothing
    assert mine["waiting_for"] is None and _root(json.loads(memsearch("status", "--json").stdout), root)["waiting_for"] is None
    assert "waits for" not in memsearch("status").stdout
