"""The engine's plumbing: the writer lock's purpose per hold, the bounded model cache, the damage reason,
the one error translation, and the compiled filter's two forms."""

from __future__ import annotations

import numpy as np
import pytest

from memsearch.engine.embed import embedder as embedder_module
from memsearch.engine.embed.embedder import HashEmbedder, load_embedder
from memsearch.engine.index import MemoryIndex
from memsearch.engine.storage.filter import Filter
from memsearch.engine.storage.lock import WriterLock, lock_holder
from memsearch.errors import IndexDamaged, StorageFull

TREE = {"MEMORY.md": "# Root\n", "notes/MEMORY.md": "# Notes\n", "notes/a.md": "# A\n\nthe heron at dawn\n"}


def test_a_hold_records_its_own_purpose_and_gives_the_lock_back_its_own(tmp_path):
    lock = WriterLock(tmp_path, purpose="index")
    lock.acquire(purpose="watch")
    lock.acquire()  # a second hold (a sync inside the daemon's) keeps the first one's purpose
    assert lock_holder(tmp_path)["purpose"] == "watch" and lock.purpose == "watch"
    lock.release()
    assert lock.purpose == "watch"
    lock.release()
    assert lock.purpose == "index" and lock_holder(tmp_path) is None
    lock.acquire()
    assert lock_holder(tmp_path)["purpose"] == "index"
    lock.release()


def test_the_index_takes_its_lock_purpose_as_an_argument(make_tree, tmp_path):
    index = MemoryIndex(make_tree(TREE), db=tmp_path / "db", embedder=HashEmbedder(), lock_purpose="watch")
    with index.lock.writing():
        assert lock_holder(index.db_path)["purpose"] == "watch"


def test_the_model_cache_is_bounded_and_keyed_by_what_builds_the_embedder(monkeypatch):
    monkeypatch.setattr(embedder_module, "_CACHE", type(embedder_module._CACHE)())
    monkeypatch.setattr(embedder_module, "MODEL_CACHE_SIZE", 2)
    first = load_embedder(device="cuda:0")  # torch on a device: chosen, not loaded (lazy)
    assert load_embedder(device="cuda:0") is first
    monkeypatch.setenv("MEMSEARCH_BATCH_SIZE", "7")
    other = load_embedder(device="cuda:0")
    assert other is not first and other.batch_size == 7  # a setting the embedder reads: a new one
    monkeypatch.delenv("MEMSEARCH_BATCH_SIZE")
    assert load_embedder(device="cuda:0") is first
    load_embedder(device="cuda:1")  # the third: the least recently asked for (batch size 7) goes
    assert len(embedder_module._CACHE) == 2
    assert load_embedder(device="cuda:0") is first
    monkeypatch.setenv("MEMSEARCH_BATCH_SIZE", "7")
    assert load_embedder(device="cuda:0") is not other


def test_a_damaged_index_says_its_reason_without_the_fix(make_tree, tmp_path):
    root = make_tree(TREE)
    index = MemoryIndex(root, db=tmp_path / "db", embedder=HashEmbedder())
    index.sync()
    index.store.meta_path.write_text("{not json")
    with pytest.raises(IndexDamaged) as caught:
        MemoryIndex(root, db=tmp_path / "db", embedder=HashEmbedder())
    assert "--rebuild" in str(caught.value) and "--rebuild" not in caught.value.reason
    assert caught.value.reason.startswith("the index parameters in ") and "unreadable" in caught.value.reason
    repaired = MemoryIndex.open_repairing(root, db=tmp_path / "db", embedder=HashEmbedder()).sync()
    assert repaired.files_added == 2  # notes/a.md and notes/MEMORY.md


def test_the_store_guard_types_what_the_store_raises(make_tree, tmp_path):
    index = MemoryIndex(make_tree(TREE), db=tmp_path / "db", embedder=HashEmbedder())
    with pytest.raises(IndexDamaged, match=r"is damaged \(broken\)\. .*--rebuild"):
        with index.store.guard():
            raise RuntimeError("broken")
    with pytest.raises(StorageFull, match="permission denied"):
        with index.store.guard():
            raise PermissionError(13, "Permission denied")
    with pytest.raises(KeyboardInterrupt):  # a Ctrl-C is never turned into an index error
        with index.store.guard():
            raise KeyboardInterrupt


def test_the_filter_compiles_one_rule_to_sql_and_to_masks():
    dirs = np.array(["notes", "notes/deep", "notesy", ".", "o'brien"], dtype=object)
    dates = np.array(["2026-03-01", "", "2026-05-01", "2026-04-01", "2026-03-15"], dtype=object)
    assert Filter().sql() is None and Filter().mask(dirs, dates) is None
    assert list(Filter(scope="notes").mask(dirs, dates)) == [True, True, False, False, False]
    assert list(Filter(since="2026-03-10", until="2026-04-30").mask(dirs, dates)) == [False, False, False, True, True]
    assert list(Filter(scope="o'brien", until="2026-03-31").mask(dirs, dates)) == [False, False, False, False, True]
    assert Filter(scope="o'brien").sql() == "(dir = 'o''brien' OR starts_with(dir, 'o''brien/'))"
    with pytest.raises(ValueError):
        Filter(since="2026\x00").sql()
