"""Read replicas and the writer hand-over on a real S3 store (SeaweedFS on loopback): a read-only index pinned
to its writer's commits and moved by its follower, a writer whose lease lapsed committing nothing more, and a
standby taking over from the last commit."""

from __future__ import annotations

import time

import pytest

from memsearch.engine.embed.embedder import HashEmbedder
from memsearch.engine.index import MemoryIndex
from memsearch.engine.storage.follow import Follower, advance
from memsearch.engine.storage.remote import LEASE_FILE, RemoteDB
from memsearch.errors import IndexLocked
from tests.conftest import run_cli
from tests.s3.test_remote_index import TREE


def _wait(predicate, timeout: float = 20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("timed out")


def _paths(index, query: str) -> list[str]:
    return [h.path for h in index.search(query, k=3, mode="keyword")]


def test_a_replica_serves_its_pinned_version_and_follows_each_commit(s3, make_tree):
    root, uri = make_tree(TREE), s3.uri("follow")
    writer = MemoryIndex(root, db=uri, embedder=HashEmbedder())
    writer.sync()
    replica = MemoryIndex(root, db=uri, embedder=HashEmbedder(), read_only=True)
    assert advance(replica) is not None and replica.store.pinned == (writer.store.version(), writer.store.files_version())
    assert _paths(replica, "warehouse") == ["projects/atlas.md"]
    (root / "notes" / "airship.md").write_text("# Airship\n\nThe zeppelin project starts in May.\n")
    writer.sync()
    # between polls the replica answers from the version it holds, without asking the store
    asked = []
    replica.store.refresh, real = (lambda **kw: asked.append(kw) or real(**kw)), replica.store.refresh
    assert _paths(replica, "zeppelin") == [] and asked == []
    assert advance(replica) is not None and asked == [{"pinned_too": True}]
    assert _paths(replica, "zeppelin") == ["notes/airship.md"]
    assert advance(replica) is None  # nothing new: the pin stays


def test_the_follower_thread_brings_commits_within_its_interval(s3, make_tree):
    root, uri = make_tree(TREE), s3.uri("thread")
    writer = MemoryIndex(root, db=uri, embedder=HashEmbedder())
    replica = MemoryIndex(root, db=uri, embedder=HashEmbedder(), read_only=True)
    follower = Follower(replica, interval=0.1).start()  # before the first build: serves nothing, fails nothing
    try:
        assert _paths(replica, "warehouse") == []
        writer.sync()
        _wait(lambda: replica.store.pinned == (writer.store.version(), writer.store.files_version()))
        assert _paths(replica, "warehouse") == ["projects/atlas.md"]
        pinned = follower.status()["advances"]
        (root / "projects" / "atlas.md").unlink()
        writer.sync()
        _wait(lambda: _paths(replica, "warehouse") == [])
        assert follower.status()["advances"] > pinned and follower.status()["errors"] == 0
    finally:
        follower.close()


def test_a_replica_never_writes_nor_takes_the_lease(s3, make_tree):
    root, uri = make_tree(TREE), s3.uri("readonly")
    replica = MemoryIndex(root, db=uri, embedder=HashEmbedder(), read_only=True)
    with pytest.raises(IndexLocked, match="read-only"):
        replica.sync()
    assert RemoteDB.parse(uri).read(LEASE_FILE) is None


def test_a_writer_whose_lease_lapsed_commits_nothing_and_the_standby_carries_on(s3, make_tree, monkeypatch):
    """The lease test across a take-over: writer A stops renewing (paused, cut off), standby B takes the lease
    once it expires and indexes from A's last commit; A's next sync is refused before any commit."""
    root, uri = make_tree(TREE), s3.uri("handover")
    monkeypatch.setenv("MEMSEARCH_LEASE_TTL", "1.5")
    first = MemoryIndex(root, db=uri, embedder=HashEmbedder())
    first.lock.acquire()
    first.sync()
    version = first.store.version()
    first.lock.lease._stop.set()  # its renewals stop, as in a paused process
    monkeypatch.setenv("MEMSEARCH_STATE_DIR", str(root.parent / "standby-machine"))  # no shared flock
    standby = MemoryIndex(root, db=uri, embedder=HashEmbedder())
    started = time.monotonic()
    standby.lock.acquire(timeout=None)  # waits for the lapse (the holder is alive on this host)
    assert time.monotonic() - started > 0.5
    (root / "notes" / "airship.md").write_text("# Airship\n\nThe zeppelin project starts in May.\n")
    with pytest.raises(IndexLocked, match="no longer holds the lease"):
        first.sync()
    report = standby.sync()
    assert report.files_added == 1 and report.files_changed == 0  # from the last commit, not from scratch
    ids = standby.store.chunks().to_arrow().column("id").to_pylist()
    assert len(ids) == len(set(ids))
    assert standby.store.version() > version
    standby.lock.release()
    first.lock.release()  # its release must not free (or fail on) the standby's lease


@pytest.mark.parametrize("args", [["--read-only"], ["--read-only", "--http", "--watch"],
                                  ["--read-only", "--http", "--writable"]])
def test_serve_read_only_refuses_what_a_replica_cannot_do(args, make_tree, capsys):
    code, out, err = run_cli(["serve", str(make_tree(TREE)), *args], capsys)
    assert code == 2 and "--read-only serves one ROOT over --http" in err and "Traceback" not in err


def test_watch_standby_refuses_a_wait_or_detach(make_tree, capsys):
    code, out, err = run_cli(["watch", str(make_tree(TREE)), "--standby", "--detach"], capsys)
    assert code == 2 and "--standby waits for the lock" in err
