"""``--rebuild`` of an ``s3://`` index on a store that keeps folders (SeaweedFS) builds the index again.

Before: LanceDB's ``drop_table`` deletes a table's objects, but SeaweedFS still lists the empty
``chunks.lance/`` and ``files.lance/`` folders, so the rebuild that followed took the dropped tables
for present, failed to open them ("Table 'files' was not found") and stopped with "the index is
damaged ... rebuild it with --rebuild": every later rebuild, sync, replica and ``status`` failed the
same way, the shared index lost for good. Real SeaweedFS on loopback.
"""

from __future__ import annotations

import pytest

from memsearch.engine.embed.embedder import HashEmbedder
from memsearch.engine.index import MemoryIndex
from memsearch.engine.storage.follow import advance
from tests.s3.test_remote_index import TREE

pytestmark = pytest.mark.slow


def _paths(index, query: str) -> list[str]:
    return [h.path for h in index.search(query, k=3, mode="keyword")]


def test_a_rebuild_of_a_remote_index_builds_it_again_and_replicas_follow(s3, make_tree):
    root, uri = make_tree(TREE), s3.uri("rebuilt")
    first = MemoryIndex(root, db=uri, embedder=HashEmbedder()).sync()
    replica = MemoryIndex(root, db=uri, embedder=HashEmbedder(), read_only=True)
    assert advance(replica) is not None and _paths(replica, "warehouse") == ["projects/atlas.md"]
    rows = replica.store.chunks().count_rows()
    for _ in range(2):  # a rebuild, and one more on the rebuilt index
        rebuilt = MemoryIndex(root, db=uri, embedder=HashEmbedder(), rebuild=True)
        report = rebuilt.sync()
        assert (report.files_added, report.chunks_total) == (first.files_added, rows)
        assert rebuilt.check() is None
    assert advance(replica) is not None and replica.check() is None
    assert _paths(replica, "warehouse") == ["projects/atlas.md"]
    reader = MemoryIndex(root, db=uri, embedder=HashEmbedder())  # a fresh process's view of the prefix
    assert reader.store.chunks().count_rows() == rows and _paths(reader, "compression") == ["projects/atlas.md"]


def test_a_damaged_remote_index_is_rebuilt_and_the_log_names_the_index(s3, make_tree, caplog):
    """Before: the warning read "rebuilding the index at /home/.../state/remote/3d9c1d15569f541d: the index at
    s3://... is damaged": this machine's state folder for the index, not the index being rebuilt."""
    import obstore

    from memsearch.engine.storage.remote import RemoteDB, _object_store

    root, uri = make_tree(TREE), s3.uri("damaged")
    MemoryIndex(root, db=uri, embedder=HashEmbedder()).sync()
    store = _object_store(RemoteDB.parse(uri))
    for batch in obstore.list(store, prefix="chunks.lance/_versions"):
        for meta in batch:
            obstore.delete(store, meta["path"])
    with caplog.at_level("WARNING", logger="memsearch.index"):
        report = MemoryIndex(root, db=uri, embedder=HashEmbedder()).sync()
    assert report.repaired and _paths(MemoryIndex(root, db=uri, embedder=HashEmbedder()), "warehouse") == ["projects/atlas.md"]
    assert f"rebuilding the index at {uri}: " in caplog.text, caplog.text
