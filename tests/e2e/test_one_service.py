"""One memsearch service per user (issue 28 items 1 and 3), end to end with the default settings: real processes,
the real model, real sockets. Several roots searched from the shell are served by one process, which carries out
`index` (`--rebuild`, `--check`) and `check --repair` itself; `stop ROOT` unloads one root, `stop --all` the service."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from memsearch.location import IndexLocation
from memsearch.service.process import verified_holder
from tests.conftest import REPO, build

pytestmark = pytest.mark.slow


def tree(base, name: str, fact: str) -> str:
    return str(build(base / name, {
        "MEMORY.md": f"# {name}\n\nCore memory of {name}.\n",
        "notes/MEMORY.md": "# Notes\n\nDated notes.\n",
        "notes/a.md": f"# A\n\n{fact}\n",
        "notes/b.md": "# B\n\nThe weekly sync is on Tuesdays.\n",
    }))


def memsearch(*argv: str, code: int = 0) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO), HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    env.pop("MEMSEARCH_AUTOSTART", None)
    done = subprocess.run([sys.executable, "-m", "memsearch", *argv], capture_output=True, text=True, env=env,
                          timeout=600)
    assert done.returncode == code, (argv, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    return done


def service() -> dict | None:
    return json.loads(memsearch("status", "--json").stdout)


def until(condition, timeout: float = 300.0):
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.3)
    return value


def test_one_service_serves_every_root_and_carries_out_their_writes(tmp_path):
    roots = [tree(tmp_path, f"mem{i}", f"The otter named Pip{i} lives by the river.") for i in range(3)]
    memsearch("search", roots[0], "otter", "-k", "1")  # starts the service, answered in-process

    def all_loaded():
        for root in roots:
            memsearch("search", root, "otter", "-k", "1")
        status = service()
        return status if len(status.get("roots", [])) == 3 and all(r["chunks"] for r in status["roots"]) else None

    status = until(all_loaded)
    pid = status["pid"]
    assert sorted(r["root"] for r in status["roots"]) == sorted(str(os.path.realpath(r)) for r in roots)
    assert all(verified_holder(IndexLocation.of(r))["pid"] == pid for r in roots)  # one process holds them all
    assert status["socket"].endswith("/memsearch/service.sock")
    text = memsearch("status").stdout
    assert f"pid {pid}" in text and all(f"{os.path.realpath(r)}: 3 files" in text for r in roots)
    one = json.loads(memsearch("status", roots[1], "--json").stdout)  # a root's status names the service's log
    assert one["running"] and one["pid"] == pid and one["log"] == os.path.join(os.path.dirname(status["socket"]), "service.log")
    assert one["by"] == "service" and f"served by the memsearch service: running, pid {pid}" in memsearch("status", roots[1]).stdout

    # writes while the service holds the index: carried out by it, same report and exit status as in-process
    with open(os.path.join(roots[0], "notes", "c.md"), "w") as f:
        f.write("# C\n\nThe heron nests in the old mill.\n")
    done = json.loads(memsearch("index", roots[0], "--json").stdout)
    assert done["files_added"] + done["files_unchanged"] == 4 and done["db"] == str(IndexLocation.of(roots[0]).state)
    rebuilt = memsearch("index", roots[0], "--rebuild").stdout
    assert "files: 4 added" in rebuilt and "being written" not in rebuilt
    checked = memsearch("index", roots[0], "--check")
    assert "ok" in checked.stdout
    assert "ok" in memsearch("check", roots[0], "--repair").stdout
    assert verified_holder(IndexLocation.of(roots[0]))["pid"] == pid  # still the service's
    hits = json.loads(memsearch("search", roots[0], "where does the heron nest", "-k", "1", "--json").stdout)["hits"]
    assert hits[0]["path"] == "notes/c.md"

    # a writer that is no memsearch server still gets the clear refusal (and --wait waits for it)
    lone = tree(tmp_path, "lone", "Nothing here.")
    holder = subprocess.Popen([sys.executable, "-c", "import sys\nfrom memsearch.engine.storage.lock import WriterLock\n"
                               "lock = WriterLock(sys.argv[1], 'index'); lock.acquire(); print('held', flush=True)\n"
                               "sys.stdin.readline()", str(IndexLocation.of(lone).ensure_state())],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                              env=dict(os.environ, PYTHONPATH=str(REPO)))
    try:
        assert holder.stdout.readline().strip() == "held"
        refused = memsearch("index", lone, code=2)
        assert f"process {holder.pid}" in refused.stderr and "--wait" in refused.stderr
    finally:
        holder.stdin.write("\n")
        holder.stdin.flush()
        holder.wait(30)

    # stop ROOT unloads one root (its lock released); stop --all stops the service
    assert "no longer serves" in memsearch("stop", roots[0]).stdout
    assert verified_holder(IndexLocation.of(roots[0])) is None
    assert len(service()["roots"]) == 2
    assert f"pid {pid}" in memsearch("stop", "--all").stdout
    assert service() == {"running": False, "socket": status["socket"], "roots": []}
    assert all(verified_holder(IndexLocation.of(r)) is None for r in roots)
