"""Indexes on a real S3 store (SeaweedFS on loopback): addressing, index.json in the store,
incremental sync, readers in other processes, the writer lease, and one-line errors."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
import time

import pytest

from memsearch import settings
from memsearch.engine.embed.embedder import HashEmbedder
from memsearch.engine.index import MemoryIndex
from memsearch.engine.storage.remote import LEASE_FILE, RemoteDB, WriterLease
from memsearch.errors import BucketNotFound, IndexLocked, InvalidArgument, StoreAccessDenied, StoreUnreachable
from tests.conftest import REPO
from tests.support.seaweed import put_bucket

TREE = {
    "MEMORY.md": "# Root\n\nCore memory.\n",
    "projects/MEMORY.md": "# Projects\n\nActive projects.\n",
    "projects/atlas.md": "# Atlas\n\n## Decisions\n\nWe chose ClickHouse for the warehouse because of compression.\n",
    "notes/MEMORY.md": "# Notes\n\nDaily notes.\n",
    "notes/2026-09-25.md": "# Sep 25\n\nDeploy broke the API for 38 minutes.\n",
}


def objects(uri: str) -> list[str]:
    import obstore

    from memsearch.engine.storage.remote import _object_store  # noqa: PLC2701 - the test reads the store the engine uses

    return sorted(m["path"] for batch in obstore.list(_object_store(RemoteDB.parse(uri))) for m in batch)


def test_the_store_is_real_and_authenticated(s3):
    assert put_bucket(s3.server.endpoint, s3.name + "-x") == 200
    assert put_bucket(s3.server.endpoint, s3.name + "-y", secret="wrong") == 403


def test_db_setting_keeps_uris():
    assert settings.get("db", "s3://bucket/a/b") == "s3://bucket/a/b"
    assert settings.get("db", environ={"MEMSEARCH_DB": "s3://b/p"}) == "s3://b/p"
    assert str(settings.get("db", "~/x")).startswith(os.path.expanduser("~"))
    with pytest.raises(InvalidArgument, match="s3://bucket/prefix"):
        RemoteDB.parse("gs://bucket/x")
    with pytest.raises(InvalidArgument, match="no bucket"):
        RemoteDB.parse("s3:///x")


def test_remote_index_roundtrip(s3, make_tree):
    root = make_tree(TREE)
    index = MemoryIndex(root, db=s3.uri("tenants/a"), embedder=HashEmbedder())
    assert index.location == s3.uri("tenants/a") and index.db_path.is_dir()
    report = index.sync()
    assert report.files_added == 4
    assert "projects/atlas.md" in [h.path for h in index.search("ClickHouse warehouse", k=3)]
    keys = objects(s3.uri("tenants/a"))
    assert "index.json" in keys and any(k.startswith("chunks.lance/") for k in keys)
    meta = RemoteDB.parse(s3.uri("tenants/a")).read_meta()
    assert meta["root"] == str(root) and meta["model"] == "hash-test"
    assert not any(p.name == "index.json" for p in index.db_path.iterdir())  # local dir: lock and state only
    again = MemoryIndex(root, db=s3.uri("tenants/a"), embedder=HashEmbedder()).sync()
    assert again.files_unchanged == 4 and again.chunks_embedded == 0


def test_memsearch_db_variable_selects_the_remote_index(s3, make_tree, monkeypatch):
    root = make_tree(TREE)
    monkeypatch.setenv("MEMSEARCH_DB", s3.uri("by-env"))
    index = MemoryIndex(root, embedder=HashEmbedder())
    index.sync()
    assert index.remote is not None and "index.json" in objects(s3.uri("by-env"))


def test_a_second_writer_gets_a_clear_error_and_the_first_keeps_writing(s3, make_tree):
    uri = s3.uri("leased")
    other_machine = WriterLease(RemoteDB.parse(uri), purpose="daemon").acquire()
    try:
        index = MemoryIndex(make_tree(TREE), db=uri, embedder=HashEmbedder())
        with pytest.raises(IndexLocked, match=rf"process {os.getpid()} on {socket.gethostname()} \(daemon"):
            index.sync(wait=0.3)
        assert index.search("warehouse", k=1) == []  # searching never needs the lease
    finally:
        other_machine.release()
    assert index.sync().files_added == 4  # released: the next writer goes on


def test_an_expired_or_dead_lease_is_taken_over(s3):
    remote = RemoteDB.parse(s3.uri("stale"))
    short = WriterLease(remote, ttl=0.5).acquire()
    short._stop.set()  # stop renewing, as a paused or killed process would
    time.sleep(0.8)
    taker = WriterLease(remote).acquire(timeout=0.0)
    assert taker.holder()["token"] == taker._record["token"]
    short.release()  # the old holder's release must not free the new holder's lease
    assert taker.holder() is not None
    taker.release()
    assert taker.holder() is None
    # a holder on this host whose process is gone: free at once, not at expiry
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    record = {"host": socket.gethostname(), "pid": int(dead.stdout), "purpose": "index", "since": "", "expires": time.time() + 300}
    WriterLease(remote)._put(record, None if remote.read(LEASE_FILE) is None else _etag(remote))
    WriterLease(remote).acquire(timeout=0.0).release()


def _etag(remote):
    import obstore

    from memsearch.engine.storage.remote import _object_store  # noqa: PLC2701

    return obstore.head(_object_store(remote), LEASE_FILE)["e_tag"]


WRITER = textwrap.dedent("""
    import json, sys, time
    from memsearch.engine.embed.embedder import HashEmbedder
    from memsearch.engine.index import MemoryIndex
    from memsearch.errors import IndexLocked
    from pathlib import Path
    class RealisticHash(HashEmbedder):  # a model takes time: the winner's sync outlasts any start skew
        def embed_documents(self, texts):
            time.sleep(3.0)
            return super().embed_documents(texts)
    root, uri, barrier, me = sys.argv[1], sys.argv[2], Path(sys.argv[3]), sys.argv[4]
    index = MemoryIndex(root, db=uri, embedder=RealisticHash())
    (barrier / me).touch()
    while len(list(barrier.iterdir())) < 2:  # both writers are ready: go at the same instant
        time.sleep(0.001)
    try:
        report = index.sync(wait=0.0)
        print(json.dumps({"ok": report.files_added}))
    except IndexLocked as exc:
        print(json.dumps({"locked": str(exc)}))
