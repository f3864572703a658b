"""Odd and hostile queries: phrases work (the full-text index stores positions), bad text is
cleaned or refused with a typed error, and nothing escapes the library or the tools."""

from __future__ import annotations

import pytest

from memsearch.cli.app import main
from memsearch.engine.embed.embedder import HashEmbedder
from memsearch.engine.index import MODES, MemoryIndex, clean_text
from memsearch.engine.search.timeline import TIMELINE_ROWS_PER_HIT
from memsearch.errors import InvalidArgument, MemsearchError
from memsearch.tools import ToolBox
from tests.conftest import build

FILES = {
    "MEMORY.md": "# Root\n",
    "notes/MEMORY.md": "# Notes\nmeeting notes\n",
    "notes/greet.md": "# Greetings\nWe said hello world to the new team on Monday.\n",
    "notes/other.md": "# Other\nThe world said hello back, much later.\n",
    "notes/billing.md": "# Billing\nError E-4012 means the Stripe webhook secret is stale.\n",
}

#: Queries that must answer (hits or none) in every mode, never raise.
ODD = [
    '"hello world"', '"world hello"', '"hello', 'hello"', '""', '"', "'", "'hello world'", '"hello world" stripe',
    "hello AND world", "hello OR", "NOT", "a:b", "search_text:hello", "(", ")", "[x]", "{", "}", "\\", "*", "?", "^2",
    "~", "+-", "-hello", "hello -world", '"world hello"~2', "E-4012", "E-4012 OR 1=1", "'; DROP TABLE chunks; --",
    "%", "_", "héllo wörld", "こんにちは 世界", "🙂", "\ufffd", "\u200b", "hello\u0000world", "\t\n hello \r",
    "x" * 5000, "hello " * 2000, "notes/../..", "${HOME}", "$(rm -rf /)", "<script>", "\x1b[31mred",
    "hello\udcff", "\ud800", "\udfff hello", "a\ud83d", "\udc80\udc81",
]


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    root = build(tmp_path_factory.mktemp("q") / "memory", FILES)
    idx = MemoryIndex(root, db=tmp_path_factory.mktemp("db"), embedder=HashEmbedder())
    idx.sync()
    return idx


def test_phrase_query_matches_the_phrase_only(index):
    hits = index.search('"hello world"', mode="keyword")
    assert [h.path for h in hits] == ["notes/greet.md"]
    both = {h.path for h in index.search("hello world", mode="keyword")}
    assert both >= {"notes/greet.md", "notes/other.md"}
    assert index.search('"hello world"', mode="hybrid")[0].path == "notes/greet.md"


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("query", ODD, ids=[repr(q)[:30] for q in ODD])
def test_odd_query_answers(index, query, mode):
    hits = index.search(query, k=3, mode=mode)
    assert isinstance(hits, list) and len(hits) <= 3 * (TIMELINE_ROWS_PER_HIT if mode == "timeline" else 1)


@pytest.mark.parametrize("query", ["", "   ", "\n\t"])
def test_empty_query_is_a_typed_error(index, query):
    with pytest.raises(InvalidArgument):
        index.search(query)


@pytest.mark.parametrize("text,expected", [("hello", "hello"), ("a\ud800b", "a\ufffdb"), ("caf\udcc3\udca9", "café"),
                                           ("\udcff", "\ufffd")])
def test_clean_text(text, expected):
    assert clean_text(text) == expected


@pytest.mark.parametrize("query", ODD[::4], ids=[repr(q)[:30] for q in ODD[::4]])
def test_toolbox_search_never_escapes(index, query):
    toolbox = ToolBox(index.root, index=index, sync=False)
    result = toolbox.dispatch("memory_search", {"query": query, "mode": "keyword"})
    assert "hits" in result or result["error"]["type"] in ("InvalidArgument",)
    assert toolbox.tokens(result) <= toolbox.budget


def test_real_model_phrase_and_surrogates(tmp_path, real_embedder, capsys):
    root = build(tmp_path / "memory", FILES)
    idx = MemoryIndex(root, db=tmp_path / "db", embedder=real_embedder)
    idx.sync()
    for mode in MODES:
        for query in ('"hello world"', "\ud800 hello", "stripe\udcff webhook"):
            try:
                hits = idx.search(query, k=2, mode=mode)
            except MemsearchError as exc:  # a typed error is acceptable, a TypeError is not
                pytest.fail(f"{mode} {query!r}: {exc}")
            assert len(hits) <= 2 * (TIMELINE_ROWS_PER_HIT if mode == "timeline" else 1)
    assert idx.search('"hello world"', mode="keyword")[0].path == "notes/greet.md"
    for query in ('"hello world"', "hello\udcff"):  # the second: invalid UTF-8 bytes from a shell
        for mode in MODES:
            try:
                code = main(["search", str(root), query, "--db", str(idx.db_path), "--no-sync", "--mode", mode])
            except SystemExit as exc:
                code = exc.code
            out, err = capsys.readouterr()
            assert code in (0, None) and "Traceback" not in err, err
