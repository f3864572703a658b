"""A chunks table whose versions folder is deleted while the per-user service serves the root (default settings: the
real service, the real model). The search says the index is damaged and names the rebuild, as it does with no
service (tests/reliability/test_lost_tables.py), and `index --rebuild`, carried out by the service, recovers. Before,
the service's first-rows check read the table outside the store's error translation: the client printed LanceDB's
raw error (a Rust source path in it) as a warning, the service logged a traceback, and the search went on in-process."""

from __future__ import annotations

import os
import shutil

import pytest

from tests.conftest import EXAMPLES
from tests.e2e.test_one_service import memsearch, service

pytestmark = pytest.mark.slow


def test_a_lost_versions_folder_under_the_service_is_reported_as_damage_and_rebuilt(tmp_path):
    root = os.path.realpath(shutil.copytree(EXAMPLES, tmp_path / "memory", ignore=shutil.ignore_patterns(".memsearch")))
    memsearch("index", root)
    memsearch("search", root, "warehouse", "-k", "1")  # starts the service, which loads the root
    status = service()
    assert any(r["root"] == root for r in status["roots"]), status
    shutil.rmtree(os.path.join(root, ".memsearch", "chunks.lance", "_versions"))

    damaged = memsearch("search", root, "warehouse", "-k", "1", code=2)
    lines = damaged.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: the index at {root}/.memsearch is damaged"), damaged.stderr
    assert f"memsearch index {root} --rebuild" in lines[0] and ".cargo" not in damaged.stderr, damaged.stderr
    with open(os.path.join(os.path.dirname(status["socket"]), "service.log")) as f:
        assert "Traceback" not in f.read()

    memsearch("index", root, "--rebuild")
    found = memsearch("search", root, "warehouse", "-k", "1")
    assert "notes/2026-08-04.md" in found.stdout, found.stdout
