"""An ``s3://`` index with a wrong endpoint setting: one typed error naming the fix, never a Rust panic.

``AWS_ENDPOINT_URL='not a url'`` made the object-store client panic (``pyo3_runtime.PanicException``,
a BaseException nothing translated), and a plain-http endpoint without ``AWS_ALLOW_HTTP`` gave
"Generic S3 error ... builder error". Both run against a real SeaweedFS on loopback.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from memsearch.engine.embed.embedder import HashEmbedder
from memsearch.engine.index import MemoryIndex
from memsearch.errors import StoreUnreachable
from tests.conftest import build
from tests.support.seaweed import SeaweedS3

REPO = Path(__file__).resolve().parents[2]
TREE = {"MEMORY.md": "# Root\n", "notes/MEMORY.md": "# Notes\n", "notes/a.md": "# A\n\nthe heron at dawn\n"}


@pytest.fixture(scope="module")
def seaweed(tmp_path_factory):
    with SeaweedS3(tmp_path_factory.mktemp("seaweed")) as server:
        yield server


@pytest.fixture
def bucket(seaweed, monkeypatch, tmp_path):
    name = f"e-{uuid.uuid4().hex[:8]}"
    seaweed.create_bucket(name)
    for key, value in seaweed.env(MEMSEARCH_STATE_DIR=str(tmp_path / "state")).items():
        monkeypatch.setenv(key, value)
    return name


@pytest.mark.parametrize("endpoint", ["not a url", "http://127.0.0.1:port", "ftp://127.0.0.1/"])
def test_an_endpoint_that_is_not_a_url_is_one_typed_error(bucket, tmp_path, monkeypatch, endpoint):
    monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint)
    root = build(tmp_path / "memory", TREE)
    with pytest.raises(StoreUnreachable, match="AWS_ENDPOINT_URL=.* is not the URL of an object store"):
        MemoryIndex(root, db=f"s3://{bucket}/x", embedder=HashEmbedder()).sync()


def test_not_a_url_from_the_cli_is_one_line_without_a_panic(bucket, tmp_path):
    root = build(tmp_path / "memory", TREE)
    env = dict(os.environ, AWS_ENDPOINT_URL="not a url", PYTHONPATH=str(REPO), HF_HUB_OFFLINE="1")
    done = subprocess.run([sys.executable, "-m", "memsearch", "search", str(root), "heron", "--db",
                           f"s3://{bucket}/x"], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [done.stderr.strip()] and done.stderr.startswith("error: ")
    assert "AWS_ENDPOINT_URL" in done.stderr
    assert "panicked" not in done.stderr and "Traceback" not in done.stderr


def test_plain_http_without_allow_http_names_the_fix(bucket, tmp_path, monkeypatch):
    root = build(tmp_path / "memory", TREE)
    monkeypatch.delenv("AWS_ALLOW_HTTP")
    with pytest.raises(StoreUnreachable, match="set AWS_ALLOW_HTTP=true"):
        MemoryIndex(root, db=f"s3://{bucket}/x", embedder=HashEmbedder()).sync()
    monkeypatch.setenv("AWS_ALLOW_HTTP", "true")  # the fix the message names works against the same server
    index = MemoryIndex(root, db=f"s3://{bucket}/x", embedder=HashEmbedder())
    assert index.sync().files_added >= 1
    assert [h.path for h in index.search("heron", mode="keyword")] == ["notes/a.md"]
