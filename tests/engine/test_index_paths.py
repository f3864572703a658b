"""The search paths past the indexes: the ANN index is built off the sync, and rows written after
an index build (ANN or full-text) are still found."""

from __future__ import annotations

import pytest

from memsearch.engine import index as index_module
from memsearch.engine.embed.embedder import HashEmbedder
from memsearch.engine.index import MemoryIndex
from memsearch.engine.storage import store as store_module
from memsearch.service.daemon import Daemon

MIN_ROWS = 300  # the threshold these tests run at (the real one is VECTOR_INDEX_MIN_ROWS)


def _tree(files: int = 30, sections: int = 14) -> dict[str, str]:
    tree = {"MEMORY.md": "# Root\n\nCore.\n", "notes/MEMORY.md": "# Notes\n\nMany notes.\n"}
    for f in range(files):
        body = [f"# Note {f}"]
        for s in range(sections):
            words = " ".join(f"topic{(f * 7 + s * 3 + i) % 97}" for i in range(60))
            body += ["", f"## Part {s}", "", words]
        tree[f"notes/n{f:03}.md"] = "\n".join(body) + "\n"
    return tree


@pytest.fixture
def big(make_tree, tmp_path, monkeypatch):
    monkeypatch.setattr(index_module, "VECTOR_INDEX_MIN_ROWS", MIN_ROWS)
    index = MemoryIndex(make_tree(_tree()), db=tmp_path / "db", embedder=HashEmbedder(dimension=64))
    report = index.sync()
    assert report.chunks_total >= MIN_ROWS
    return index


def test_sync_never_builds_the_vector_index(big):
    assert not big.store.has_vector_index()
    assert big.vector_index_due()
    assert big.build_vector_index() is True
    assert big.store.has_vector_index() and not big.vector_index_due()
    assert big.build_vector_index() is False  # nothing due


def test_rows_written_after_the_vector_index_are_found(big):
    big.build_vector_index()
    (big.root / "notes" / "late.md").write_text("# Late\n\nzebracorn quasarbloom nebulawhisk late addition\n")
    big.sync()
    assert big.store.has_vector_index()
    hits = big.search("zebracorn quasarbloom nebulawhisk", k=3, mode="vector")
    assert big.searcher._ann is True  # the ANN path answered (not the in-memory exact search)
    assert hits and hits[0].path == "notes/late.md"
    assert big.search("zebracorn", k=3, mode="hybrid")[0].path == "notes/late.md"


def test_rows_written_after_the_fulltext_index_are_found(big):
    """New rows sit outside the FTS index until optimize(); keyword search still finds them."""
    for n in range(3):  # three syncs, three commits after the index was built
        (big.root / "notes" / f"new{n}.md").write_text(f"# New {n}\n\nflibbertigibbet{n} arrived after the index\n")
        big.sync()
    table = big.store.chunks()
    stats = table.index_stats("search_text_idx")
    assert stats is not None and stats.num_unindexed_rows > 0
    for n in range(3):
        assert big.search(f"flibbertigibbet{n}", k=3, mode="keyword")[0].path == f"notes/new{n}.md"


def test_a_long_fulltext_tail_is_folded_in_by_the_sync(big, monkeypatch):
    monkeypatch.setattr(store_module, "FTS_TAIL_MAX_ROWS", 5)
    (big.root / "notes" / "many.md").write_text("\n\n".join(f"## S{i}\n\n" + f"gobbledygook{i} " * 150 for i in range(8)))
    big.sync()
    assert big.store.fulltext_tail() == 0
    assert big.search("gobbledygook7", k=3, mode="keyword")[0].path == "notes/many.md"


def test_the_daemon_builds_the_vector_index_in_the_background(big):
    daemon = Daemon(big.root, index=big, compact=False, state_file=False).start()
    try:
        daemon.process()  # the catch-up sync: nothing changed, the index is due
        assert daemon._vector_build is not None
        daemon._vector_build.join(timeout=120)
        assert big.store.has_vector_index()
    finally:
        daemon.close()
