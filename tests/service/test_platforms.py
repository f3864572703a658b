"""Platform specifics (memsearch.platforms): each way of asking the kernel, and each fallback, on real
sockets and real locks held by real processes. The platform is passed in, so the macOS and bare
fallbacks run here too."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

import pytest

from memsearch import platforms
from memsearch.location import IndexLocation
from memsearch.platforms import BARE, BSD, LINUX, holds_flock, peer
from memsearch.service.process import verified_holder

HOLD = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
time.sleep(60)
"""


@pytest.fixture
def holder(tmp_path):
    """A real process holding the flock on tmp_path/writer.lock."""
    path = tmp_path / "writer.lock"
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(path)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    yield path, proc
    proc.kill()
    proc.wait()


def test_the_peer_of_a_socket(tmp_path):
    left, right = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    with left, right:
        if sys.platform.startswith("linux"):
            assert peer(left, LINUX) == (os.getpid(), os.getuid())
        # LOCAL_PEERCRED does not exist here: the fallback says "unknown", never a wrong uid
        assert peer(left, BSD)[1] in (None, os.getuid())
        assert peer(left, BARE) == (None, None)
        assert platforms.peer_uid(left) in (os.getuid(), None)


@pytest.mark.parametrize("platform", [LINUX, BSD, BARE], ids=["proc-locks", "probe", "bare"])
def test_a_flock_holder_is_found_by_every_way_of_asking(holder, platform):
    if platform is LINUX and not os.path.exists("/proc/locks"):
        pytest.skip("no /proc/locks here")
    path, proc = holder
    assert holds_flock(path, proc.pid, platform)
    proc.kill()
    proc.wait()
    assert not holds_flock(path, proc.pid, platform)  # the kernel dropped the lock with its process


def test_the_probe_leaves_the_lock_free(tmp_path):
    import fcntl

    path = tmp_path / "writer.lock"
    path.touch()
    assert not holds_flock(path, os.getpid(), BARE)
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # nothing left behind by the probe
    finally:
        os.close(fd)


@pytest.mark.parametrize("platform", [LINUX, BARE], ids=["proc-locks", "fallback"])
def test_a_record_naming_a_live_pid_that_holds_no_lock_is_stale(tmp_path, platform):
    db = tmp_path / "db"
    db.mkdir()
    where = IndexLocation.at(db)
    where.lock_file.touch()
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        where.holder_file.write_text(json.dumps({"pid": bystander.pid, "purpose": "watch", "since": "2026-01-01"}))
        time.sleep(0.1)
        assert verified_holder(where, platform) is None
    finally:
        bystander.kill()
        bystander.wait()
