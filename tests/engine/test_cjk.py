"""CJK keyword search: unigram + bigram terms, the fusion weight for CJK queries, end to end."""

from __future__ import annotations

import json
import re
import shutil

import pytest

from memsearch.engine.embed.models import resolve_model
from memsearch.engine.index import MemoryIndex
from memsearch.engine.search.cjk import cjk_share, keyword_text
from memsearch.engine.search.fusion import CJK_VECTOR_WEIGHT, VECTOR_WEIGHT, convex, vector_weight
from tests.conftest import REPO

CJK_CORPUS = REPO / "benchmarks" / "corpora" / "cjk"


def test_keyword_text_rewrites_cjk_runs_only():
    assert keyword_text("数据库迁移") == " 数 数据 据 据库 库 库迁 迁 迁移 移 "
    english = "The deploy pipeline was rolled back."
    assert keyword_text(english) is english
    terms = re.findall(r"\w+", keyword_text("迁移到PostgreSQL，周五"))  # as the index splits words
    assert {"PostgreSQL", "迁移", "周五"} <= set(terms)
    assert keyword_text("会議") == " 会 会議 議 "
    assert keyword_text("예산은") == " 예 예산 산 산은 은 "  # a Korean particle does not hide the word
    assert keyword_text("猫") == " 猫 "


def test_cjk_share():
    assert cjk_share("") == 0.0
    assert cjk_share("rollback latency") == 0.0
    assert cjk_share("数据库") == 1.0
    assert 0.0 < cjk_share("PostgreSQL 迁移") < 0.5


def test_vector_weight_leans_on_bm25_for_cjk_with_an_english_model():
    assert vector_weight("what did we decide about the cache") == VECTOR_WEIGHT
    assert vector_weight("谁负责数据库迁移") == CJK_VECTOR_WEIGHT
    assert vector_weight("谁负责数据库迁移", multilingual=True) == VECTOR_WEIGHT
    assert resolve_model("multilingual-e5-small").multilingual
    assert resolve_model("multilingual-e5-small").query_prefix == "query: "
    assert not resolve_model("all-MiniLM-L6-v2").multilingual


def test_convex_weight_is_used():
    vector = [{"id": "a", "path": "a.md", "start_line": 1, "score": 0.9}, {"id": "b", "path": "b.md", "start_line": 1, "score": 0.1}]
    keyword = [{"id": "b", "path": "b.md", "start_line": 1, "score": 5.0}]
    assert convex(vector, keyword, 0.9)[0]["id"] == "a"
    assert convex(vector, keyword, 0.1)[0]["id"] == "b"


@pytest.fixture(scope="module")
def cjk_index(tmp_path_factory, real_embedder):
    root = tmp_path_factory.mktemp("cjk") / "memory"
    shutil.copytree(CJK_CORPUS / "memory", root)
    index = MemoryIndex(root, db=root.parent / "db", embedder=real_embedder)
    index.sync()
    return index


@pytest.mark.slow
def test_real_cjk_keyword_and_hybrid_search(cjk_index):
    """Every language is findable by keyword; most queries hit first (the bar is below the benchmark's)."""
    queries = json.loads((CJK_CORPUS / "queries.json").read_text())["queries"]
    assert len(queries) >= 30
    for mode in ("keyword", "hybrid"):
        first_file = 0
        for q in queries:
            hits = cjk_index.search(q["query"], k=5, mode=mode)
            first_file += bool(hits) and hits[0].path == q["expected"][0]["path"]
        assert first_file / len(queries) >= 0.85, (mode, first_file)
    hits = cjk_index.search("数据库迁移", k=3, mode="keyword")
    assert hits and hits[0].path == "zh/project-phoenix.md"
    assert "数据库" in hits[0].text  # hits show the stored text, never the search terms
    assert cjk_index.search("会議", k=3, mode="keyword")[0].path.startswith("ja/")
    phrase = cjk_index.search('"数据迁移脚本"', k=3, mode="keyword")  # a phrase: consecutive terms
    assert phrase and "数据迁移脚本" in phrase[0].text
    assert cjk_index.search("예산은", k=3, mode="keyword")[0].path.startswith("ko/")


@pytest.mark.slow
def test_english_keyword_search_unchanged(cjk_index, make_tree, tmp_path, real_embedder):
    root = make_tree({"MEMORY.md": "# Root\n", "notes/MEMORY.md": "# Notes\n",
                      "notes/a.md": "# Deploys\n\nThe deploy pipeline was rolled back after the latency alert.\n"})
    index = MemoryIndex(root, db=tmp_path / "db-en", embedder=real_embedder)
    index.sync()
    hits = index.search("rollback latency", k=3, mode="keyword")
    assert hits and hits[0].path == "notes/a.md"
