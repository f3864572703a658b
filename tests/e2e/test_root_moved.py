"""A served root moved or deleted while the per-user service holds it (issue: ghost roots), end to end with the
default settings: the real service, real files, real file events. The service unloads the old path at once (its
writer lock released, one plain log line), a request for the new path loads it normally, the old path gets the
usual "does not exist" error, and status never lists a ghost."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from memsearch.location import IndexLocation
from memsearch.service.process import verified_holder
from tests.e2e.test_one_service import memsearch, service, tree, until

pytestmark = pytest.mark.slow


def _log(status: dict) -> str:
    with open(os.path.join(os.path.dirname(status["socket"]), "service.log")) as f:
        return f.read()


def _served(root: str):
    """The service's status once it serves ``root`` with its files embedded (a hit found by vector too)."""
    hits = json.loads(memsearch("search", root, "otter", "-k", "1", "--json").stdout)["hits"]
    status = service()
    ready = any(r["root"] == root and r["chunks"] and r["phase"] == "ready" for r in status["roots"])
    return status if ready and hits and not hits[0]["partial"] else None


def test_a_moved_root_is_unloaded_and_its_new_path_served(tmp_path):
    old = os.path.realpath(tree(tmp_path, "mem", "The otter named Pip lives by the river."))
    pid = until(lambda: _served(old))["pid"]
    new = os.path.join(os.path.dirname(old), "mem2")
    os.rename(old, new)

    status = service()  # at once: a request looks at every loaded root's folder
    assert status["pid"] == pid and all(r["root"] != old for r in status["roots"]), status["roots"]
    assert old + ":" not in memsearch("status").stdout

    status = until(lambda: _served(new), timeout=120)  # loaded normally: its lock was released by the ghost
    assert status["pid"] == pid and [r["root"] for r in status["roots"]] == [new]
    assert verified_holder(IndexLocation.of(new))["pid"] == pid
    gone = memsearch("search", old, "otter", code=2)
    assert "does not exist" in gone.stderr
    log = _log(status)
    assert f"{old}: root removed or moved, unloaded" in log and "Traceback" not in log


def test_a_deleted_root_is_unloaded_with_one_plain_line(tmp_path):
    root = os.path.realpath(tree(tmp_path, "mem", "The otter named Pip lives by the river."))
    status = until(lambda: _served(root))
    shutil.rmtree(root)
    until(lambda: not service()["roots"], timeout=30)  # the watcher's wake-up unloads it with no request
    log = _log(status)
    assert f"{root}: root removed or moved, unloaded" in log
    assert "Traceback" not in log and "rebuilding" not in log and "ERROR" not in log and "damaged" not in log
    assert not os.path.exists(root)  # nothing written back into the deleted folder
