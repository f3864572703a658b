"""The service's folder (``$XDG_RUNTIME_DIR/memsearch``) left open to other users: a search narrows it to 0700, as
the service does, and starts the service; one it cannot make private starts nothing and says so in one line, with
the fix, where the service used to be silently never started."""

from __future__ import annotations

import os
import stat
import subprocess
import sys

from tests.conftest import run_cli

MEMORY = {"MEMORY.md": "# Memory\n\nCore.\n", "notes/MEMORY.md": "# Notes\n\nDaily notes.\n",
          "notes/a.md": "# Atlas\n\nWe chose ClickHouse for the warehouse.\n"}


def search(root) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "memsearch", "search", str(root), "ClickHouse", "-k", "1"],
                          capture_output=True, text=True, timeout=300)


def test_an_open_folder_of_ones_own_is_narrowed_and_the_service_started(make_tree, private_service, autostart):
    folder = private_service / "memsearch"
    folder.mkdir()
    folder.chmod(0o777)
    result = search(make_tree(MEMORY))
    assert result.returncode == 0 and "notes/a.md" in result.stdout and result.stderr == "", result
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert (folder / "service.start.lock").exists()  # the service was started (its start file written)


def test_a_folder_that_is_no_folder_of_ones_own_is_warned_in_one_line(make_tree, private_service, autostart):
    folder = private_service / "memsearch"
    folder.write_text("not a folder")
    result = search(make_tree(MEMORY))
    assert result.returncode == 0 and "notes/a.md" in result.stdout, result
    assert result.stderr.strip() == (f"warning: the memsearch service was not started: its folder {folder} is not a "
                                     "folder: move it away, or set XDG_RUNTIME_DIR to a folder of your own (this "
                                     "search is answered in-process)")


def test_a_mode_that_cannot_be_narrowed_is_warned_naming_chmod(make_tree, private_service, autostart, capsys,
                                                                 monkeypatch):
    folder = private_service / "memsearch"
    folder.mkdir()
    folder.chmod(0o777)

    chmod = os.chmod

    def refused(path, mode, *args, **kwargs):
        if os.fspath(path) != str(folder):
            return chmod(path, mode, *args, **kwargs)
        raise PermissionError(1, "Operation not permitted", str(path))

    monkeypatch.setattr(os, "chmod", refused)  # as on a folder this user owns but may not change (a read-only mount)
    code, out, err = run_cli(["search", str(make_tree(MEMORY)), "ClickHouse", "-k", "1", "--mode", "keyword"], capsys)
    assert code == 0 and "notes/a.md" in out
    assert err.strip() == (f"warning: the memsearch service was not started: its folder {folder} is open to other "
                           f"users (mode 777) and could not be made private: `chmod 700 {folder}`, then search again "
                           "(this search is answered in-process)")
    assert not (folder / "service.start.lock").exists()
