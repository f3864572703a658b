"""`make install` puts a working `memsearch` on PATH: a link to the virtualenv's entry point, which runs from a
clean environment (`env -i`, as a GUI client or a new login shell starts it); `make uninstall` removes it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

ENTRY = Path(sys.executable).parent / "memsearch"


@pytest.mark.skipif(shutil.which("make") is None or not ENTRY.exists(), reason="needs make and an installed venv")
def test_make_install_links_a_command_that_runs_from_a_clean_environment(tmp_path):
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "memsearch").symlink_to(ENTRY)  # the venv `make setup` built, seen through VENV=
    (venv / ".installed").touch()  # setup is done: make must not reinstall anything
    prefix = tmp_path / "prefix"
    make = ["make", "--no-print-directory", "-C", str(REPO), f"VENV={venv}", f"PREFIX={prefix}"]
    done = subprocess.run(make + ["install"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    linked = prefix / "bin" / "memsearch"
    assert linked.is_symlink() and linked.resolve() == ENTRY.resolve()
    assert "is not on PATH" in done.stdout  # the tmp prefix is not: the user is told what to add

    ran = subprocess.run(["env", "-i", f"PATH={prefix / 'bin'}:/usr/bin:/bin", f"HOME={tmp_path}",
                          "memsearch", "validate", str(REPO / "examples" / "memory")],
                         capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr
    assert "valid" in ran.stdout

    done = subprocess.run(make + ["uninstall"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert not linked.exists() and not linked.is_symlink()
