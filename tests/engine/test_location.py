"""Where an index lives, said in one place (memsearch.location), and every --db parsed by it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from memsearch.errors import InvalidArgument
from memsearch.location import MAX_SOCKET_PATH, IndexLocation
from tests.conftest import REPO

TREE = {"MEMORY.md": "# Root\n\nCore.\n", "notes/MEMORY.md": "# Notes\n\nNotes.\n", "notes/a.md": "# A\n\nkayaks\n"}


def test_a_local_index_and_its_files(make_tree, tmp_path, monkeypatch):
    monkeypatch.delenv("MEMSEARCH_DB", raising=False)
    root = make_tree(TREE)
    where = IndexLocation.of(root)
    assert where.root == root.resolve() and where.state == root.resolve() / ".memsearch" and where.remote is None
    assert where.db == where.state and where.label == str(where.state)
    assert [p.name for p in (where.lock_file, where.holder_file, where.state_file, where.pid_file, where.log_file)] == [
        "writer.lock", "writer.json", "daemon.json", "daemon.pid", "daemon.log"]
    assert where.socket == where.state / "run" / "daemon.sock" and where.meta_file == where.state / "index.json"
    assert not where.state.exists()  # asking creates nothing
    monkeypatch.chdir(tmp_path)
    assert IndexLocation.of(root, "rel/idx").state == tmp_path / "rel" / "idx"  # absolute once, whoever asks
    monkeypatch.setenv("MEMSEARCH_DB", str(tmp_path / "env-idx"))
    assert IndexLocation.of(root).state == tmp_path / "env-idx"
    assert IndexLocation.of(root, tmp_path / "given").state == tmp_path / "given"  # the argument wins


def test_a_remote_index_keeps_this_machines_state_under_the_state_dir(make_tree, tmp_path, monkeypatch):
    root = make_tree(TREE)
    monkeypatch.setenv("MEMSEARCH_STATE_DIR", str(tmp_path / "state"))
    where = IndexLocation.of(root, "s3://bucket//team/a/")
    assert where.remote == "s3://bucket/team/a" and where.db == "s3://bucket/team/a" and where.label == where.remote
    assert where.state.parent == tmp_path / "state" / "remote" and where.meta_file is None
    assert IndexLocation.of(root, "s3://bucket/team/a").state == where.state  # one state dir per canonical URI
    ddb = IndexLocation.of(root, "s3+ddb://bucket/p?ddbTableName=t")
    assert ddb.remote == "s3+ddb://bucket/p?ddbTableName=t" and ddb.state != where.state
    assert where.ensure_state() == where.state and oct(os.stat(where.state).st_mode & 0o777) == "0o700"
    assert IndexLocation.of(root, where) is where  # a location passes through unchanged
    for bad in ("gs://bucket/p", "s3:///p"):
        with pytest.raises(InvalidArgument):
            IndexLocation.of(root, bad)


def test_a_long_index_path_gets_a_short_socket(make_tree, tmp_path):
    root = make_tree(TREE)
    where = IndexLocation.of(root, tmp_path / ("d" * 80) / ("e" * 80))
    assert len(os.fsencode(where.socket)) <= MAX_SOCKET_PATH and where.socket.name.endswith(".sock")


def test_no_other_module_spells_the_index_files():
    names = ["writer.lock", "writer.json", "writer.lease.json", "daemon.json", "daemon.pid", "daemon.log",
             "daemon.sock", "daemon.start.lock", "index.json", ".memsearch"]
    found = []
    for path in (REPO / "memsearch").rglob("*.py"):
        if path.name == "location.py":
            continue
        code = "\n".join(line for line in path.read_text().splitlines()
                         if not line.lstrip().startswith("#"))  # names in prose (docstrings) are fine: not in quotes
        for name in names:
            if re.search(r"""["']""" + re.escape(name) + r"""["']""", code):
                found.append(f"{path.relative_to(REPO)}: {name}")
    assert not found, found


@pytest.mark.slow
def test_edit_with_an_s3_db_never_writes_a_local_folder_named_after_it(examples_copy, tmp_path):
    """Issue 24 item 3: `edit --db s3://bucket/p` took the address as a local path (./s3:/bucket/p)."""
    work = tmp_path / "cwd"
    work.mkdir()
    env = dict(os.environ, PYTHONPATH=str(REPO), AWS_ENDPOINT_URL="http://127.0.0.1:9", AWS_ALLOW_HTTP="true",
               AWS_ACCESS_KEY_ID="x", AWS_SECRET_ACCESS_KEY="y", MEMSEARCH_STATE_DIR=str(tmp_path / "state"))
    done = subprocess.run([sys.executable, "-m", "memsearch", "edit", str(examples_copy), "create",
                           "/memories/notes/zz.md", "--text", "# ZZ\n\nzebra\n", "--db", "s3://bucket/p"],
                          cwd=work, env=env,
                          capture_output=True, text=True, timeout=300)
    assert list(work.iterdir()) == [] and not Path(examples_copy / "s3:").exists()
    assert "Traceback" not in done.stderr
    # the write went to the memory; the index is the s3 one, unreachable here, and says so
    assert (examples_copy / "notes" / "zz.md").is_file()
    assert "cannot reach the object store" in done.stderr and "s3://bucket/p" in done.stderr


def test_a_db_that_is_a_file_is_refused_and_left_alone(make_tree, tmp_path, monkeypatch):
    """``--db notes.txt`` (a file) is a usage mistake naming the fix, not an index "damaged: rebuild it"."""
    root = make_tree(TREE)
    precious = tmp_path / "precious.txt"
    precious.write_text("keep me\n")
    with pytest.raises(InvalidArgument, match="is a file, not a folder"):
        IndexLocation.of(root, precious)
    monkeypatch.setenv("MEMSEARCH_DB", str(precious))
    with pytest.raises(InvalidArgument, match="MEMSEARCH_DB"):
        IndexLocation.of(root)
    done = subprocess.run([sys.executable, "-m", "memsearch", "index", str(root), "--db", str(precious), "--rebuild"],
                          capture_output=True, text=True, cwd=REPO, timeout=120)
    assert done.returncode == 2 and done.stderr.startswith("error: ") and "is a file" in done.stderr, done.stderr
    assert "rebuild" not in done.stderr and precious.read_text() == "keep me\n"


def test_a_runtime_dir_too_long_for_a_socket_moves_the_service_to_the_temp_dir(tmp_path, monkeypatch):
    import tempfile

    from memsearch.location import service_dir, service_socket

    long_runtime = tmp_path / ("r" * 120)
    long_runtime.mkdir()
    short = Path(tempfile.mkdtemp(prefix="ms-t-"))
    monkeypatch.setattr(tempfile, "tempdir", str(short))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(long_runtime))
    assert service_dir() == short / f"memsearch-{os.getuid()}"
    assert len(os.fsencode(service_socket())) <= MAX_SOCKET_PATH
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))  # short enough: used as before
    assert service_dir() == tmp_path / "memsearch"
    short.rmdir()
