"""A command a CLI error or ``status`` suggests for an ``s3://`` index names that index (``--db``).

Before: an index built with another model answered "rebuild it with `memsearch index ROOT --rebuild`",
and ``status`` of a prefix holding no index "`memsearch index ROOT`": pasted, both act on
``ROOT/.memsearch``, not on the shared index. Real SeaweedFS on loopback, the real CLI.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from memsearch.engine.embed.embedder import HashEmbedder
from memsearch.engine.index import MemoryIndex
from tests.conftest import build

REPO = Path(__file__).resolve().parents[2]
TREE = {"MEMORY.md": "# Root\n", "notes/MEMORY.md": "# Notes\n", "notes/a.md": "# A\n\nthe heron at dawn\n"}

pytestmark = pytest.mark.slow


def _cli(s3, *args: str) -> subprocess.CompletedProcess:
    env = s3.subprocess_env(PYTHONPATH=str(REPO), HF_HUB_OFFLINE="1", MEMSEARCH_AUTOSTART="0")
    return subprocess.run([sys.executable, "-m", "memsearch", *args], env=env, capture_output=True, text=True,
                          timeout=180)


def test_an_index_of_another_model_names_the_rebuild_of_that_index(s3, tmp_path):
    root = build(tmp_path / "memory", TREE)
    MemoryIndex(root, db=s3.uri("team"), embedder=HashEmbedder()).sync()  # built with another model
    done = _cli(s3, "search", str(root), "heron", "--db", s3.uri("team"))
    assert done.returncode != 0
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    assert f"`memsearch index {root} --db {s3.uri('team')} --model all-MiniLM-L6-v2`" in done.stderr, done.stderr


def test_status_of_a_prefix_without_an_index_names_that_prefix(s3, tmp_path):
    root = build(tmp_path / "memory", TREE)
    done = _cli(s3, "status", str(root), "--db", s3.uri("nothing-here"))
    assert done.returncode == 0, done.stderr
    assert f"`memsearch index {root} --db {s3.uri('nothing-here')}`" in done.stdout, done.stdout
