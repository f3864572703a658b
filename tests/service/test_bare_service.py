"""``memsearch service`` started by hand, with no root: it waits ``--idle-exit`` seconds for a first root (it used
to exit :data:`~memsearch.service.host.EMPTY_GRACE_S` after its start, before any client came)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from memsearch.service.host import EMPTY_GRACE_S

pytestmark = pytest.mark.slow


def memsearch(*args: str, **kw):
    return subprocess.Popen([sys.executable, "-m", "memsearch", *args], env=dict(os.environ), **kw)


def service_status() -> dict:
    done = subprocess.run([sys.executable, "-m", "memsearch", "status", "--json"], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_service_started_by_hand_waits_for_its_first_root(private_service):
    proc = memsearch("service", "--idle-exit", "120", stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not service_status()["running"]:
            assert proc.poll() is None, proc.stderr.read()
            assert time.monotonic() < deadline, "the service did not start"
            time.sleep(0.2)
        time.sleep(EMPTY_GRACE_S + 2.0)  # past the grace a service whose last root was unloaded gets
        assert proc.poll() is None, proc.stderr.read()
        assert service_status()["running"] and service_status()["roots"] == []
        stopped = subprocess.run([sys.executable, "-m", "memsearch", "stop", "--all"], capture_output=True, text=True,
                                 timeout=60)
        assert stopped.returncode == 0 and "stopped the memsearch service" in stopped.stdout, stopped.stderr
        assert proc.wait(60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_bare_service_still_exits_idle(private_service):
    proc = memsearch("service", "--idle-exit", "1", stderr=subprocess.PIPE, text=True)
    try:
        assert proc.wait(60) == 0
        assert "no memory root is loaded: exiting" in proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="naming the silent service's pid needs /proc")
def test_a_service_that_does_not_answer_is_named_with_the_kill_that_ends_it(private_service):
    """A stopped (SIGSTOP) or hung service used to read as "not running" to `status` and `stop --all`, while it
    kept the start lock (so no fresh one could start) and every command waited for it before working alone."""
    proc = memsearch("service", "--idle-exit", "120", stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not service_status()["running"]:
            assert proc.poll() is None and time.monotonic() < deadline, "the service did not start"
            time.sleep(0.2)
        os.kill(proc.pid, signal.SIGSTOP)
        silent = service_status()
        assert silent["running"] is True and silent["answering"] is False and silent["pid"] == proc.pid
        shown = subprocess.run([sys.executable, "-m", "memsearch", "status"], capture_output=True, text=True, timeout=60)
        assert "not answering" in shown.stdout and f"`kill {proc.pid}`" in shown.stdout, shown.stdout
        stop = subprocess.run([sys.executable, "-m", "memsearch", "stop", "--all"], capture_output=True, text=True,
                              timeout=60)
        assert stop.returncode == 1 and stop.stderr.startswith("error: ") and f"`kill {proc.pid}`" in stop.stderr
        os.kill(proc.pid, signal.SIGCONT)
        assert service_status().get("answering", True) is True  # answering again: the plain report
        assert subprocess.run([sys.executable, "-m", "memsearch", "stop", "--all"], timeout=60).returncode == 0
        assert proc.wait(60) == 0
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGCONT)
            proc.kill()
            proc.wait()


def test_stop_of_a_root_the_running_service_does_not_serve_says_so(make_tree, autostart):
    """``memsearch stop ROOT`` of a root the service does not hold says the service runs and where its roots are
    listed, rather than only "no daemon is running"."""
    served, other = make_tree({"MEMORY.md": "# Memory\n\nCore.\n"}), make_tree({"MEMORY.md": "# Other\n\nCore.\n"})
    done = subprocess.run([sys.executable, "-m", "memsearch", "search", str(served), "core"], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert service_status()["running"]
    stopped = subprocess.run([sys.executable, "-m", "memsearch", "stop", str(other)], capture_output=True, text=True,
                             timeout=60)
    assert stopped.returncode == 0, stopped.stderr
    assert "no memsearch daemon is running" in stopped.stdout and "`memsearch status` lists" in stopped.stdout
    assert [r["root"] for r in service_status()["roots"]] == [str(served)]


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="naming the silent service's pid needs /proc")
def test_stop_of_one_root_of_a_service_that_does_not_answer_ends_nothing(make_tree, autostart):
    """``memsearch stop ROOT`` of a root a stopped (SIGSTOP) or hung service holds used to take the service for a
    ``watch`` daemon: it sent it SIGTERM (ending every root it serves once it ran again) and waited 60 s for
    ``error: the daemon ... is still running``; ``status ROOT`` said ``served by a watch daemon``."""
    root = make_tree({"MEMORY.md": "# Memory\n\nCore.\n", "notes/MEMORY.md": "# Notes\n\nNotes.\n",
                      "notes/a.md": "# A\n\nThe harbor outage.\n"})
    done = subprocess.run([sys.executable, "-m", "memsearch", "search", str(root), "harbor"], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    deadline = time.monotonic() + 120
    while not [r for r in service_status()["roots"] if r["root"] == str(root) and not r.get("waiting_for")]:
        assert time.monotonic() < deadline, "the service did not load the root"
        time.sleep(0.2)
    pid = service_status()["pid"]
    os.kill(pid, signal.SIGSTOP)
    try:
        shown = subprocess.run([sys.executable, "-m", "memsearch", "status", str(root), "--json"], capture_output=True,
                               text=True, timeout=60)
        assert json.loads(shown.stdout)["by"] == "service", shown.stdout
        began = time.monotonic()
        stop = subprocess.run([sys.executable, "-m", "memsearch", "stop", str(root)], capture_output=True, text=True,
                              timeout=120)
        assert time.monotonic() - began < 30
        assert stop.returncode == 1 and stop.stderr.startswith("error: the memsearch service"), stop.stderr
        assert f"`kill {pid}`" in stop.stderr and len(stop.stderr.splitlines()) == 1
    finally:
        os.kill(pid, signal.SIGCONT)
    time.sleep(1.0)  # a SIGTERM sent while it was stopped would be delivered now
    assert service_status()["pid"] == pid and str(root) in [r["root"] for r in service_status()["roots"]]
