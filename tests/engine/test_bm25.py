"""The in-memory BM25 (memsearch.engine.search.bm25) against LanceDB's full-text index, term by term.

LanceDB stays the reference: every query here is asked of both, and the copy must return the
same rows in the same order with the same scores (to LanceDB's float rounding), filters and
phrases included, and find rows written since the full-text index was last built.
"""

from __future__ import annotations

import pytest

from memsearch.engine.embed.embedder import HashEmbedder
from memsearch.engine.index import MemoryIndex
from memsearch.engine.search.bm25 import Analyzer, MemoryBM25
from memsearch.engine.search.cjk import keyword_text
from memsearch.engine.storage.filter import Filter
from memsearch.engine.storage.schema import HIT_COLUMNS

_COLUMNS = list(HIT_COLUMNS)

TREE = {
    "MEMORY.md": "# Root\n",
    "notes/MEMORY.md": "# Notes\n",
    "notes/2026-03-01.md": "# Deploys\n\nThe deploy pipeline was rolled back after the latency alert. Running runners ran.\n",
    "notes/2026-03-09.md": "# Hello\n\nhello world, and hello the world; world hello. Having does doing yourselves.\n",
    "notes/2026-04-02.md": "# Names\n\nCafé naïve Straße Æther Łódź ＡＢＣ full width, foo_bar baz-qux atlas-00042 ClickHouse.\n",
    "projects/MEMORY.md": "# Projects\n",
    "projects/phoenix.md": "# 凤凰项目\n\n数据库迁移到PostgreSQL，周五完成。数据迁移脚本由小王负责。\n",
    "projects/hindi.md": "# भाषा\n\nनमस्ते दुनिया, हिंदी पाठ। " + "x" * 39 + " " + "y" * 40 + "\n",
    "projects/atlas.md": "# Atlas\n\nWe chose ClickHouse for the warehouse because of compression. Hello big world.\n",
}
QUERIES = [
    "deploy rollback latency", "running", "ran", "hello", "hello hello world", "world", '"hello world"',
    '"hello the world"', '"world hello"', '"big world"', '"the world"', '"hello world', "the and of", "does", "doe",
    "yourselves", "cafe", "café", "naive", "strasse", "straße", "aether", "lodz", "abc", "ＡＢＣ", "foo", "foo_bar",
    "qux", "atlas-00042", "00042", "clickhouse", "数据库迁移", "迁移", '"数据迁移脚本"', "周五", "नमस्ते", "दुनिया",
    "x" * 39, "y" * 40, "postgresql", "nothing-matches-this", "compression warehouse",
]


@pytest.fixture
def index(make_tree, tmp_path, monkeypatch):
    monkeypatch.setenv("MEMSEARCH_TEXT_FIRST_FILES", "0")  # one pass: every row in LanceDB's full-text index
    index = MemoryIndex(make_tree(TREE), db=tmp_path / "db", embedder=HashEmbedder())
    index.sync()
    return index


def lancedb_rows(index, query: str, flt: Filter = Filter(), n: int = 50) -> list[tuple[str, float]]:
    return [(r["id"], r["score"]) for r in index.store.keyword_search(keyword_text(query), n, flt, _COLUMNS)]


def memory_rows(copy: MemoryBM25, query: str, flt: Filter = Filter(), n: int = 50) -> list[tuple[str, float]]:
    return [(r["id"], r["score"]) for r in copy.search(keyword_text(query), n, flt)]


def same(expected, got) -> None:
    """Same rows, same order (ties aside), scores within LanceDB's float rounding."""
    assert {i for i, _ in got} == {i for i, _ in expected}
    want = dict(expected)
    for (i, s), (_, t) in zip(got, expected):
        assert s == pytest.approx(want[i], rel=2e-3) and s == pytest.approx(t, rel=2e-3)


