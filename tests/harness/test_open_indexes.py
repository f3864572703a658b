"""The process's open indexes (memsearch.harness.api): an LRU bounded by count (MEMSEARCH_MAX_OPEN) and
by estimated memory (MEMSEARCH_OPEN_MB), evicted indexes closed, never under a search that uses them."""

from __future__ import annotations

import threading

import pytest

from memsearch import settings
from memsearch.errors import InvalidArgument
from memsearch.harness import api
from memsearch.harness.tools import ToolBox


def tree(i: int) -> dict[str, str]:
    return {
        "MEMORY.md": f"# Tenant {i}\n\nCore.\n",
        "notes/MEMORY.md": "# Notes\n\nDaily notes.\n",
        "notes/a.md": f"# A\n\nTenant {i} keeps the warehouse note: code-{i} chose ClickHouse.\n",
    }


@pytest.fixture
def fresh(monkeypatch, real_embedder):
    """An empty table of open indexes for the test (the real model, loaded once per session)."""
    monkeypatch.setattr(api, "_OPEN", type(api._OPEN)())
    yield
    api.close_indexes()


def closed(index) -> bool:
    return index.searcher._executor is None and index.searcher._flat is None


def search_hits(root, tmp_path, i):
    return api.search(f"code-{i} warehouse", root, k=1, db=tmp_path / f"db{i}", local=True)


def test_the_bounds_are_settings():
    assert settings.get("max_open") == 16 and settings.get("open_mb") == 1024
    assert settings.get("max_open", environ={"MEMSEARCH_MAX_OPEN": "3"}) == 3
    with pytest.raises(InvalidArgument, match="MEMSEARCH_OPEN_MB"):
        settings.get("open_mb", environ={"MEMSEARCH_OPEN_MB": "0"})


def test_count_bound_evicts_the_least_recently_used_and_it_reopens(fresh, make_tree, tmp_path, monkeypatch):
    monkeypatch.setenv("MEMSEARCH_MAX_OPEN", "2")
    roots = [make_tree(tree(i)) for i in range(3)]
    first = api.open_index(roots[0], db=tmp_path / "db0")
    for i, root in enumerate(roots):
        assert search_hits(root, tmp_path, i)[0]["text"].count(f"code-{i}") == 1
    assert [r["root"] for r in api.open_indexes()] == [str(roots[1]), str(roots[2])]
    assert closed(first)
    again = search_hits(roots[0], tmp_path, 0)  # the evicted root opens again and answers
    assert "code-0" in again[0]["text"]
    reopened = api.open_index(roots[0], db=tmp_path / "db0")
    assert reopened is not first and reopened.embedder is first.embedder  # one model for all of them
    assert [r["root"] for r in api.open_indexes()] == [str(roots[2]), str(roots[0])]


def test_memory_bound_evicts_by_estimated_bytes(fresh, make_tree, tmp_path):
    roots = [make_tree(tree(i)) for i in range(3)]
    for i, root in enumerate(roots):
        search_hits(root, tmp_path, i)
    sizes = [r["bytes"] for r in api.open_indexes()]
    flat = api.open_index(roots[2], db=tmp_path / "db2").searcher._flat
    assert flat is not None and flat.nbytes > flat.matrix.nbytes  # the rows' text is counted too
    assert all(size > 256 * 1024 for size in sizes)
    evicted, kept = api.open_index(roots[0], db=tmp_path / "db0"), api.open_index(roots[2], db=tmp_path / "db2")
    assert api.trim(max_bytes=sum(sizes)) == 0
    api.open_index(roots[1], db=tmp_path / "db1")  # the LRU order is now 0, 2, 1
    assert api.trim(max_bytes=sizes[1] + sizes[2]) == 1  # room for two of them
    assert closed(evicted) and not closed(kept)
    assert [r["root"] for r in api.open_indexes()] == [str(roots[2]), str(roots[1])]
    assert api.trim(max_bytes=1) == 1  # the most recently used always stays, even past the bound
    assert [r["root"] for r in api.open_indexes()] == [str(roots[1])]
    assert closed(kept)
    assert "code-2" in search_hits(roots[2], tmp_path, 2)[0]["text"]  # and an evicted root reopens


def test_memory_bound_from_the_environment(fresh, make_tree, tmp_path, monkeypatch):
    monkeypatch.setenv("MEMSEARCH_OPEN_MB", "1")  # each small index is estimated at about 0.26 MB
    roots = [make_tree(tree(i)) for i in range(6)]
    for i, root in enumerate(roots):
        assert f"code-{i}" in search_hits(root, tmp_path, i)[0]["text"]
        assert sum(r["bytes"] for r in api.open_indexes()) <= 2**20
    opened = api.open_indexes()
    assert 1 < len(opened) < 6 and opened[-1]["root"] == str(roots[-1])


def test_an_evicted_index_in_use_is_closed_only_after_its_search(fresh, make_tree, tmp_path, monkeypatch):
    monkeypatch.setenv("MEMSEARCH_MAX_OPEN", "1")
    roots = [make_tree(tree(i)) for i in range(3)]
    inside, go_on, hits = threading.Event(), threading.Event(), []

    def searcher() -> None:
        with api.using_index(roots[0], db=tmp_path / "db0") as index:
            index.sync()
            hits.extend(index.search("code-0 warehouse", k=1))
            inside.set()
            go_on.wait(60)
            assert not closed(index)  # evicted by the other thread, but not closed under us
            hits.extend(index.search("code-0 warehouse", k=1))
        assert closed(index)  # closed by its last user on the way out

    worker = threading.Thread(target=searcher)
    worker.start()
    assert inside.wait(60)
    for i in (1, 2):
        search_hits(roots[i], tmp_path, i)  # evicts roots[0] while it is in use
    assert [r["root"] for r in api.open_indexes()] == [str(roots[2])]
    go_on.set()
    worker.join(60)
    assert [h.path for h in hits] == ["notes/a.md", "notes/a.md"]


def test_a_toolbox_keeps_answering_after_its_index_is_evicted(fresh, make_tree, tmp_path, monkeypatch):
    monkeypatch.setenv("MEMSEARCH_MAX_OPEN", "1")
    roots = [make_tree(tree(i)) for i in range(2)]
    boxes = [ToolBox(root, db=tmp_path / f"db{i}", daemon=False) for i, root in enumerate(roots)]
    for _ in range(2):
        for i, box in enumerate(boxes):
            result = box.call("memory_search", {"query": f"code-{i} warehouse", "k": 1})
            assert f"code-{i}" in result["hits"][0]["snippet"]
            assert [r["root"] for r in api.open_indexes()] == [str(roots[i])]
