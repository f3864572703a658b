"""Indexing and search: incremental behaviour, filters, MEMORY.md discovery, parameter checks.

Most behaviour runs with the deterministic HashEmbedder for speed; test_real_* repeat the
essentials with the real default model and real LanceDB end to end.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from memsearch.engine.embed.embedder import HashEmbedder
from memsearch.engine.index import MemoryIndex
from memsearch.engine.ingest.chunker import ChunkerConfig
from memsearch.errors import IndexMismatch, InvalidArgument, PathOutsideRoot

TREE = {
    "MEMORY.md": "# Root\n\nCore memory about the team.\n",
    "persona.md": "# Persona\nHelpful.\n",
    "projects/MEMORY.md": "# Projects\n\nAll active projects.\n",
    "projects/atlas.md": "# Atlas\n\n## Decisions\n\nWe chose ClickHouse for the warehouse because of compression.\n\n"
    "## Team\n\nMaya leads Atlas with Kenji.\n",
    "projects/atlas/MEMORY.md": "# Atlas internals\n\nSchema and incidents of Atlas.\n",
    "projects/atlas/incidents.md": "# Incidents\n\n## INC-7\n\nThe ingest job crashed with error code 252 on a full disk.\n",
    "projects/o'brien's plan.md": "# Quote plan\n\nApostrophes in names must not break filters.\n",
    "notes/MEMORY.md": "# Notes\n\nDaily notes.\n",
    "notes/2026-08-04.md": "# Aug 4\n\nDeploy of the billing service went fine.\n",
    "notes/2026-09-25.md": "# Sep 25\n\nDeploy broke the API for 38 minutes.\n",
    "notes/undated.md": "---\ndate: 2026-10-10\n---\n# Retro\n\nDeploy retro held.\n",
    "skills/x/SKILL.md": "# Skill\nDeploy skill text.\n",
    ".hidden/secret.md": "# Secret\nDeploy secret.\n",
}


@pytest.fixture
def index(make_tree, tmp_path):
    root = make_tree(TREE)
    return MemoryIndex(root, db=tmp_path / "db", embedder=HashEmbedder())


def paths(hits):
    return [h.path for h in hits]


def test_only_external_memory_is_indexed(index):
    report = index.sync()
    assert report.files_added == 9 and report.files_removed == 0
    rows = index.store.chunks().to_arrow().column("path").to_pylist()
    assert not any(p in ("MEMORY.md", "persona.md") or p.startswith(("skills", ".hidden")) for p in rows)
    assert "projects/atlas/MEMORY.md" in rows


def test_include_core(make_tree, tmp_path):
    index = MemoryIndex(make_tree(TREE), db=tmp_path / "db", embedder=HashEmbedder(), include_core=True)
    index.sync()
    assert "persona.md" in paths(index.search("helpful persona", k=3, mode="keyword"))
    reopened = MemoryIndex(index.root, db=tmp_path / "db", embedder=HashEmbedder())
    assert reopened.include_core  # remembered by the index


def test_noop_resync_reads_nothing(index):
    index.sync()
    report = index.sync()
    assert (report.files_unchanged, report.chunks_embedded, report.changed) == (9, 0, False)


def test_insert_line_on_top_reembeds_only_changed_chunks(index):
    index.sync()
    path = index.root / "projects/atlas.md"
    before = index.search("ClickHouse compression warehouse", k=1, mode="keyword")[0]
    path.write_text("A new first line, above the title.\n\n" + path.read_text())
    report = index.sync()
    assert report.files_changed == 1
    assert report.chunks_embedded == 1 and report.chunks_reused == 2
    hit = index.search("ClickHouse compression warehouse", k=1, mode="keyword")[0]
    assert hit.path == "projects/atlas.md"
    # moved down two lines, without re-embedding: same text, and its line range is exact in the new file
    assert (hit.start_line, hit.end_line) == (before.start_line + 2, before.end_line + 2) == (3, 7)
    assert hit.text == before.text
    assert hit.text == "\n".join(path.read_text().splitlines()[hit.start_line - 1 : hit.end_line])
    assert "We chose ClickHouse" in hit.text


def test_delete_and_rename(index):
    index.sync()
    (index.root / "notes/2026-08-04.md").unlink()
    (index.root / "projects/atlas/incidents.md").rename(index.root / "projects/atlas/outages.md")
    report = index.sync()
    assert report.files_removed == 2 and report.files_added == 1
    assert report.chunks_embedded == 0 and report.chunks_reused >= 1  # the rename reuses its vectors
    all_paths = set(index.store.chunks().to_arrow().column("path").to_pylist())
    assert "notes/2026-08-04.md" not in all_paths and "projects/atlas/incidents.md" not in all_paths
    assert paths(index.search("error code 252", k=1, mode="keyword")) == ["projects/atlas/outages.md"]


def test_scope_and_dates(index):
    index.sync()
    assert set(paths(index.search("deploy", k=10, mode="keyword", scope="notes"))) == {
        "notes/2026-08-04.md",
        "notes/2026-09-25.md",
        "notes/undated.md",
    }
    assert all(p.startswith("notes/") for p in paths(index.search("deploy", k=10, scope="notes/")))
    assert paths(index.search("deploy", k=10, mode="keyword", since="2026-09-01", until="2026-09-30")) == [
        "notes/2026-09-25.md"
    ]
    assert paths(index.search("deploy", k=10, mode="keyword", since="2026-10-01")) == ["notes/undated.md"]
    scoped = index.search("Atlas", k=10, scope="projects/atlas")
    assert scoped and all(h.dir == "projects/atlas" for h in scoped)


def test_filters_are_injection_safe(index):
    index.sync()
    hits = index.search("apostrophes", k=3, mode="keyword", scope="projects")
    assert "projects/o'brien's plan.md" in paths(hits)
    assert index.search("deploy", k=5, scope="notes' OR '1'='1") == []
    with pytest.raises(PathOutsideRoot):
        index.search("deploy", scope="../elsewhere")
    for bad in ("2026-13-01", "yesterday; DROP"):
        with pytest.raises(InvalidArgument):
            index.search("deploy", since=bad)


def test_bad_arguments(index):
    index.sync()
    for kwargs in (
        {"query": ""},
        {"query": "x", "k": 0},
        {"query": "x", "mode": "fuzzy"},
        {"query": "x", "k": "3"},
        {"query": "x", "since": "2026-10-01", "until": "2026-01-01"},
    ):
        with pytest.raises(InvalidArgument):
            index.search(**kwargs)
    assert index.search("the and of", k=3, mode="keyword") == []  # stop words only: no hits, no error


def test_memory_md_and_chain_at_depths(index):
    index.sync()
    deep = index.search("error code 252 full disk", k=1, mode="keyword")[0]
    assert deep.path == "projects/atlas/incidents.md"
    assert deep.memory_md.path == "projects/atlas/MEMORY.md"
    assert deep.memory_md.title == "Atlas internals" and deep.memory_md.summary == "Schema and incidents of Atlas."
    assert deep.memory_chain == ("projects/atlas/MEMORY.md", "projects/MEMORY.md", "MEMORY.md")
    mid = index.search("ClickHouse warehouse", k=1, mode="keyword")[0]
    assert mid.memory_chain == ("projects/MEMORY.md", "MEMORY.md")
    data = json.loads(json.dumps(deep.to_dict()))
    assert data["memory_md"]["path"] == "projects/atlas/MEMORY.md" and data["memory_chain"][-1] == "MEMORY.md"


def test_overlapping_hits_are_merged(make_tree, tmp_path):
    body = "# Log\n" + "\n".join(f"line {i}: deploy pipeline status ok" for i in range(80))
    root = make_tree({"MEMORY.md": "", "logs/MEMORY.md": "# Logs", "logs/run.md": body})
    index = MemoryIndex(
        root, db=tmp_path / "db", embedder=HashEmbedder(), chunker=ChunkerConfig(max_tokens=60, overlap_lines=2)
    )
    index.sync()
    hits = index.search("deploy pipeline status", k=10)
    spans = [(h.start_line, h.end_line) for h in hits if h.path == "logs/run.md"]
    for i, (s1, e1) in enumerate(spans):
        for s2, e2 in spans[i + 1 :]:
            assert e1 < s2 or e2 < s1, spans  # no two hits of one file overlap


def test_parameter_mismatch_on_open(index, tmp_path):
    index.sync()
    with pytest.raises(IndexMismatch, match="--rebuild"):
        MemoryIndex(index.root, db=tmp_path / "db", embedder=HashEmbedder(dimension=32))
    with pytest.raises(IndexMismatch, match="chunker"):
        MemoryIndex(index.root, db=tmp_path / "db", embedder=HashEmbedder(), chunker=ChunkerConfig(max_tokens=50))
    rebuilt = MemoryIndex(index.root, db=tmp_path / "db", embedder=HashEmbedder(dimension=32), rebuild=True)
    assert rebuilt.sync().files_added == 9


def test_index_recorded_before_long_line_factor_keeps_chunking_alike_until_rebuilt(make_tree, tmp_path):
    paragraph = " ".join(["The taper starts three weeks out and volume drops to about eighty percent."] * 10)
    chat = "# Chat\n\n**User:** Any advice?\n\n" + paragraph + "\n\n" + paragraph + "\n"
    root = make_tree({"MEMORY.md": "", "chats/2026-03-01.md": chat})
    old = MemoryIndex(root, db=tmp_path / "db", embedder=HashEmbedder(),
                      chunker=ChunkerConfig(max_tokens=80, long_line_factor=1, turn_opens_chunk=False))
    old.sync()
    assert old.store.read_meta()["chunker"] == {"max_tokens": 80, "overlap_lines": 2}  # as before the factor
    assert not any(h.text == paragraph for h in old.search("taper volume", k=5))  # cut at 80 tokens
    old.close()
    reopened = MemoryIndex(root, db=tmp_path / "db", embedder=HashEmbedder(), chunker=None)
    assert reopened.chunker.long_line_factor == 1  # no mismatch, no silent change of chunking
    assert not reopened.chunker.turn_opens_chunk  # nor of where a user's turn goes
    reopened.close()
    with pytest.raises(IndexMismatch, match="chunker"):
        MemoryIndex(root, db=tmp_path / "db", embedder=HashEmbedder(), chunker=ChunkerConfig(max_tokens=80))
    rebuilt = MemoryIndex(root, db=tmp_path / "db", embedder=HashEmbedder(), chunker=ChunkerConfig(max_tokens=80),
                          rebuild=True)
    rebuilt.sync()
    assert any(h.text == paragraph for h in rebuilt.search("taper volume", k=5))  # whole at 2 x 80 tokens
    rebuilt.close()


def test_empty_index_searches_cleanly(make_tree, tmp_path):
    index = MemoryIndex(make_tree({"MEMORY.md": "# only core"}), db=tmp_path / "db", embedder=HashEmbedder())
    assert index.sync().chunks_total == 0
    assert index.search("anything") == []


# --- the real model, end to end ---------------------------------------------------------------


@pytest.mark.slow
def test_real_model_examples_quality(examples_copy, real_embedder, tmp_path):
    """The bundled query set: most questions find an expected file in the first 5 hits."""
    from tests.conftest import REPO

    index = MemoryIndex(examples_copy, db=tmp_path / "db", embedder=real_embedder)
    report = index.sync()
    assert report.files_added >= 25 and report.chunks_embedded == report.chunks_total
    fixture = json.loads((REPO / "tests/fixtures/examples_queries.json").read_text())
    found = 0
    for q in fixture["queries"]:
        hits = index.search(q["query"], k=5)
        expected = {e["path"] for e in q["expected"]}
        found += bool(expected & set(paths(hits)))
    assert found / len(fixture["queries"]) >= 0.8, found


@pytest.mark.slow
def test_real_model_finds_a_fact_buried_in_a_paragraph_line(make_tree, real_embedder, tmp_path):
    """A chat with a paragraph a line: the paragraph holding the fact is one whole hit, not a slice of it."""
    filler = ("It depends on how much time you can put into the plan each week, and on what else is going on. "
              "Start small and keep a short log of what you did after every session. Most of the progress "
              "comes from boring consistency rather than from clever tricks or expensive new equipment.")
    fact = ("For the long runs, practise fuelling every 40 minutes with a gel and some water, so your stomach is "
            "used to it on race day.")
    answer = f"{filler} {fact} {filler}"
    chat = "\n\n".join(["# Chat 2026-03-02", "**User:** How should I handle food on long runs?",
                         f"**Assistant:** {filler}", answer, f"{filler} {filler}"]) + "\n"
    root = make_tree({"MEMORY.md": "", "chats/2026-03-02.md": chat})
    found = {}
    for factor in (1, 2):
        with MemoryIndex(root, db=tmp_path / f"db{factor}", embedder=real_embedder,
                         chunker=ChunkerConfig(long_line_factor=factor)) as index:
            index.sync()
            found[factor] = index.search("How often should I take a gel on long runs?", k=1)[0]
    lines = {f: hit.text.split("\n") for f, hit in found.items()}
    assert found[2].start_line <= 7 <= found[2].end_line and answer in lines[2]  # the answering line, whole
    assert answer not in lines[1] and fact in found[1].text  # without the factor: a slice of it (130+ tokens)


@pytest.mark.slow
def test_real_model_incremental_and_nested(examples_copy, real_embedder, tmp_path):
    index = MemoryIndex(examples_copy, db=tmp_path / "db", embedder=real_embedder)
    index.sync()
    target = examples_copy / "projects/atlas/incidents.md"
    front, body = target.read_text().split("\n---\n", 1)
    target.write_text(front + "\n---\nNote added on top by the agent.\n" + body)  # first body line
    report = index.sync()
    assert report.files_changed == 1 and 1 <= report.chunks_embedded <= 2 and report.chunks_reused >= 3
    (examples_copy / "notes/2026-12-01.md").write_text("# Dec 1\n\nThe quokka migration finished at 14:05.\n")
    assert index.sync().files_added == 1
    hit = index.search("when did the quokka migration finish", k=1)[0]
    assert hit.path == "notes/2026-12-01.md" and hit.memory_md.path == "notes/MEMORY.md"
    nested = index.search("atlas incidents", k=10, scope="projects/atlas")
    assert nested and all(h.memory_md.path == "projects/atlas/MEMORY.md" for h in nested)


@pytest.mark.slow
def test_real_cli_index_search_no_network(examples_copy, tmp_path):
    """`memsearch index` and `search --json` in a fresh process with every socket refused."""
    script = textwrap.dedent("""
        import socket, sys
        def refuse(*a, **k):
            raise AssertionError("network access attempted")
        socket.socket.connect = refuse
        socket.create_connection = refuse
        socket.getaddrinfo = refuse
        from memsearch.cli.app import main
        sys.exit(main(sys.argv[1:]))
    """)
    run = lambda *args: subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True)  # noqa: E731
    indexed = run("index", str(examples_copy), "--db", str(tmp_path / "db"), "--json")
    assert indexed.returncode == 0, indexed.stderr
    assert json.loads(indexed.stdout)["files_added"] >= 25
    found = run(
        "search",
        str(examples_copy),
        "leaked API key in a public repository",
        "--db",
        str(tmp_path / "db"),
        "--json",
        "-k",
        "3",
    )
    assert found.returncode == 0, found.stderr
    hits = json.loads(found.stdout)["hits"]
    assert hits and {
        "path",
        "start_line",
        "end_line",
        "heading",
        "text",
        "score",
        "date",
        "memory_md",
        "memory_chain",
    } <= set(hits[0])
    queries = tmp_path / "q.jsonl"
    queries.write_text(
        '{"qid": "a", "query": "Stripe webhook signature"}\n{"qid": "b", "query": "flood model", "scope": "projects"}\n'
    )
    batch = run("search", str(examples_copy), "--queries", str(queries), "--db", str(tmp_path / "db"), "-k", "2")
    assert batch.returncode == 0, batch.stderr
    lines = [json.loads(x) for x in batch.stdout.splitlines()]
    assert [x["qid"] for x in lines] == ["a", "b"]
    assert all(h["path"].startswith("projects/") for h in lines[1]["hits"])
    bad = run("search", str(examples_copy), "x", "--mode", "fuzzy", "--db", str(tmp_path / "db"))
    assert bad.returncode == 2 and bad.stderr.startswith("error:") and "Traceback" not in bad.stderr


def test_in_memory_vector_search_matches_lancedb(index):
    """The numpy copy returns what LanceDB's own exact search returns, filters included."""
    from memsearch.engine.search.flat import FlatVectors
    from memsearch.engine.storage.filter import Filter
    from memsearch.engine.storage.schema import HIT_COLUMNS

    index.sync()
    table = index.store.chunks()
    flat = FlatVectors(index.store.read(list(HIT_COLUMNS) + ["vector"]), table.version)
    vector = index.embedder.embed_query("deploy broke the API")
    compared = 0
    for flt in (
        Filter(),
        Filter(scope="notes"),
        Filter(since="2026-09-01"),
        Filter(scope="projects", until="2026-01-01"),
    ):
        q = (
            table.search(vector, vector_column_name="vector")
            .distance_type("cosine")
            .limit(5)
            .select(["id", "_distance"])
        )
        if flt.sql():
            q = q.where(flt.sql(), prefilter=True)
        expected = [(r["id"], round(1 - r["_distance"], 4)) for r in q.to_list()]
        got = [(r["id"], round(r["score"], 4)) for r in flat.search(vector, 5, flt)]
        assert [s for _, s in got] == [s for _, s in expected]
        if not got:  # nothing passes this filter (the projects have no dates)
            continue
        compared += 1
        # every id carries its own exact score (LanceDB's, over all rows the filter keeps) ...
        q_all = (
            table.search(vector, vector_column_name="vector")
            .distance_type("cosine")
            .limit(10_000)
            .select(["id", "_distance"])
        )
        if flt.sql():
            q_all = q_all.where(flt.sql(), prefilter=True)
        true_score = {r["id"]: round(1 - r["_distance"], 4) for r in q_all.to_list()}
        assert len({i for i, _ in got}) == len(got) and all(true_score[i] == s for i, s in got)
        # ... and only ids tied at the cut may differ from LanceDB's choice
        cut = got[-1][1]
        assert {i for i, s in got if s > cut} == {i for i, s in expected if s > cut}
    assert compared == 3