def test_analysis_and_scores_match_lancedb(index):
    assert index.store.fulltext_tail() == 0  # all rows in LanceDB's full-text index
    copy = MemoryBM25(index.store.read(_COLUMNS + ["search_text"]), "test")
    matched = 0
    for query in QUERIES:
        expected = lancedb_rows(index, query)
        same(expected, memory_rows(copy, query))
        matched += bool(expected)
    assert matched >= len(QUERIES) - 6  # the queries do find rows: this compares something


def test_analyzer_terms():
    analyzer = Analyzer()
    term = analyzer.term
    assert term("Running") == term("runs") == "run"
    assert term("the") is None and term("having") is None  # stop words, matched after stemming
    assert term("does") == "doe" and term("yourselves") == "yourselv"  # LanceDB stems first, so they stay
    assert term("Café") == "cafe" and term("Straße") == "strasse" and term("ＡＢＣ") == "abc"
    assert term("x" * 39) and term("y" * 40) is None and term("é" * 20) is None  # 40 bytes or more: dropped
    assert analyzer.words("foo_bar baz-qux atlas-00042") == ["foo", "bar", "baz", "qux", "atlas", "00042"]
    assert analyzer.words("नमस्ते दुनिया") == ["नमस", "ते", "दुनिया"]  # vowel signs are letters, the virama is not
    assert [p for p, _ in analyzer.analyze("hello the big world")] == [0, 2, 3]  # dropped words keep their place


def test_phrases_and_cjk_in_memory(index):
    copy = MemoryBM25(index.store.read(_COLUMNS + ["search_text"]), "test")

    def texts(query):
        return [r["text"] for r in copy.search(keyword_text(query), 10, Filter())]

    assert len(texts('"hello world"')) == 1 and "hello world" in texts('"hello world"')[0]
    assert len(texts("hello")) == 2
    assert texts('"world hello"') and texts('"hello big world"') and not texts('"hello small world"')
    assert len(texts('"hello the world"')) == 2  # a stop word in a phrase holds a place, as in LanceDB
    assert texts('"数据迁移脚本"') and "数据迁移脚本" in texts('"数据迁移脚本"')[0]
    assert "数据库" in texts("数据库迁移")[0]
    assert not texts('"迁移数据库"')  # the same characters out of order are no phrase
    assert texts("the and of") == [] and texts('""') == []  # stop words only: no rows, no error


def test_filters_in_memory_match_lancedb(index):
    copy = MemoryBM25(index.store.read(_COLUMNS + ["search_text"]), "test")
    compared = 0
    for flt in (Filter(scope="notes"), Filter(scope="projects"), Filter(scope="note"), Filter(since="2026-03-05"),
                Filter(until="2026-03-05"), Filter(scope="notes", since="2026-03-02", until="2026-04-30"),
                Filter(scope="o'brien"), Filter(since="2026-01-01'; drop table chunks; --")):
        for query in ("hello deploy clickhouse", "world", "数据库"):
            expected = lancedb_rows(index, query, flt)
            same(expected, memory_rows(copy, query, flt))
            compared += bool(expected)
    assert compared >= 8
    assert memory_rows(copy, "world", Filter(scope="notes")) and not memory_rows(copy, "world", Filter(scope="note"))


def test_rows_written_since_the_fulltext_build_are_found_on_both_paths(index, tmp_path):
    """The FTS index covers the first build; a later sync's rows sit in LanceDB's unindexed tail
    (under FTS_TAIL_MAX_ROWS, so not folded) and both keyword paths find them."""
    (index.root / "notes" / "2026-05-01.md").write_text("# New\n\nThe zeppelin hangar opened on Friday.\n")
    index.sync()
    assert index.store.fulltext_tail() > 0
    lance = MemoryIndex(index.root, db=tmp_path / "db", embedder=index.embedder, keyword="lancedb")
    assert [h.path for h in lance.search("zeppelin hangar", mode="keyword")] == ["notes/2026-05-01.md"]
    table = index.store.chunks()
    index.keywords.ensure(index.store, (index._build, table.version))
    assert [h.path for h in index.search("zeppelin hangar", mode="keyword")] == ["notes/2026-05-01.md"]
    assert index.keywords.get(index.store, (index._build, table.version)) is not None  # it was the memory path
    same(lancedb_rows(index, "zeppelin hangar opened"), memory_rows(index.keywords.get(index.store, (index._build, table.version)),
                                                                    "zeppelin hangar opened"))


