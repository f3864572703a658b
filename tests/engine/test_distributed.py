"""Embedding on Ray: a local two-worker cluster started by the test; the index equals a single-process build."""

from __future__ import annotations

import functools
import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from memsearch.engine.embed.embedder import HashEmbedder
from memsearch.engine.index import MemoryIndex
from tests.conftest import REPO

TREE = {
    "MEMORY.md": "# Root\n\nCore memory.\n",
    "projects/MEMORY.md": "# Projects\n\nActive projects.\n",
    "projects/atlas.md": "# Atlas\n\n## Decisions\n\nWe chose ClickHouse for the warehouse because of compression.\n",
    "notes/MEMORY.md": "# Notes\n\nDaily notes.\n",
} | {f"notes/n{i:02d}.md": f"# Note {i}\n\n" + f"Fact {i} about topic {i % 5} and the deploy of service {i % 3}.\n" * 12
     for i in range(30)}


def table(index: MemoryIndex) -> dict:
    data = index.store.chunks().to_arrow().sort_by("id")
    return {c: data.column(c).to_pylist() for c in ("id", "path", "start_line", "end_line", "text", "embed_hash")} | {
        "vector": data.column("vector").combine_chunks().flatten().to_numpy().reshape(data.num_rows, -1)}


@pytest.fixture(scope="module")
def ray_cluster():
    ray = pytest.importorskip("ray")  # in the dev extra: present wherever `make test` runs
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False,
             runtime_env={"env_vars": {"HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}})
    yield ray
    ray.shutdown()


@pytest.mark.slow
def test_ray_build_equals_a_single_process_build(ray_cluster, make_tree, tmp_path, monkeypatch):
    from memsearch.engine.embed.distributed import RayEmbedder

    monkeypatch.setenv("MEMSEARCH_BATCH_CHUNKS", "16")  # several batches, so several commits
    root = make_tree(TREE)
    single = MemoryIndex(root, db=tmp_path / "single", embedder=HashEmbedder())
    single.sync()
    with RayEmbedder("local", workers=2, factory=functools.partial(HashEmbedder)) as embedder:
        assert len(embedder.actors) == 2 and len(set(ray_cluster.get([a.pid.remote() for a in embedder.actors]))) == 2
        distributed = MemoryIndex(root, db=tmp_path / "ray", embedder=embedder)
        report = distributed.sync()
    assert report.chunks_embedded == single.store.chunks().count_rows() and report.files_added == 33
    assert distributed.store.version() > 3  # one commit per batch, not one at the end
    a, b = table(single), table(distributed)
    assert {k: v for k, v in a.items() if k != "vector"} == {k: v for k, v in b.items() if k != "vector"}
    assert np.array_equal(a["vector"], b["vector"])
    assert [h.path for h in single.search("deploy of service 2", k=5)] == [h.path for h in distributed.search("deploy of service 2", k=5)]


@pytest.mark.slow
def test_a_worker_with_another_model_is_refused(ray_cluster):
    from memsearch.engine.embed.distributed import RayEmbedder
    from memsearch.errors import InvalidArgument

    calls = iter(range(100))

    def factory():  # the driver gets dimension 64, every worker 32
        return HashEmbedder(dimension=64 if next(calls) == 0 else 32)

    with pytest.raises(InvalidArgument, match="same model"):
        RayEmbedder("local", workers=1, factory=factory)


def test_missing_ray_names_the_install_command(make_tree):
    root = make_tree(TREE)
    code = textwrap.dedent(f"""
        import sys
        sys.modules["ray"] = None  # as if Ray were not installed
        from memsearch.cli import main
        sys.exit(main(["index", {str(root)!r}, "--ray", "local", "--db", {str(root / 'db')!r}]))
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "error: --ray needs Ray, which is not installed: pip install 'agent-memsearch[ray]' (or: pip install 'ray>=2.9')"
    ]


@pytest.mark.slow
def test_real_model_cli_ray_local_equals_single_process(examples_copy, tmp_path, real_embedder):
    pytest.importorskip("ray")
    ray_db, single_db = tmp_path / "ray", tmp_path / "single"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "memsearch",
            "index",
            str(examples_copy),
            "--db",
            str(ray_db),
            "--ray",
            "local",
            "--json",
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=900,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["chunks_embedded"] > 0
    single = MemoryIndex(examples_copy, db=single_db, embedder=real_embedder)
    single.sync()
    distributed = MemoryIndex(examples_copy, db=ray_db, embedder=real_embedder)
    a, b = table(single), table(distributed)
    assert {k: v for k, v in a.items() if k != "vector"} == {k: v for k, v in b.items() if k != "vector"}
    assert np.allclose(a["vector"], b["vector"], atol=1e-5)
    query = "which warehouse did we choose for Atlas and why"
    assert [(h.path, h.start_line) for h in single.search(query)] == [
        (h.path, h.start_line) for h in distributed.search(query)
    ]
