"""A root, or its index folder, deleted while the per-user service indexes it (default settings: the real service,
the real model, real file events). The service stops writing there: no rebuild, no new index folder in the tree
being deleted (which would make the user's ``rm -rf`` fail), no traceback in its log; the next command on the same
path works. Before, the sync took the vanished data files for damage and rebuilt the index where it had been."""

from __future__ import annotations

import json
import os
import shutil
import time

import pytest

from tests.e2e.test_one_service import memsearch, service, until

pytestmark = pytest.mark.slow

NOTES = 300


def big_tree(base) -> str:
    """A root whose first build takes the service several seconds (NOTES notes of 200 lines)."""
    root = base / "mem"
    (root / "notes").mkdir(parents=True)
    (root / "MEMORY.md").write_text("# Memory\n\nCore memory.\n")
    (root / "notes" / "MEMORY.md").write_text("# Notes\n\nDated notes.\n")
    for i in range(NOTES):
        lines = "\n".join(f"Line {j}: the otter named Pip{i} swims by mill {(i * 7 + j) % 997}." for j in range(200))
        (root / "notes" / f"n{i:04d}.md").write_text(f"# Note {i}\n\n{lines}\n")
    return os.path.realpath(root)


def syncing(root: str):
    """The service's status once it embeds ``root``'s files (its first build under way)."""
    memsearch("search", root, "otter", "-k", "1")
    status = service()
    return status if any(r["root"] == root and r["state"] == "syncing" and r["pending"] for r in status["roots"]) \
        else None


def log_of(status: dict) -> str:
    with open(os.path.join(os.path.dirname(status["socket"]), "service.log")) as f:
        return f.read()


def quiet(log: str) -> None:
    assert "Traceback" not in log and "rebuilding the index" not in log and "ERROR" not in log, log


def test_an_index_folder_deleted_mid_sync_is_not_recreated(tmp_path):
    root = big_tree(tmp_path)
    status = until(lambda: syncing(root))
    shutil.rmtree(os.path.join(root, ".memsearch"))
    until(lambda: all(r["root"] != root for r in service().get("roots", [])), timeout=120)  # unloaded, with no request
    time.sleep(3)  # a rebuild would have started by now
    assert not os.path.exists(os.path.join(root, ".memsearch")), os.listdir(os.path.join(root, ".memsearch"))
    log = log_of(status)
    quiet(log)
    assert f"{root}: root removed or moved, unloaded" in log, log
    assert len(os.listdir(os.path.join(root, "notes"))) == NOTES + 1  # the memory is untouched

    # the next command on the root indexes it into a new folder, as on a first run
    hits = json.loads(memsearch("search", root, "Pip7 swims", "-k", "1", "--json").stdout)["hits"]
    assert hits and os.path.isdir(os.path.join(root, ".memsearch"))


def test_a_root_deleted_mid_sync_is_deleted_whole(tmp_path):
    root = big_tree(tmp_path)
    status = until(lambda: syncing(root))
    shutil.rmtree(root)  # raises "Directory not empty" if the service writes into the tree meanwhile
    until(lambda: not service().get("roots", []), timeout=120)
    time.sleep(3)
    assert not os.path.exists(root)
    log = log_of(status)
    quiet(log)
    assert f"{root}: root removed or moved, unloaded" in log, log
    gone = memsearch("search", root, "otter", code=2)
    assert "does not exist" in gone.stderr
