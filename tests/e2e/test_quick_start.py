"""The README's quick start, as a new user runs it, with the default settings (issue 28 item 6): autostart on,
so the first call starts the per-user service and every later command works beside it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.slow


def _env() -> dict:
    env = dict(os.environ, PYTHONPATH=str(REPO), HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    env.pop("MEMSEARCH_AUTOSTART", None)  # the default: on
    return env


def memsearch(*argv: str, code: int = 0) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, "-m", "memsearch", *argv], capture_output=True, text=True, env=_env(),
                          timeout=600)
    assert done.returncode == code, (argv, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr and "being written by process" not in done.stderr, done.stderr
    return done


def test_the_quick_start_sequence_with_autostart_on(examples_copy):
    root = str(examples_copy)
    assert "valid" in memsearch("validate", root).stdout
    assert "atlas.md" in memsearch("ls", root, "projects").stdout
    assert "indexed" in memsearch("index", root).stdout
    hits = json.loads(memsearch("search", root, "which warehouse did we choose for Atlas and why", "-k", "3",
                                "--json").stdout)["hits"]
    assert hits and "warehouse" in (hits[0]["heading"] + hits[0]["text"]).lower()
    # the search started the service: every command from here on works beside it
    memsearch("edit", root, "create", "projects/heron.md", "--text",
              "# Heron\n\nThe Heron launch moved to the Tromso fjord site, chosen for its cold water intake.\n")
    again = memsearch("index", root)
    assert "indexed" in again.stdout
    found = json.loads(memsearch("search", root, "where does the Heron launch happen", "-k", "3", "--json").stdout)
    assert found["hits"][0]["path"] == "projects/heron.md"
    status = json.loads(memsearch("status", "--json").stdout)
    assert [r["root"] for r in status["roots"]] == [str(examples_copy.resolve())]