def test_copy_follows_table_versions_in_the_background(index):
    key = lambda: (index._build, index.store.chunks().version)  # noqa: E731
    assert index.search("deploy", mode="keyword")  # the first search builds the copy, in this thread
    assert index.keywords._thread is None
    built = index.keywords.get(index.store, key())
    assert built is not None and built.key == key()
    assert index.keywords.nbytes == built.nbytes > 0 and index.resident_bytes() >= built.nbytes
    (index.root / "notes" / "2026-06-01.md").write_text("# Later\n\nA quokka visited the office.\n")
    index.sync()
    assert index.keywords.get(index.store, key()) is None  # stale: LanceDB answers meanwhile
    assert [h.path for h in index.search("quokka", mode="keyword")] == ["notes/2026-06-01.md"]
    assert index.keywords.wait(timeout=60)
    fresh = index.keywords.get(index.store, key())
    assert fresh is not None and fresh.analyzer is built.analyzer  # the next version reuses the analysis
    assert [h.path for h in index.search("quokka", mode="keyword")] == ["notes/2026-06-01.md"]
    index.close()
    assert index.keywords.nbytes == 0  # close drops the copy


def test_a_compaction_keeps_searches_on_the_in_memory_copies(index, monkeypatch):
    """A compaction commits new versions of the same rows: searches during it and right after it answer
    from the copies (the same scores as before), never LanceDB's while the copies are built again."""
    key = lambda: (index._build, index.store.chunks().version)  # noqa: E731
    for day in (5, 6):  # more fragments: something to compact
        (index.root / "notes" / f"2026-06-0{day}.md").write_text(f"# Day {day}\n\nhello again, world {day}.\n")
        index.sync()
    before = [(h.path, h.score) for h in index.search("hello world", mode="keyword")]
    version = index.store.chunks().version
    asked_lancedb = []
    keyword_search = index.store.keyword_search
    monkeypatch.setattr(index.store, "keyword_search", lambda *a, **kw: asked_lancedb.append(a) or keyword_search(*a, **kw))

    def compact():
        index.store.optimize()
        during.extend((h.path, h.score) for h in index.search("hello world", mode="keyword"))

    during: list = []
    index.searcher.rewriting(compact, index._build)
    assert index.store.chunks().version > version and index.store.pinned is None
    assert index.keywords.get(index.store, key()) is not None  # moved to the new version before searches see it
    after = [(h.path, h.score) for h in index.search("hello world", mode="keyword")]
    assert during == after == before and not asked_lancedb


def test_lancedb_setting_never_builds(index, tmp_path, monkeypatch):
    monkeypatch.setenv("MEMSEARCH_KEYWORD", "lancedb")
    lance = MemoryIndex(index.root, db=tmp_path / "db", embedder=index.embedder)
    for _ in range(3):
        assert lance.search("deploy", mode="keyword")
    assert lance.keyword == "lancedb" and lance.keywords.wait() and lance.keywords._copy is None
    monkeypatch.setenv("MEMSEARCH_KEYWORD", "tantivy")
    from memsearch.errors import InvalidArgument

    with pytest.raises(InvalidArgument, match="memory or lancedb"):
        MemoryIndex(index.root, db=tmp_path / "db", embedder=index.embedder)


