"""A bad setting in the environment of a command that would start the per-user service (default settings: the
real service, the real model). The command says the variable and what it accepts in one line and exits 2, and
starts nothing with it: the service inherits the environment and reads these settings over its life, so before, a
bad ``MEMSEARCH_DEBOUNCE_MS`` answered the search in-process with exit 0 while the service refused the root in
its log only, and a bad ``MEMSEARCH_IDLE_EXIT`` stamped a start that never ran, holding off the next command's
start for a minute. The next command with a clean environment starts the service at once."""

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