""")


def race_two_writers(make_tree, tmp_path, uri: str, env) -> tuple:
    """Two 'machines' (separate state dirs, so no shared flock) start a sync of one 44-file tree
    into ``uri`` at the same instant; ``env(**extra)`` gives their environment. (root, results)."""
    files = dict(TREE) | {f"bulk/n{i}.md": f"# Note {i}\n\n" + f"fact {i} about topic {i % 7}.\n" * 40 for i in range(40)}
    root = make_tree(files)
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(root), uri, str(barrier), str(i)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, cwd=REPO,
                              env=env(MEMSEARCH_STATE_DIR=str(tmp_path / f"machine{i}"), PYTHONPATH=str(REPO)))
             for i in range(2)]
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=180)
        assert proc.returncode == 0, err
        results.append(json.loads(out.strip().splitlines()[-1]))
    return root, results


@pytest.mark.slow
def test_two_writers_race_no_lost_or_duplicated_rows(s3, make_tree, tmp_path):
    uri = s3.uri("race")
    root, results = race_two_writers(make_tree, tmp_path, uri, s3.subprocess_env)
    winners = [r for r in results if "ok" in r]
    losers = [r for r in results if "locked" in r]
    assert len(winners) == 1 and len(losers) == 1, results
    assert winners[0]["ok"] == 44
    assert "one writer per index" in losers[0]["locked"] and "\n" not in losers[0]["locked"]
    check = MemoryIndex(root, db=uri, embedder=HashEmbedder())
    ids = check.store.chunks().to_arrow().column("id").to_pylist()
    assert len(ids) == len(set(ids))  # no duplicated rows
    local = MemoryIndex(root, db=tmp_path / "local", embedder=HashEmbedder())
    local.sync()
    assert sorted(ids) == sorted(local.store.chunks().to_arrow().column("id").to_pylist())  # none lost


READER = textwrap.dedent("""
    import json, sys
    from memsearch.engine.embed.embedder import HashEmbedder
    from memsearch.engine.index import MemoryIndex
    index = MemoryIndex(sys.argv[1], db=sys.argv[2], embedder=HashEmbedder())
    for line in sys.stdin:
        hits = index.search(line.strip(), k=3, mode="keyword")
        print(json.dumps([h.path for h in hits]), flush=True)