@pytest.mark.slow
def test_real_model_hybrid_with_the_memory_path(make_tree, tmp_path, real_embedder):
    root = make_tree(TREE)
    index = MemoryIndex(root, db=tmp_path / "db", embedder=real_embedder, keyword="memory")
    index.sync()
    lance = MemoryIndex(root, db=tmp_path / "db", embedder=real_embedder, keyword="lancedb")
    table = index.store.chunks()
    index.keywords.ensure(index.store, (index._build, table.version))
    for query, path in (("which database did we choose for the warehouse", "projects/atlas.md"),
                        ("数据库迁移", "projects/phoenix.md"), ('"hello world"', "notes/2026-03-09.md"),
                        ("atlas-00042", "notes/2026-04-02.md")):
        hits = index.search(query, k=3)
        assert hits and hits[0].path == path, (query, [h.path for h in hits])
        assert [h.path for h in hits] == [h.path for h in lance.search(query, k=3)]
    assert index.keywords.get(index.store, (index._build, table.version)) is not None


def test_both_paths_rank_ties_the_same(make_tree, tmp_path):
    # Five files that score exactly alike: LanceDB and the in-memory copy break such ties
    # differently, so without one canonical order a daemon (warm, in memory) and a cold
    # process (LanceDB) would answer the same query in different orders.
    tree = {"MEMORY.md": "# Root\n", "notes/MEMORY.md": "# Notes\n"}
    tree |= {f"notes/{name}.md": "# Milestone\n\nThe next milestone is the beta.\n" for name in "qazwx"}
    index = MemoryIndex(make_tree(tree), db=tmp_path / "db", embedder=HashEmbedder())
    index.sync()
    lance = MemoryIndex(index.root, db=tmp_path / "db", embedder=index.embedder, keyword="lancedb")
    ranked = lambda i: [(h.path, h.start_line) for h in i.search("next milestone", mode="keyword")]  # noqa: E731
    cold = ranked(lance)  # LanceDB's full-text index answers
    warm = ranked(index)  # the in-memory copy (built by this first search) answers
    assert index.keywords.get(index.store, (index._build, index.store.chunks().version)) is not None
    assert cold == warm == sorted(cold) and len(cold) == 5


def test_rows_kept_as_dicts_answer_as_arrow_rows_did(index, monkeypatch):
    """The copy's row dicts (ROW_CACHE_ROWS) give each search fresh rows equal to Arrow's, whether they
    come from the cache, from Arrow, or from a cache emptied when full."""
    import memsearch.engine.search.bm25 as bm25

    monkeypatch.setattr(bm25, "ROW_CACHE_ROWS", 3)  # smaller than most results: emptied again and again
    data = index.store.read(_COLUMNS + ["search_text"])
    arrow = data.select(_COLUMNS).to_pylist()
    copy = MemoryBM25(data, "test")
    for _ in range(2):  # the second pass reads what the first cached
        for query in QUERIES:
            rows = copy.search(keyword_text(query), 50, Filter())
            for row in rows:
                assert {k: v for k, v in row.items() if k != "score"} in arrow
                row["text"] = "changed by a caller"  # callers own what they get
            assert len(copy._row_dicts) <= 3
    assert all(r["text"] != "changed by a caller" for r in copy._row_dicts.values())


def test_the_keyword_leg_runs_inline_below_the_threshold_and_ranks_the_same(index, monkeypatch):
    """Below KEYWORD_THREAD_MIN_ROWS a hybrid search's BM25 runs in the searching thread; at the threshold in
    the worker thread; the hits are the same either way."""
    import memsearch.engine.search.searcher as searcher

    index.search("deploy")  # the copies of this version are built
    submitted = []
    pool = index.searcher._pool()
    monkeypatch.setattr(pool, "submit", lambda *a, **kw: submitted.append(a) or type(pool).submit(pool, *a, **kw))
    inline = [index.search(q) for q in QUERIES]
    assert not submitted
    monkeypatch.setattr(searcher, "KEYWORD_THREAD_MIN_ROWS", 1)
    threaded = [index.search(q) for q in QUERIES]
    assert len(submitted) == len(QUERIES)
    assert threaded == inline and any(inline)