def test_a_hit_s_dict_is_its_dataclass_fields(examples_copy, tmp_path):
    """Hit.to_dict builds the dict field by field (the daemon's hot path): it must say what asdict says."""
    from dataclasses import asdict, fields

    from memsearch.engine.search.hits import Hit

    index = MemoryIndex(examples_copy, db=tmp_path / "db", embedder=HashEmbedder())
    index.sync()
    hits = [h for query in ("vendor contract", "kayak", "milestone deadline") for h in index.search(query, k=10)]
    assert any(h.memory_md is not None for h in hits) and any(len(h.memory_chain) > 1 for h in hits)
    for hit in hits + [Hit("a.md", "", 1, 2, "", "t", 0.5, None, None, (), stale=True, partial=True)]:
        assert hit.to_dict() == asdict(hit) | {"memory_chain": list(hit.memory_chain)}
        assert list(hit.to_dict()) == [f.name for f in fields(Hit)]


def test_another_model_by_name_is_refused_with_the_command_that_rebuilds_for_it(index, tmp_path):
    """A bare ``--rebuild`` would build with the default model again, and the same search would fail again: for a
    model of models.toml the hint names ``index --model`` with the model asked for (the message the index's own);
    a name no ``--model`` takes keeps the plain rebuild."""
    index.sync()
    with pytest.raises(IndexMismatch, match="'hash-test', not 'bge-small-en-v1.5'") as caught:
        MemoryIndex(index.root, db=tmp_path / "db", embedder=HashEmbedder(name="bge-small-en-v1.5"))
    assert caught.value.hint.render("cli").endswith("`memsearch index ROOT --model bge-small-en-v1.5`")
    assert "memory_list and memory_read still work" in caught.value.hint.render("tools")
    with pytest.raises(IndexMismatch, match="`memsearch index ROOT --rebuild`"):
        MemoryIndex(index.root, db=tmp_path / "db", embedder=HashEmbedder(name="hash-other"))
