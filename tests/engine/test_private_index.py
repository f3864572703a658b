"""A local index holds the memory's text, so its directory is made as a new memory directory is: owner-only
whatever the umask, or with the read bits of a root shared for reading (storage/store.py, memory/files.py). And
memsearch.search() names a query of the wrong type as such, not as an empty one."""

from __future__ import annotations

import os
import stat

import pytest

from memsearch.engine.search.args import check_search
from memsearch.engine.storage.store import Store
from memsearch.errors import InvalidArgument


@pytest.mark.parametrize("root_mode, index_mode", [(0o700, 0o700), (0o755, 0o755), (0o750, 0o750), (0o777, 0o700)])
def test_a_new_index_directory_is_as_private_as_the_root(make_tree, tmp_path, root_mode, index_mode):
    root = make_tree({"MEMORY.md": "# M\n\nm\n", "notes/MEMORY.md": "# N\n\nn\n"})
    os.chmod(root, root_mode)
    old = os.umask(0o022)
    try:
        Store(tmp_path / "elsewhere" / "index", root=root)  # --db outside the root: nothing above it guards it
        Store(root / ".memsearch", root=root)
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "elsewhere" / "index").st_mode) == index_mode
    assert stat.S_IMODE(os.stat(root / ".memsearch").st_mode) == index_mode


def test_an_existing_index_directory_keeps_its_mode(tmp_path):
    (tmp_path / "index").mkdir(mode=0o755)
    os.chmod(tmp_path / "index", 0o755)
    Store(tmp_path / "index", root=tmp_path)
    assert stat.S_IMODE(os.stat(tmp_path / "index").st_mode) == 0o755


@pytest.mark.parametrize("query", [5, None, ["deploy"], b"deploy"])
def test_a_query_that_is_not_text_is_named_so(tmp_path, query):
    with pytest.raises(InvalidArgument, match=r"the query must be text \(a string\), got "):
        check_search(tmp_path, query)


def test_the_daemons_start_makes_the_index_directory_private(make_tree, tmp_path):
    from memsearch.location import IndexLocation

    root = make_tree({"MEMORY.md": "# M\n\nm\n"})
    os.chmod(root, 0o700)
    old = os.umask(0o022)
    try:
        made = IndexLocation.of(root, tmp_path / "db").ensure_state()  # what starting a daemon makes first
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(made).st_mode) == 0o700


@pytest.mark.parametrize("root_mode, lock_mode", [(None, 0o700), (0o755, 0o755), (0o777, 0o700)])
def test_the_writer_lock_makes_its_folder_as_an_index_folder(tmp_path, root_mode, lock_mode):
    """The lock may come first (a writer before the store): its folder is then made by make_index_dir too."""
    from memsearch.engine.storage.lock import WriterLock

    root = tmp_path / "memory"
    root.mkdir()
    if root_mode is not None:
        os.chmod(root, root_mode)
    old = os.umask(0o022)
    try:
        lock = WriterLock(tmp_path / "state" / "index", root=root if root_mode is not None else None).acquire(timeout=0)
        lock.release()
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "state" / "index").st_mode) == lock_mode
