"""Benchmarks: the scoring functions (hand-computed values), the corpora, and a smoke run."""

from __future__ import annotations

import importlib.util
import json
import math

import pytest

from benchmarks import metrics
from benchmarks.metrics import Item, Span
from tests.conftest import REPO


def H(path, a, b):
    return Span(path, a, b)


# --- metrics -----------------------------------------------------------------------------------
def test_file_recall_counts_distinct_files_in_rank_order():
    hits = [H("a", 1, 2), H("b", 1, 2), H("a", 5, 6), H("c", 1, 1)]
    items = [Item("a", (1, 1)), Item("d")]
    assert metrics.file_recall(hits, items, 1) == 0.5
    assert metrics.file_recall(hits, items, 2) == 0.5
    assert metrics.file_recall(hits, [Item("c")], 2) == 0.0  # c is the third distinct file
    assert metrics.file_recall(hits, [Item("c")], 3) == 1.0
    assert metrics.distinct_files(hits, 10) == ["a", "b", "c"]


def test_line_budget_recall_reads_distinct_lines_and_cuts_the_last_hit():
    hits = [H("a", 1, 5), H("a", 3, 7), H("b", 1, 10)]  # a: 7 distinct lines, then b
    items = [Item("a", (7, 7)), Item("b", (4, 4))]
    assert metrics.line_budget_recall(hits, items, 5) == 0.0  # a 1-5 only
    assert metrics.line_budget_recall(hits, items, 7) == 0.5  # a 1-7
    assert metrics.line_budget_recall(hits, items, 10) == 0.5  # a 1-7, b 1-3
    assert metrics.line_budget_recall(hits, items, 11) == 1.0  # b 4 read
    assert metrics.line_budget_recall(hits, [Item("b", (20, 30))], 100) == 0.0
    assert metrics.line_budget_recall(hits, [Item("b", (9, 30))], 100) == 1.0  # one line of the span is enough
    assert metrics.line_budget_recall(hits, [Item("b")], 8) == 1.0  # whole-file item: any line of b


def test_token_budget_recall_stops_before_the_line_that_would_go_over():
    hits = [H("a", 1, 4), H("b", 1, 4)]
    cost = {("a", 1): 10, ("a", 2): 10, ("a", 3): 10, ("a", 4): 50, ("b", 1): 5, ("b", 2): 5, ("b", 3): 5, ("b", 4): 5}
    tokens = lambda p, n: cost[(p, n)]  # noqa: E731
    assert metrics.token_budget_recall(hits, [Item("a", (3, 3))], 29, tokens) == 0.0
    assert metrics.token_budget_recall(hits, [Item("a", (3, 3))], 30, tokens) == 1.0
    # a 4 (50 tokens) does not fit in 79, and reading stops there: b is never reached
    assert metrics.token_budget_recall(hits, [Item("b", (1, 1))], 79, tokens) == 0.0
    assert metrics.token_budget_recall(hits, [Item("b", (1, 1))], 85, tokens) == 1.0


def test_mrr_is_the_reciprocal_rank_of_the_first_covering_hit():
    items = [Item("a", (10, 12))]
    assert metrics.mrr([H("a", 1, 9), H("b", 1, 50), H("a", 12, 20)], items) == pytest.approx(1 / 3)
    assert metrics.mrr([H("a", 10, 10)], items) == 1.0
    assert metrics.mrr([H("x", 1, 1)] * 10 + [H("a", 1, 20)], items, k=10) == 0.0  # rank 11 is outside @10
    assert metrics.mrr([], items) == 0.0


def test_ndcg_with_novelty_hand_computed():
    items = [Item("a", (1, 1)), Item("b", (5, 5))]
    ideal = 1 + 1 / math.log2(3)
    # miss, item a at rank 2, item a again at rank 3 (no new gain), item b at rank 4
    hits = [H("x", 1, 1), H("a", 1, 3), H("a", 1, 1), H("b", 4, 6)]
    assert metrics.ndcg(hits, items) == pytest.approx((1 / math.log2(3) + 1 / math.log2(5)) / ideal)
    assert metrics.ndcg([H("a", 1, 1), H("b", 5, 5)], items) == pytest.approx(1.0)
    assert metrics.ndcg([H("b", 5, 5)], items) == pytest.approx(1 / ideal)
    # one hit covering both items: gain 2 at rank 1, capped at 1
    assert metrics.ndcg([H("a", 1, 1)], [Item("a", (1, 1)), Item("a", (1, 2))]) == 1.0
    assert metrics.ndcg([H("b", 5, 5)], items, k=0) == 0.0
    assert metrics.ndcg([], []) == 0.0


