"""Index parameters refused by name: a tokenizer that cannot load (``MEMSEARCH_ENCODING=foo``) before an index is
dropped or recorded, and one model's other vectors (``MEMSEARCH_QUANTIZE=int8``) by their fingerprints."""

from __future__ import annotations

import pytest

from memsearch.engine.embed.embedder import HashEmbedder
from memsearch.engine.index import MemoryIndex
from memsearch.errors import TokenizerUnavailable

TREE = {
    "MEMORY.md": "# Root\n\nCore memory.\n",
    "projects/MEMORY.md": "# Projects\n\nActive projects.\n",
    "projects/atlas.md": "# Atlas\n\nWe chose ClickHouse for the warehouse.\n",
}


def test_a_rebuild_with_an_unknown_encoding_keeps_the_index(make_tree, tmp_path):
    root, db = make_tree(TREE), tmp_path / "db"
    MemoryIndex(root, db=db, embedder=HashEmbedder()).sync()
    with pytest.raises(TokenizerUnavailable, match="unknown tiktoken encoding 'foo'"):
        MemoryIndex(root, db=db, embedder=HashEmbedder(), rebuild=True, encoding="foo").sync()
    kept = MemoryIndex(root, db=db, embedder=HashEmbedder())  # opens: the index records cl100k_base still
    assert [hit.path for hit in kept.search("ClickHouse warehouse", mode="keyword")] == ["projects/atlas.md"]
    assert kept.sync().files_unchanged == 2


def test_a_first_build_with_an_unknown_encoding_records_nothing(make_tree, tmp_path):
    root, db = make_tree(TREE), tmp_path / "db"
    with pytest.raises(TokenizerUnavailable):
        MemoryIndex(root, db=db, embedder=HashEmbedder(), encoding="foo").sync()
    assert MemoryIndex(root, db=db, embedder=HashEmbedder()).sync().files_added == 2


def test_opening_with_an_unknown_encoding_says_so_rather_than_asking_for_a_rebuild(make_tree, tmp_path, monkeypatch):
    root, db = make_tree(TREE), tmp_path / "db"
    MemoryIndex(root, db=db, embedder=HashEmbedder()).sync()
    monkeypatch.setenv("MEMSEARCH_ENCODING", "foo")
    with pytest.raises(TokenizerUnavailable, match="'foo' \\(set by MEMSEARCH_ENCODING\\)"):
        MemoryIndex(root, db=db, embedder=HashEmbedder())


def test_one_model_with_other_vectors_names_the_fingerprints_and_the_rebuild(make_tree, tmp_path):
    """MEMSEARCH_QUANTIZE=int8 on an index built in FP32 said 'built with embedding model all-MiniLM-L6-v2, not
    all-MiniLM-L6-v2' and proposed `--model all-MiniLM-L6-v2`: the names agree, the vectors do not."""
    from memsearch.errors import IndexMismatch

    root, db = make_tree(TREE), tmp_path / "db"
    MemoryIndex(root, db=db, embedder=HashEmbedder(dimension=64, name="same")).sync()
    with pytest.raises(IndexMismatch) as refused:
        MemoryIndex(root, db=db, embedder=HashEmbedder(dimension=32, name="same"))
    message = str(refused.value)
    assert "'same:64', not 'same:32'" in message and "`memsearch index ROOT --rebuild`" in message, message
