"""The object store down for a few seconds under a writer and its readers: one clear line, then recovery.

Before: a ``memsearch watch`` writer of an ``s3://`` index exited at the first sync that found the store
down ("the daemon stops: StoreUnreachable"), so a store restart left the index stale until someone
restarted the writer; and a store whose gateway answered 5xx (its backend down) was reported with the
raw S3 error text and XML, telling the user to check the credentials. Real SeaweedFS on loopback,
stopped and restarted on the same ports with the same data; the real model; default settings but a lease
(``MEMSEARCH_LEASE_TTL``) longer than SeaweedFS's restart on this busy machine: a writer cut off past its
lease's margin exits by design (docs/scale-out.md), and a standby takes over.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from memsearch.engine.storage.remote import RemoteDB, translate
from memsearch.errors import StoreUnreachable
from tests.conftest import build
from tests.support.seaweed import SeaweedS3

REPO = Path(__file__).resolve().parents[2]
TREE = {"MEMORY.md": "# Root\n", "notes/MEMORY.md": "# Notes\n", "notes/a.md": "# A\n\nthe heron at dawn\n"}
# The error obstore gave while SeaweedFS shut down (its S3 gateway up, its filer gone), verbatim up to the XML.
FAILING = ("Generic S3 error: Error performing GET http://127.0.0.1:37345/memory/tenants/ada/index.json in 225ms, "
           "after 2 retries, max_retries: 2, retry_timeout: 10s  - Server returned non-2xx status code: "
           "500 Internal Server Error: <?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>InternalError</Code>")


def test_a_store_answering_5xx_is_a_transient_store_error_naming_the_fix():
    remote = RemoteDB.parse("s3://memory/tenants/ada")
    error = translate(RuntimeError(FAILING), remote)
    assert isinstance(error, StoreUnreachable)
    message = str(error)
    assert "500 Internal Server Error" in message and "running and healthy" in message
    assert "<?xml" not in message and "credentials" not in message and "\n" not in message


def _wait(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what}")


def _machine(tmp_path: Path, name: str, server: SeaweedS3) -> dict[str, str]:
    """The environment of one "machine": its own runtime dir (service socket) and state dir."""
    runtime = tmp_path / f"run-{name}"
    runtime.mkdir(mode=0o700)
    return dict(os.environ) | server.env(MEMSEARCH_STATE_DIR=str(tmp_path / f"state-{name}")) | {
        "XDG_RUNTIME_DIR": str(runtime), "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1"}


@pytest.mark.slow
def test_a_writer_outlives_a_store_outage_and_indexes_what_was_written_meanwhile(tmp_path):
    server = SeaweedS3(tmp_path / "seaweed").start()
    writer = None
    try:
        bucket = f"o-{uuid.uuid4().hex[:8]}"
        server.create_bucket(bucket)
        uri = f"s3://{bucket}/team"
        root = build(tmp_path / "memory", TREE)
        log = tmp_path / "watch.log"
        env = _machine(tmp_path, "a", server) | {"MEMSEARCH_LEASE_TTL": "120"}
        with open(log, "wb") as out:
            writer = subprocess.Popen([sys.executable, "-m", "memsearch", "watch", str(root), "--db", uri],
                                      env=env, stdout=out, stderr=subprocess.STDOUT)
        _wait(lambda: "sync (catch-up)" in log.read_text(), 180, "the writer's first sync")
        reader = _machine(tmp_path, "b", server)  # another machine: status names the writer holding the lease
        status = subprocess.run([sys.executable, "-m", "memsearch", "status", str(root), "--db", uri], env=reader,
                                capture_output=True, text=True, timeout=120)
        assert status.returncode == 0, status.stderr
        named = f"being written by process {writer.pid} on {socket.gethostname()} (the memsearch service or a watch daemon, "
        assert named + "keeping it fresh" in status.stdout, status.stdout

        server.stop()  # the store goes away; the writer's next sync fails
        (root / "notes" / "b.md").write_text("# B\n\nthe osprey returns to the estuary\n")
        _wait(lambda: "sync failed" in log.read_text() or writer.poll() is not None, 60, "the failing sync")
        time.sleep(2)
        assert writer.poll() is None, log.read_text()
        text = log.read_text()
        assert "cannot reach the object store" in text and "Traceback" not in text, text

        server.start(same_ports=True)  # back, same data: the writer retries and indexes b.md

        def found() -> bool:
            done = subprocess.run([sys.executable, "-m", "memsearch", "search", str(root), "osprey estuary",
                                   "--db", uri, "-k", "1"], env=reader, capture_output=True, text=True, timeout=120)
            return done.returncode == 0 and "notes/b.md" in done.stdout
        _wait(found, 90, "the file written during the outage to be searchable from another machine")
        assert writer.poll() is None, log.read_text()
        assert "Traceback" not in log.read_text()
    finally:
        if writer is not None and writer.poll() is None:
            writer.send_signal(signal.SIGTERM)
            try:
                writer.wait(timeout=30)
            except subprocess.TimeoutExpired:
                writer.kill()
                writer.wait()
        server.stop()


@pytest.mark.slow
def test_a_store_outage_during_a_check_is_no_damage_and_rebuilds_nothing(tmp_path, monkeypatch):
    """Before: the check after a writer's catch-up read the outage as damage ("the index at s3://... is
    damaged (... Error performing GET ...)") and started a rebuild of the shared index."""
    from memsearch.engine.embed.embedder import HashEmbedder
    from memsearch.engine.index import MemoryIndex

    server = SeaweedS3(tmp_path / "seaweed").start()
    try:
        server.create_bucket("memory")
        for key, value in server.env(MEMSEARCH_STATE_DIR=str(tmp_path / "state")).items():
            monkeypatch.setenv(key, value)
        index = MemoryIndex(build(tmp_path / "memory", TREE), db="s3://memory/team", embedder=HashEmbedder())
        index.sync()
        server.stop()
        with pytest.raises(StoreUnreachable, match="cannot reach the object store"):
            index.check()  # not a "damaged" problem, which a writer answers with a rebuild
        server.start(same_ports=True)
        assert index.check_and_repair() is None  # back: the index was whole all along
    finally:
        server.stop()
