"""With default settings (a search auto-starts the per-user service, which indexes the root), the index directory
made for a private root is owner-only, also at a ``--db`` outside the root, where no directory above it guards the
memory's text it holds (it was 0755 with 0644 files)."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys

import pytest

from tests.conftest import EXAMPLES, REPO

SEARCH = "import sys, memsearch; print(len(memsearch.search('ClickHouse', sys.argv[1], db=sys.argv[2])))"


@pytest.mark.slow
def test_an_auto_started_service_keeps_a_private_roots_index_private(tmp_path, private_service):
    root = tmp_path / "memory"
    shutil.copytree(EXAMPLES, root, ignore=shutil.ignore_patterns(".memsearch"))
    os.chmod(root, 0o700)
    db = tmp_path / "indexes" / "mine"
    env = dict(os.environ, HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false", MEMSEARCH_AUTOSTART="1",
               XDG_RUNTIME_DIR=str(private_service))
    done = subprocess.run([sys.executable, "-c", SEARCH, str(root), str(db)], env=env, cwd=str(REPO),
                          capture_output=True, text=True, timeout=300, umask=0o022)
    assert done.returncode == 0 and int(done.stdout.split()[-1]) > 0, done.stderr[-2000:]
    assert stat.S_IMODE(os.stat(db).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(tmp_path / "indexes").st_mode) == 0o755  # its parents are made as usual
    for private in (db / "writer.lock", private_service / "memsearch" / "service.log",
                    private_service / "memsearch" / "service.start.lock"):  # under umask 022: 0644 before
        assert stat.S_IMODE(os.stat(private).st_mode) == 0o600, private