def test_summarize_means_overall_and_per_category():
    rows = [{"m": 1.0}, {"m": 0.0}, {"m": 0.5}]
    out = metrics.summarize(rows, ["x", "y", "x"])
    assert out["all"] == {"n": 3, "m": 0.5}
    assert out["x"] == {"n": 2, "m": 0.75} and out["y"] == {"n": 1, "m": 0.0}


# --- corpora -----------------------------------------------------------------------------------
def test_examples_fixture_is_valid_and_points_at_real_lines():
    data = json.loads((REPO / "tests/fixtures/examples_queries.json").read_text())
    assert data["version"] == 1
    ids = [q["id"] for q in data["queries"]]
    assert len(ids) == len(set(ids)) >= 20
    for q in data["queries"]:
        assert q["query"].strip() and q["expected"]
        for e in q["expected"]:
            lines = (REPO / "examples/memory" / e["path"]).read_text().split("\n")
            if "lines" in e:
                a, b = e["lines"]
                assert 1 <= a <= b <= len(lines), (q["id"], e)


def test_synthetic_generator_is_deterministic_and_plants_facts(tmp_path):
    from benchmarks.synthetic import generate
    from memsearch.memory.validator import validate

    one = generate(tmp_path / "one", 60, seed=3)
    two = generate(tmp_path / "two", 80, seed=3)
    assert two[:60] == one  # a larger tree starts with the smaller one
    assert validate(tmp_path / "one").valid
    kinds = {p.kind for p in two}
    assert {"notes", "projects"} <= kinds
    for p in one:
        line = (tmp_path / "one" / p.path).read_text().split("\n")[p.line - 1]
        code = next(w for w in p.query.replace(",", " ").split() if "-" in w and w[-1].isdigit())
        assert code in line and "error budget" in line
    assert (tmp_path / "one" / "human.md").is_file()
    text = "\n".join(f.read_text() for f in (tmp_path / "two").rglob("*.md"))
    assert "```" in text and "\n---\ntitle:" in text and ("- [ ]" in text or "- [x]" in text)


