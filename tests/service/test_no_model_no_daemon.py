"""Commands that need no model start no process (issue 28 item 2): ``validate``, ``ls``, ``core``, ``read`` and
``status`` answer in-process from the files with no daemon running, and leave nothing behind that would refuse
the ``index`` after them (``make run``: ``validate``, ``ls``, ``index``, ``search``). Only a search auto-starts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from memsearch.location import IndexLocation, service_log_file, service_start_file
from memsearch.service import autostart, route
from memsearch.service.process import daemon_status, stop, verified_holder
from tests.conftest import REPO


def test_read_ls_and_core_never_ask_to_start_a_daemon_and_a_search_does(examples_copy, monkeypatch):
    started: list[str] = []
    monkeypatch.setattr(autostart, "ensure", lambda where, **kw: started.append(kw.get("enabled")))
    monkeypatch.setenv("MEMSEARCH_AUTOSTART", "1")
    where = IndexLocation.of(examples_copy)
    assert route.ls(where)["dirs"] and route.core(where)["files"]
    assert "Atlas" in route.read(where, "projects/atlas.md", "1:5")["text"]
    assert route.ls(where, fallback=False) is None and route.core(where, fallback=False) is None  # no daemon
    assert started == []
    assert route.search(where, {"query": "atlas"}, using=None) is None  # the fast path's search with no daemon
    assert started == [None]  # the autostart setting decides
    route.search(where, {"query": "atlas"}, using=None, start=False)  # --no-daemon
    assert started == [None]


def _env(**extra) -> dict:
    return dict(os.environ, PYTHONPATH=str(REPO), HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false",
                MEMSEARCH_AUTOSTART="1", **extra)


def _memsearch(*argv, env) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "memsearch", *argv], capture_output=True, text=True, env=env,
                          timeout=300)


@pytest.mark.slow
def test_the_commands_without_a_model_start_nothing_so_make_run_s_index_is_not_refused(examples_copy):
    root = examples_copy
    where = IndexLocation.of(root)
    env = _env(MEMSEARCH_IDLE_EXIT="60")
    try:
        steps = [("validate", str(root)), ("ls", str(root)), ("ls", str(root), "projects"), ("core", str(root)),
                 ("read", str(root), "projects/atlas.md", "--lines", "1:3"), ("status", str(root)),
                 ("ls", str(root), "--json"), ("read", str(root), "MEMORY.md", "--no-daemon")]
        for argv in steps:
            done = _memsearch(*argv, env=env)
            assert done.returncode == 0, (argv, done.stderr)
            assert "error" not in done.stderr and "warning" not in done.stderr, (argv, done.stderr)
        time.sleep(1.0)  # a daemon started in the background would have taken the lock by now
        assert verified_holder(where) is None and not daemon_status(root)["running"]
        assert not service_start_file().exists() and not service_log_file().exists()  # no start was even tried
        listing = json.loads(_memsearch("ls", str(root), "--json", env=env).stdout)
        assert any(d["path"] == "projects" for d in listing["dirs"])
        # the README's sequence: index right after, then a search
        indexed = _memsearch("index", str(root), env=env)
        assert indexed.returncode == 0, indexed.stderr
        assert "indexed" in indexed.stdout and "being written by" not in indexed.stderr
        found = _memsearch("search", str(root), "which warehouse did we choose for Atlas and why", "-k", "3",
                           "--json", env=env)
        assert found.returncode == 0, found.stderr
        assert json.loads(found.stdout)["hits"]
    finally:
        stop(root, timeout=60)  # the search may have started one: it is allowed to
