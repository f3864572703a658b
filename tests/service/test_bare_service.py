"""``memsearch service`` started by hand, with no root: it waits ``--idle-exit`` seconds for a first root (it used
to exit :data:`~memsearch.service.host.EMPTY_GRACE_S` after its start, before any client came)."""

from __future__ import annotations

import json
import os
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