def test_bm25s_peer_windows_cover_every_line_once():
    spec = importlib.util.spec_from_file_location("bm25s_adapter", REPO / "benchmarks/peers/bm25s_adapter.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    text = "\n".join(f"line {i} " + "x" * 70 for i in range(1, 40))
    wins = module.windows(text)
    covered = [n for a, b, _ in wins for n in range(a, b + 1)]
    assert covered == list(range(1, 40))
    assert all(len(t) <= module.WINDOW_CHARS for *_, t in wins)


# --- the command and a smoke run ----------------------------------------------------------------
@pytest.mark.slow
def test_bench_smoke_run_writes_json_markdown_and_plots(tmp_path, monkeypatch):
    """Tiny synthetic corpus + examples with the hashing stand-in: every output is written."""
    pytest.importorskip("matplotlib")
    pytest.importorskip("psutil")
    from benchmarks import run

    monkeypatch.setenv(run.EMBEDDER_ENV, "hash")
    monkeypatch.chdir(REPO)  # the speed child runs `python -m benchmarks.perf.speed`
    results = run.run("all", ["examples,synthetic"], ["120"], tmp_path / "out", peers="off", daemon=False,
                      show_progress=False, log=lambda *a: None)
    out = tmp_path / "out"
    saved = json.loads((out / "results.json").read_text())
    assert saved["machine"]["cores"] and saved["machine"]["versions"]["lancedb"]
    (examples,) = saved["quality"]
    assert examples["corpus"] == "examples" and examples["questions"] >= 20
    assert set(examples["results"]) == {"keyword", "vector", "hybrid-convex", "hybrid-rrf"}
    assert examples["results"]["keyword"]["scores"]["all"]["file_recall@5"] > 0.5
    (size,) = saved["speed"]
    assert "error" not in size, size
    assert size["chunks"] > 50 and size["resync"]["edit_chunks_embedded"] >= 1 and size["index_disk_mb"] > 0
    assert set(size["latency"]) == {"keyword", "vector", "hybrid-convex", "hybrid-rrf"}
    assert size["quality"]["results"]["keyword"]["scores"]["all"]["file_recall@5"] > 0.5
    report = (out / "report.md").read_text()
    assert "## Retrieval quality" in report and "## Speed and cost" in report and "| **hybrid-convex** |" in report
    for png in ("recall-examples.png", "latency.png", "throughput.png", "cost.png"):
        assert (out / png).read_bytes()[:4] == b"\x89PNG", png
    assert saved["seconds"] == results["seconds"] > 0 and len(saved["loadavg_end"]) == 3  # recorded, never bounded


def test_unknown_corpus_is_refused(tmp_path):
    from benchmarks import run

    with pytest.raises(ValueError, match="unknown corpus"):
        run.run("quality", ["nope"], None, tmp_path, peers="off", show_progress=False, log=lambda *a: None)


# --- the package: public API only, no cycles, runnable, and absent from the installed CLI ----------
def _benchmark_imports():
    """(module, imported module, names) for every import statement in benchmarks/, at any depth."""
    import ast

    for path in sorted((REPO / "benchmarks").rglob("*.py")):
        rel = path.relative_to(REPO).with_suffix("")
        module = ".".join(p for p in rel.parts if p != "__init__")
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    yield module, alias.name, ()
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
                yield module, base, tuple(a.name for a in node.names)


def test_benchmarks_use_only_public_memsearch_names():
    bad = []
    for module, target, names in _benchmark_imports():
        if module.startswith("benchmarks.peers.") or not target.startswith("memsearch"):
            continue  # the peer adapters run in the peers' own venvs ("memsearch" is zilliztech's there)
        if any(part.startswith("_") for part in target.split(".")):
            bad.append(f"{module}: {target}")
        imported = importlib.import_module(target)
        for name in names:
            if importlib.util.find_spec(f"{target}.{name}") if hasattr(imported, "__path__") else False:
                continue  # a submodule (its public names are checked where they are imported from it)
            if name.startswith("_") or name not in getattr(imported, "__all__", ()):
                bad.append(f"{module}: {target}.{name}")
    assert not bad, f"private or unexported memsearch names used by the benchmarks: {bad}"


def test_benchmark_modules_import_each_other_without_cycles():
    graph: dict[str, set[str]] = {}
    for module, target, names in _benchmark_imports():
        if target in ("benchmarks", "benchmarks.perf", "benchmarks.research"):
            targets = {f"{target}.{n}" for n in names}
        elif target.startswith("benchmarks."):
            targets = {target}
        else:
            continue
        graph.setdefault(module, set()).update(t for t in targets if t != module)
    done: set[str] = set()

    def visit(node: str, path: tuple[str, ...]) -> None:
        assert node not in path, f"import cycle: {' -> '.join(path[path.index(node):] + (node,))}"
        if node in done:
            return
        for nxt in graph.get(node, ()):
            visit(nxt, path + (node,))
        done.add(node)

    for node in list(graph):
        visit(node, ())
    assert graph["benchmarks.run"] >= {"benchmarks.quality", "benchmarks.perf.speed", "benchmarks.report"}


def test_no_test_and_no_product_module_imports_research_code():
    """benchmarks/research/ holds the tuning tools and their log: neither the tests nor memsearch import it."""
    import ast

    bad = []
    for top in ("tests", "memsearch"):
        for path in sorted((REPO / top).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
                if isinstance(node, ast.ImportFrom) and node.module:
                    names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
                bad += [f"{path.relative_to(REPO)}: {n}" for n in names if n.startswith("benchmarks.research")]
    assert not bad, bad


def test_python_dash_m_benchmarks_runs_the_runner(tmp_path):
    import os
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "benchmarks", "--help"], capture_output=True, text=True, cwd=REPO,
                          timeout=120, env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: python -m benchmarks") and "--corpus" in done.stdout



def test_locomo_asked_for_but_missing_is_one_error_line_not_a_traceback(tmp_path):
    import os
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "benchmarks", "quality", "--corpus", "locomo", "--peers", "off",
                           "--no-daemon", "--no-progress", "--out", str(tmp_path / "out"),
                           "--locomo", str(tmp_path / "missing.json")],
                          capture_output=True, text=True, cwd=REPO, timeout=300, env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith("error: LoCoMo data not found at ")
    assert "--locomo PATH" in done.stderr

def test_the_concurrency_benchmark_answers_to_its_short_name():
    import os
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "benchmarks.concurrency", "--help"], capture_output=True, text=True,
                          cwd=REPO, timeout=120, env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: python -m benchmarks.perf.concurrency") and "--compare" in done.stdout

def test_the_cli_has_no_bench_command():
    """The benchmarks run from the clone as `python -m benchmarks` (or `make bench`); the installed command has
    no `bench` that could only fail outside a clone."""
    from typer.testing import CliRunner

    from memsearch.cli.app import app, main

    assert " bench " not in CliRunner().invoke(app, ["--help"]).output
    assert main(["bench"]) == 2  # a usage error, as for any unknown command
