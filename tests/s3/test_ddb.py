"""``s3+ddb://`` indexes: LanceDB's DynamoDB commit store, with moto's DynamoDB server on loopback
beside SeaweedFS. Two memsearch writers racing lose and duplicate no rows (the lease picks one), and
two raw LanceDB writers appending at once through the commit store lose no commit."""

from __future__ import annotations

import socket
import subprocess
import sys
import textwrap
import uuid

import pytest

from memsearch.engine.embed.embedder import HashEmbedder
from memsearch.engine.index import MemoryIndex
from tests.conftest import REPO, wait_for_port
from tests.s3.test_remote_index import TREE, race_two_writers

pytest.importorskip("moto", reason="moto[server] is a dev dependency: pip install -e '.[dev]'")


@pytest.fixture(scope="module")
def dynamodb(tmp_path_factory):
    """moto's server (DynamoDB and the rest of its mock AWS) on a free loopback port."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wait_for_port(port, server, "moto's server")
    yield f"http://127.0.0.1:{port}"
    server.terminate()
    server.wait(timeout=20)


@pytest.fixture
def ddb(dynamodb, s3, monkeypatch):
    """A fresh commit table (LanceDB's layout: base_uri hash key, version range key); ``ddb.uri(prefix)``."""
    import boto3

    monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", dynamodb)
    client = boto3.client(
        "dynamodb",
        endpoint_url=dynamodb,
        region_name="us-east-1",
        aws_access_key_id="test",
        aws_secret_access_key="test",
    )
    table = f"lance-{uuid.uuid4().hex[:8]}"
    client.create_table(
        TableName=table,
        BillingMode="PAY_PER_REQUEST",
        KeySchema=[{"AttributeName": "base_uri", "KeyType": "HASH"}, {"AttributeName": "version", "KeyType": "RANGE"}],
        AttributeDefinitions=[
            {"AttributeName": "base_uri", "AttributeType": "S"},
            {"AttributeName": "version", "AttributeType": "N"},
        ],
    )

    class Commits:
        endpoint = dynamodb

        @staticmethod
        def uri(prefix: str) -> str:
            return f"s3+ddb://{s3.name}/{prefix}?ddbTableName={table}"

        @staticmethod
        def versions(prefix: str) -> dict[str, list[int]]:
            items = client.scan(TableName=table)["Items"]
            found: dict[str, list[int]] = {}
            for item in items:
                found.setdefault(item["base_uri"]["S"], []).append(int(item["version"]["N"]))
            return {k: sorted(v) for k, v in found.items() if k.startswith(prefix + "/")}

        @staticmethod
        def env(**extra: str) -> dict[str, str]:
            return s3.subprocess_env(AWS_ENDPOINT_URL_DYNAMODB=dynamodb, **extra)

    return Commits


@pytest.mark.slow
def test_an_index_commits_through_dynamodb(ddb, make_tree):
    root = make_tree(TREE)
    index = MemoryIndex(root, db=ddb.uri("one"), embedder=HashEmbedder())
    assert index.sync().files_added == 4
    assert "projects/atlas.md" in [h.path for h in index.search("ClickHouse warehouse", k=3)]
    versions = ddb.versions("one")
    assert versions["one/chunks.lance"][0] == 1 and versions["one/files.lance"]  # every commit is recorded there
    assert MemoryIndex(root, db=ddb.uri("one"), embedder=HashEmbedder()).sync().files_unchanged == 4


@pytest.mark.slow
def test_two_writers_via_s3_ddb_lose_and_duplicate_no_rows(ddb, make_tree, tmp_path):
    uri = ddb.uri("race")
    root, results = race_two_writers(make_tree, tmp_path, uri, ddb.env)
    assert sorted(next(iter(r)) for r in results) == ["locked", "ok"], results
    assert [r["ok"] for r in results if "ok" in r] == [44]
    ids = MemoryIndex(root, db=uri, embedder=HashEmbedder()).store.chunks().to_arrow().column("id").to_pylist()
    assert len(ids) == len(set(ids))  # no duplicated rows
    local = MemoryIndex(root, db=tmp_path / "local", embedder=HashEmbedder())
    local.sync()
    assert sorted(ids) == sorted(local.store.chunks().to_arrow().column("id").to_pylist())  # none lost
    assert ddb.versions("race")["race/chunks.lance"]


APPENDER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    import lancedb, pyarrow as pa
    from memsearch.engine.storage.remote import RemoteDB
    uri, me, barrier = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    remote = RemoteDB.parse(uri)
    table = lancedb.connect(remote.uri, storage_options=remote.storage_options).open_table("rows")
    (barrier / me).touch()
    while len(list(barrier.iterdir())) < 2:
        time.sleep(0.001)
    for i in range(15):
        table.add(pa.table({"id": [f"{me}-{i}"]}))
""")


@pytest.mark.slow
def test_concurrent_appends_through_the_commit_store_lose_no_commit(ddb, tmp_path):
    """Without memsearch's lease: two processes appending at once, each commit arbitrated by DynamoDB."""
    import lancedb
    import pyarrow as pa

    from memsearch.engine.storage.remote import RemoteDB

    remote = RemoteDB.parse(ddb.uri("appends"))
    lancedb.connect(remote.uri, storage_options=remote.storage_options).create_table("rows", pa.table({"id": ["seed"]}))
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", APPENDER, remote.uri, f"w{i}", str(barrier)],
            stderr=subprocess.PIPE,
            text=True,
            cwd=REPO,
            env=ddb.env(PYTHONPATH=str(REPO)),
        )
        for i in range(2)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=180)
        assert proc.returncode == 0, err
    table = lancedb.connect(remote.uri, storage_options=remote.storage_options).open_table("rows")
    ids = table.to_arrow().column("id").to_pylist()
    assert sorted(ids) == sorted(["seed"] + [f"w{w}-{i}" for w in range(2) for i in range(15)])
    assert ddb.versions("appends")["appends/rows.lance"] == list(range(1, 32))  # 31 commits, one version each
