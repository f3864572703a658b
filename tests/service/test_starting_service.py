"""A service still starting (its process up, holding the start file, not yet listening on its socket) is told
from a hung one (issue: `status` said "not answering" and `stop --all` exited 1 in that window): `status` says
"starting", `stop --all` waits for it to listen and stops it. Real processes: the service is auto-started as a
client starts it, and held before it binds its socket with SIGSTOP (then let go with SIGCONT)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from memsearch.location import IndexLocation
from memsearch.platforms import pid_alive
from memsearch.service import autostart as starter
from memsearch.service import process
from tests.conftest import REPO


def _memsearch(*argv: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO), HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    return subprocess.run([sys.executable, "-m", "memsearch", *argv], capture_output=True, text=True, env=env,
                          timeout=300)


def _stop_all_after_sigcont(pid: int, after: float) -> None:
    """``stop --all`` while the stopped (SIGSTOP) service ``pid`` is let go ``after`` seconds in: it must stop it, and
    the process must be gone within 30 s."""
    try:
        threading.Timer(after, os.kill, (pid, signal.SIGCONT)).start()
        stopped = _memsearch("stop", "--all")
        assert stopped.returncode == 0, stopped.stderr
        assert f"stopped the memsearch service (pid {pid}" in stopped.stdout
    finally:
        try:
            os.kill(pid, signal.SIGCONT)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + 30
    while pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    if pid_alive(pid):
        os.kill(pid, signal.SIGKILL)
        pytest.fail(f"the service (pid {pid}) was still running 30 s after stop --all")


@pytest.mark.slow
def test_a_starting_service_is_shown_starting_and_stop_all_waits_for_it(make_tree, autostart, monkeypatch):
    root = make_tree({"MEMORY.md": "# Root\n", "notes/MEMORY.md": "# Notes\n", "notes/a.md": "# A\n\nThe otter.\n"})
    pid = starter.ensure(IndexLocation.of(root))
    assert pid is not None
    os.kill(pid, signal.SIGSTOP)  # well before it can listen: Python has only just started
    try:
        assert process.silent_service() == pid and process.service_starting(pid)
        shown = _memsearch("status")
        assert shown.returncode == 0 and f"memsearch service: starting, pid {pid}" in shown.stdout
        assert "not answering" not in shown.stdout
        as_json = json.loads(_memsearch("status", "--json").stdout)
        assert as_json["running"] and as_json["pid"] == pid and as_json["starting"] and not as_json["answering"]
        grace = process.START_GRACE_S
        monkeypatch.setattr(process, "START_GRACE_S", 0.0)  # that old and still not listening: hung, not starting
        assert not process.service_starting(pid)
        monkeypatch.setattr(process, "START_GRACE_S", grace)
    except BaseException:
        os.kill(pid, signal.SIGCONT)
        raise
    _stop_all_after_sigcont(pid, 1.5)  # it goes on starting meanwhile


@pytest.mark.slow
def test_a_service_slow_to_answer_its_first_status_is_stopped_not_called_hung(make_tree, autostart):
    """CI: on 2 cores busy with the suite, a service that had only just begun to listen answered `status` after the
    1 s a status waits, and `stop --all` called it hung (exit 1). Held 3 s with SIGSTOP once it listens, it is
    stopped; one that never answers is still called hung (tests/service/test_bare_service.py)."""
    root = make_tree({"MEMORY.md": "# Root\n", "notes/MEMORY.md": "# Notes\n", "notes/a.md": "# A\n\nThe otter.\n"})
    pid = starter.ensure(IndexLocation.of(root))
    assert pid is not None
    deadline = time.monotonic() + 120
    while process.service_status() is None:
        assert pid_alive(pid) and time.monotonic() < deadline, "the service did not start"
        time.sleep(0.2)
    os.kill(pid, signal.SIGSTOP)
    _stop_all_after_sigcont(pid, 3.0)
