"""`memsearch index --model NAME`: rebuilds the index for another model, and fails clearly (losing nothing) offline."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

FILES = {"MEMORY.md": "# Memory\n\nCore.\n", "notes/MEMORY.md": "# Notes\n\nNotes.\n",
         "notes/a.md": "# Kayaks\n\nWe rented two kayaks on the lake in June.\n"}


def run(*args):
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    return subprocess.run([sys.executable, "-m", "memsearch", *args], capture_output=True, text=True, env=env, check=False)


@pytest.mark.slow
def test_index_with_a_hub_model_offline_fails_clearly_and_keeps_the_index(make_tree):
    root = str(make_tree(FILES))
    # a first build with a model that cannot load records nothing: a later plain index is not refused
    failed = run("index", root, "--model", "bge-small-en-v1.5")
    assert failed.returncode == 2 and "Traceback" not in failed.stderr
    assert "Hugging Face hub" in failed.stderr and "HF_HUB_OFFLINE" in failed.stderr and "--model /path" in failed.stderr
    assert run("index", root).returncode == 0
    # switching an existing index to that model rebuilds it for the model, which cannot load: the old index stays
    switched = run("index", root, "--model", "bge-small-en-v1.5")
    assert switched.returncode == 2 and "rebuilding it with bge-small-en-v1.5" in switched.stderr
    assert "Hugging Face hub" in switched.stderr and "Traceback" not in switched.stderr
    found = run("search", root, "kayaks on the lake", "--local", "--json", "--no-sync")
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)["hits"][0]["path"] == "notes/a.md"
    # an unknown name is a clear error too
    unknown = run("index", root, "--model", "no-such-model")
    assert unknown.returncode == 2 and "Traceback" not in unknown.stderr


@pytest.mark.slow
def test_an_index_of_another_model_names_the_index_run_that_rebuilds_it_for_the_model_asked(make_tree):
    """The hint was `memsearch index ROOT --rebuild`, which builds with the default model again: for a search with
    `--model M` the same error came back. It names `memsearch index ROOT --model M`, which rebuilds for M."""
    root = make_tree(FILES)
    assert run("index", str(root)).returncode == 0
    asked = run("search", str(root), "kayaks", "--local", "--model", "bge-small-en-v1.5")
    assert asked.returncode == 2 and asked.stderr.count("\n") == 1, asked.stderr
    assert asked.stderr.rstrip().endswith(f"`memsearch index {root} --model bge-small-en-v1.5`"), asked.stderr
    # an index recorded as another registry model's, searched with the default: the hint, pasted, fixes it
    meta = root / ".memsearch" / "index.json"
    data = json.loads(meta.read_text())
    meta.write_text(json.dumps(data | {"model": "bge-small-en-v1.5", "fingerprint": "bge-small-en-v1.5:0123456789abcdef"}))
    refused = run("search", str(root), "kayaks", "--local")
    assert refused.returncode == 2, refused.stderr
    hint = refused.stderr.rstrip().rsplit("`", 2)[1]
    assert hint == f"memsearch index {root} --model all-MiniLM-L6-v2", refused.stderr
    assert run(*hint.split()[1:]).returncode == 0
    found = run("search", str(root), "kayaks on the lake", "--local", "--json")
    assert found.returncode == 0 and json.loads(found.stdout)["hits"][0]["path"] == "notes/a.md", found.stderr
