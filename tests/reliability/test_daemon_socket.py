"""The daemon's socket and process against hostile input: a request nested 100,000 levels deep is
answered with one clear error (issue 24 item 6), and `watch --detach` without a runnable
interpreter says so in one line (issue 24 item 7)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

import pytest

from memsearch.engine.embed.embedder import HashEmbedder
from memsearch.engine.index import MemoryIndex
from tests.conftest import REPO, build

TREE = {"MEMORY.md": "# Root\n", "notes/MEMORY.md": "# Notes\n", "notes/a.md": "# A\n\nalpha kayaks\n"}


@pytest.fixture
def daemon(tmp_path):
    """A real daemon (watcher and socket server) on a small tree, in a thread of this process."""
    from memsearch.service.host import WatchThread

    root = build(tmp_path / "memory", TREE)
    index = MemoryIndex(root, db=tmp_path / "db", embedder=HashEmbedder())
    daemon = WatchThread(root, db=tmp_path / "db", index=index).start()
    yield daemon.root.answers.index
    daemon.close()


def _exchange(path, payload: bytes, timeout: float = 10.0) -> bytes:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        sock.connect(str(path))
        sock.sendall(payload)
        data = b""
        while not data.endswith(b"\n"):
            chunk = sock.recv(1 << 16)
            if not chunk:
                break
            data += chunk
        return data


@pytest.mark.parametrize("payload", [b"[" * 100_000 + b"]" * 100_000, b'{"v": 1, "params": ' + b"{\"a\":" * 50_000],
                         ids=["arrays", "objects"])
def test_a_deeply_nested_request_gets_one_clear_error_and_the_daemon_keeps_serving(daemon, payload):
    path = daemon.where.socket
    reply = json.loads(_exchange(path, payload + b"\n"))
    assert reply["ok"] is False and reply["error"]["type"] == "BadRequest"
    assert "nested deeper than" in reply["error"]["message"]
    status = json.loads(_exchange(path, b'{"v": 1, "id": 2, "method": "status", "params": {}}\n'))
    assert status["ok"] is True and status["result"]["pid"] == os.getpid()


NO_PYTHON = """
import sys
sys.executable = sys.argv[2]  # what a removed or unexecutable interpreter looks like to detach()
from memsearch.cli import main
sys.exit(main(["watch", sys.argv[1], "--detach"]))
"""


@pytest.mark.parametrize("kind", ["missing", "not-executable"])
def test_watch_detach_without_a_runnable_interpreter_says_so_in_one_line(tmp_path, kind):
    root = build(tmp_path / "memory", TREE)
    python = tmp_path / "python3"
    if kind == "not-executable":
        python.write_text("#!/bin/sh\n")
        os.chmod(python, 0o644)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", NO_PYTHON, str(root), str(python)], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: cannot start the daemon process"), lines
    assert time.monotonic() - started < 60