""")


@pytest.mark.slow
def test_a_reader_in_another_process_sees_new_versions(s3, make_tree):
    root = make_tree(TREE)
    uri = s3.uri("readers")
    writer = MemoryIndex(root, db=uri, embedder=HashEmbedder())
    writer.sync()
    reader = subprocess.Popen([sys.executable, "-c", READER, str(root), uri], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True, cwd=REPO, env=s3.subprocess_env(PYTHONPATH=str(REPO)))
    try:
        reader.stdin.write("zeppelin\n")
        reader.stdin.flush()
        assert json.loads(reader.stdout.readline()) == []
        (root / "notes" / "airship.md").write_text("# Airship\n\nThe zeppelin project starts in May.\n")
        writer.sync()
        reader.stdin.write("zeppelin\n")
        reader.stdin.flush()
        assert json.loads(reader.stdout.readline()) == ["notes/airship.md"]
    finally:
        reader.stdin.close()
        reader.wait(timeout=30)


def _cli(*args, env):
    return subprocess.run([sys.executable, "-m", "memsearch", *args], capture_output=True, text=True, cwd=REPO, env=env, timeout=120)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
@pytest.mark.parametrize("case", ["bucket", "credentials", "endpoint"])
def test_store_errors_are_one_line_naming_the_fix(s3, make_tree, case):
    root = make_tree(TREE)
    uri, env, want = s3.uri("x"), {}, ""
    if case == "bucket":
        uri, want = f"s3://{s3.name}-missing/x", "does not exist"
    elif case == "credentials":
        env, want = {"AWS_SECRET_ACCESS_KEY": "wrong"}, "AWS_SECRET_ACCESS_KEY"
    else:
        env, want = {"AWS_ENDPOINT_URL": f"http://127.0.0.1:{_free_port()}"}, "AWS_ENDPOINT_URL"
    started = time.monotonic()
    result = _cli("index", str(root), "--db", uri, env=s3.subprocess_env(PYTHONPATH=str(REPO), **env))
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and want in lines[0], result.stderr
    assert "Traceback" not in result.stderr
    assert time.monotonic() - started < 60


def test_store_errors_are_typed(s3, make_tree, monkeypatch):
    root = make_tree(TREE)
    with pytest.raises(BucketNotFound) as missing:
        MemoryIndex(root, db=f"s3://{s3.name}-nope/x", embedder=HashEmbedder())
    assert f"`aws s3 mb s3://{s3.name}-nope`" in str(missing.value)  # the shell's fix; a model gets its own words
    assert "aws" not in missing.value.render("tools") and "memory_read" in missing.value.render("tools")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "nobody")
    with pytest.raises(StoreAccessDenied):
        MemoryIndex(root, db=s3.uri("y"), embedder=HashEmbedder())
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{_free_port()}")
    with pytest.raises(StoreUnreachable):
        MemoryIndex(root, db=s3.uri("z"), embedder=HashEmbedder())


@pytest.mark.slow
def test_real_model_cli_and_api_on_a_remote_index(s3, examples_copy, tmp_path):
    """End to end with the real model: `memsearch index/search --db s3://...` and memsearch.search(db=...)."""
    uri = s3.uri("examples")
    env = s3.subprocess_env(PYTHONPATH=str(REPO))
    indexed = _cli("index", str(examples_copy), "--db", uri, "--json", env=env)
    assert indexed.returncode == 0, indexed.stderr
    assert json.loads(indexed.stdout)["db"] == uri
    found = _cli("search", str(examples_copy), "which warehouse did we choose for Atlas", "--db", uri, "--json", "--no-sync", env=env)
    assert found.returncode == 0, found.stderr
    remote_hits = [(h["path"], h["start_line"]) for h in json.loads(found.stdout)["hits"]]
    assert any("2026-08-04" in p or "atlas" in p for p, _ in remote_hits[:2])
    import memsearch

    api = memsearch.search("which warehouse did we choose for Atlas", examples_copy, db=uri, sync=False)
    local = memsearch.search("which warehouse did we choose for Atlas", examples_copy, db=str(tmp_path / "local"))
    assert [(h["path"], h["start_line"]) for h in api] == remote_hits == [(h["path"], h["start_line"]) for h in local]
    assert not (examples_copy / ".memsearch").exists()  # nothing written into the memory root


@pytest.mark.slow
def test_one_server_serves_tenants_from_an_s3_template(s3, tmp_path):
    from tests.conftest import build
    from tests.support.tenants import TenantServer, call

    for name, secret in (("ada", "ClickHouse for compression"), ("bob", "Snowflake for the sharing")):
        build(tmp_path / "tenants" / name, {"MEMORY.md": f"# {name}\n", "notes/MEMORY.md": "# Notes\n\nDecisions.\n",
                                            "notes/decisions.md": f"# Decisions\n\nThe warehouse decision of {name}: {secret}.\n"})
    env = s3.subprocess_env(MEMSEARCH_DB="")
    with TenantServer(tmp_path / "tenants", env=env, args=("--db", s3.uri("tenants/{tenant}"))) as server:
        ada = call(server.url("ada"), "memory_search", {"query": "which warehouse", "k": 5})
        bob = call(server.url("bob"), "memory_search", {"query": "which warehouse", "k": 5})
    assert "ClickHouse" in ada["hits"][0]["snippet"] and all("Snowflake" not in h["snippet"] for h in ada["hits"])
    assert "Snowflake" in bob["hits"][0]["snippet"] and all("ClickHouse" not in h["snippet"] for h in bob["hits"])
    for name in ("ada", "bob"):
        assert "index.json" in objects(s3.uri(f"tenants/{name}"))
        assert not (tmp_path / "tenants" / name / ".memsearch").exists()


@pytest.mark.slow
def test_status_of_a_remote_index_counts_like_a_local_one(s3, make_tree, tmp_path):
    from memsearch.service.process import daemon_status

    root = make_tree(TREE)
    uri = s3.uri("status")
    empty = daemon_status(root, uri)
    assert not empty["indexed"] and empty["db"] == uri
    MemoryIndex(root, db=uri, embedder=HashEmbedder()).sync()
    (root / "notes" / "2026-09-26.md").write_text("# Sep 26\n\nA new note.\n")
    local_db = tmp_path / "local-db"
    MemoryIndex(root, db=local_db, embedder=HashEmbedder()).sync()
    remote, local = daemon_status(root, uri), daemon_status(root, local_db)
    assert remote["indexed"] and remote["db"] == uri and remote["state_dir"]
    assert (remote["files"], remote["model"], remote["pending"]) == (4, "hash-test", {"added": 1, "changed": 0, "removed": 0, "total": 1})
    assert remote["chunks"] > 0 and remote["disk_bytes"] > 0 and local["files"] == 5
    shown = subprocess.run([sys.executable, "-m", "memsearch", "status", str(root), "--db", uri], capture_output=True, text=True,
                           env=s3.subprocess_env(), cwd=REPO, timeout=120)
    assert shown.returncode == 0 and f"index: {uri}: 4 files, {remote['chunks']} chunks" in shown.stdout, shown.stdout + shown.stderr
