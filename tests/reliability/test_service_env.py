"""Bad settings in the environment (default settings: the real service, the real model).

A bad setting in the environment of a command that would start the per-user service: the command says the
variable and what it accepts in one line, exits 2, and starts nothing with it (the service inherits the
environment). Before, a bad ``MEMSEARCH_DEBOUNCE_MS`` answered the search in-process with exit 0 while the
service refused the root in its log only, and a bad ``MEMSEARCH_IDLE_EXIT`` stamped a start that never ran,
holding off the next command's start for a minute. The next command with a clean environment starts the
service at once. An index folder that cannot be made (``MEMSEARCH_DB`` below a file, on /proc) is one line
naming ``--db``, never damage to rebuild."""

from __future__ import annotations

import os

import pytest

from tests.e2e.test_one_service import memsearch, service, tree, until

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("variable, value, accepts", [
    ("MEMSEARCH_DEBOUNCE_MS", "-5", "a whole number of milliseconds from 1 to 60000"),
    ("MEMSEARCH_IDLE_EXIT", "abc", "a whole number of seconds, 0 for never"),
])
def test_a_bad_setting_is_said_by_the_command_and_never_reaches_the_service(tmp_path, monkeypatch, variable, value,
                                                                             accepts):
    root = os.path.realpath(tree(tmp_path, "mem", "The otter named Pip lives by the river."))
    monkeypatch.setenv(variable, value)
    refused = memsearch("search", root, "otter", code=2)
    assert refused.stderr.strip().splitlines() == [f"error: {variable}='{value}' is not valid: "
                                                   f"{variable[10:].lower()} accepts {accepts}"]
    assert not service()["running"]

    monkeypatch.delenv(variable)
    memsearch("search", root, "otter")
    status = until(lambda: (s := service())["running"] and s["roots"] and s, timeout=30)
    assert [r["root"] for r in status["roots"]] == [root]
    with open(os.path.join(os.path.dirname(status["socket"]), "service.log")) as f:
        log = f.read()
    assert "cannot serve" not in log and "Traceback" not in log


@pytest.mark.parametrize("db", ["a-file/index", "/proc/memsearch-index"])
def test_an_index_folder_that_cannot_be_made_names_db_not_a_rebuild(tmp_path, monkeypatch, db):
    """Before: "the index ... is damaged ... rebuild it with `memsearch index ROOT --rebuild`", which cannot help."""
    root = os.path.realpath(tree(tmp_path, "mem", "The otter named Pip lives by the river."))
    (tmp_path / "a-file").write_text("not a folder\n")
    monkeypatch.setenv("MEMSEARCH_DB", db if db.startswith("/") else str(tmp_path / db))
    for argv in (["search", root, "otter"], ["index", root]):
        refused = memsearch(*argv, code=2).stderr.strip().splitlines()
        assert len(refused) == 1 and refused[0].startswith("error: cannot make the index folder "), refused
        assert "--db DIR (or set MEMSEARCH_DB)" in refused[0] and "rebuild" not in refused[0]
    assert sorted(os.listdir(root)) == ["MEMORY.md", "notes"]  # nothing made, nothing lost
