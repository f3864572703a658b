"""Remote indexes against local disk, and Ray embedding against one process: ``python -m benchmarks.perf.remote``.

Index time of one tree into a local directory and into a local SeaweedFS (``s3://``), then
search latency, p50/p95, *warm* (the index open, the query repeated) and *cold* (a new
``MemoryIndex`` per query: open, parameters, table handles, first search). With ``--parts ray``, also
the same build with embedding on a local Ray cluster of ``--workers`` workers against a
single-process build, timed in the same run (ratios, since the machine is shared). The model
is the real default one unless ``MEMSEARCH_BENCH_EMBEDDER=hash``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

from benchmarks.common import REPO, bench_embedder
from memsearch import settings
from tests.support.seaweed import SeaweedS3

__all__ = ["main", "run_remote", "run_ray", "run_roots"]

QUERIES = ["which warehouse did we choose for Atlas and why", "billing migration cutover plan", "on-call runbook for a full disk",
           "website redesign decisions", "python sdk release", "forecasting model accuracy", "incident with error code",
           "who leads the project", "deploy broke the API", "schema of the events table"]


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def _summary(values: list[float]) -> dict:
    return {"p50_ms": round(_pct(values, 0.5) * 1000, 2), "p95_ms": round(_pct(values, 0.95) * 1000, 2), "n": len(values)}


def _tree(copies: int, work: Path) -> Path:
    """examples/memory, its external memory repeated ``copies`` times under copies/cN/."""
    root = work / "memory"
    shutil.copytree(REPO / "examples" / "memory", root, ignore=shutil.ignore_patterns(".memsearch"))
    for n in range(1, copies):
        for src in (REPO / "examples" / "memory" / "projects", REPO / "examples" / "memory" / "notes"):
            shutil.copytree(src, root / "copies" / f"c{n}" / src.name)
    if copies > 1:
        (root / "copies" / "MEMORY.md").write_text("# Copies\n\nRepeated memory for the benchmark.\n")
    return root


def _measure(root: Path, db, embedder, rounds: int) -> dict:
    from memsearch.engine.index import MemoryIndex

    started = time.perf_counter()
    index = MemoryIndex(root, db=db, embedder=embedder)
    report = index.sync()
    index_s = time.perf_counter() - started
    index.search(QUERIES[0])  # caches of the first search (flat vectors, FTS) out of the warm figures
    warm = []
    for i in range(rounds):
        t = time.perf_counter()
        index.search(QUERIES[i % len(QUERIES)])
        warm.append(time.perf_counter() - t)
    cold = []
    for i in range(max(3, rounds // 4)):
        t = time.perf_counter()
        fresh = MemoryIndex(root, db=db, embedder=embedder)
        fresh.search(QUERIES[i % len(QUERIES)])
        cold.append(time.perf_counter() - t)
        fresh.close()
    index.close()
    return {"index_s": round(index_s, 3), "chunks": report.chunks_total, "files": report.files_added,
            "warm": _summary(warm), "cold": _summary(cold)}


def _warm_up(work: Path) -> None:
    """One tiny build and search on each store, so imports and first-use costs stay out of the figures."""
    from memsearch.engine.embed.embedder import HashEmbedder
    from memsearch.engine.index import MemoryIndex

    tiny = work / "tiny"
    (tiny / "a").mkdir(parents=True)
    (tiny / "MEMORY.md").write_text("# Tiny\n")
    (tiny / "a" / "MEMORY.md").write_text("# A\n\nwarm up.\n")
    for db in (work / "tiny-db", "s3://bench/tiny"):
        index = MemoryIndex(tiny, db=db, embedder=HashEmbedder())
        index.sync()
        index.search("warm up")
        index.close()


def run_remote(copies: int = 1, rounds: int = 40) -> dict:
    """Local disk against local SeaweedFS, same tree, same embedder, same run."""
    embedder = bench_embedder()
    embedder.embed_query("warm up")  # the model loads outside every timing
    with tempfile.TemporaryDirectory(prefix="memsearch-remote-bench-") as tmp:
        work = Path(tmp)
        root = _tree(copies, work)
        with SeaweedS3(work / "seaweed") as s3:
            s3.create_bucket("bench")
            saved = {k: os.environ.get(k) for k in s3.env()}
            os.environ.update(s3.env(MEMSEARCH_STATE_DIR=str(work / "state")))  # a benchmark process, not the library
            try:
                _warm_up(work)
                local = _measure(root, work / "local-db", embedder, rounds)
                remote = _measure(root, "s3://bench/index", embedder, rounds)
            finally:
                for k, v in saved.items():
                    os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)
    ratio = {"index": round(remote["index_s"] / local["index_s"], 2),
             "warm_p50": round(remote["warm"]["p50_ms"] / local["warm"]["p50_ms"], 2),
             "cold_p50": round(remote["cold"]["p50_ms"] / local["cold"]["p50_ms"], 2)}
    return {"embedder": embedder.name, "local_disk": local, "seaweedfs": remote, "remote_over_local": ratio}


def run_ray(copies: int = 1, workers: int = 2) -> dict:
    """One-process build against a build embedding on a local Ray cluster of ``workers`` workers."""
    import functools

    from memsearch.engine.embed.distributed import RayEmbedder
    from memsearch.engine.index import MemoryIndex

    with tempfile.TemporaryDirectory(prefix="memsearch-ray-bench-") as tmp:
        work = Path(tmp)
        root = _tree(copies, work)
        embedder = bench_embedder()
        embedder.embed_query("warm up")
        t = time.perf_counter()
        single = MemoryIndex(root, db=work / "single", embedder=embedder).sync()
        single_s = time.perf_counter() - t
        t = time.perf_counter()
        with RayEmbedder("local", workers=workers, num_cpus=workers, factory=functools.partial(bench_embedder)) as ray_embedder:
            start_s = time.perf_counter() - t
            t = time.perf_counter()
            MemoryIndex(root, db=work / "ray", embedder=ray_embedder).sync()
            ray_s = time.perf_counter() - t
    return {"chunks": single.chunks_total, "workers": workers, "single_process_s": round(single_s, 2),
            "ray_cluster_and_models_start_s": round(start_s, 2), "ray_build_s": round(ray_s, 2),
            "ray_over_single": round(ray_s / single_s, 2),
            "chunks_per_s": {"single": round(single.chunks_total / single_s, 1), "ray": round(single.chunks_total / ray_s, 1)}}


def run_roots(count: int = 100, rounds: int = 40) -> dict:
    """``count`` tenants ``s3://bench/tenants/<id>`` in one process through :func:`memsearch.harness.api.open_index`
    (its LRU, one shared model): resident memory, and search latency of a warm root against a cold one."""
    import psutil

    from memsearch.harness import api

    process = psutil.Process()
    embedder = bench_embedder()
    embedder.embed_query("warm up")
    rss_model = process.memory_info().rss
    with tempfile.TemporaryDirectory(prefix="memsearch-roots-bench-") as tmp:
        work = Path(tmp)
        with SeaweedS3(work / "seaweed") as s3:
            s3.create_bucket("bench")
            os.environ.update(s3.env(MEMSEARCH_STATE_DIR=str(work / "state")))  # a benchmark process, not the library
            roots = []
            for i in range(count):
                root = work / "tenants" / f"t{i:03d}"
                (root / "notes").mkdir(parents=True)
                (root / "MEMORY.md").write_text(f"# Tenant {i}\n")
                (root / "notes" / "MEMORY.md").write_text("# Notes\n\nDecisions and incidents.\n")
                (root / "notes" / "decisions.md").write_text(f"# Decisions\n\nTenant {i} chose warehouse {i % 9} for cost.\n")
                roots.append(root)
            t = time.perf_counter()
            for i, root in enumerate(roots):
                api.search("warehouse", root, db=f"s3://bench/tenants/t{i:03d}", sync=True)
            open_s = time.perf_counter() - t
            rss_all = process.memory_info().rss
            warm, cold = [], []
            for r in range(rounds):
                hot = roots[0]
                t = time.perf_counter()
                api.search("which warehouse", hot, db="s3://bench/tenants/t000", sync=False)
                warm.append(time.perf_counter() - t)
                i = 1 + (r * 37) % (count - 1)  # far from the recently used ones: evicted, so cold
                t = time.perf_counter()
                api.search("which warehouse", roots[i], db=f"s3://bench/tenants/t{i:03d}", sync=False)
                cold.append(time.perf_counter() - t)
            api.close_indexes()
    return {"roots": count, "open_limit": settings.get("max_open"), "index_and_first_search_all_s": round(open_s, 1),
            "rss_mb": {"model_loaded": round(rss_model / 2**20), "after_all_roots": round(rss_all / 2**20)},
            "warm_root": _summary(warm), "cold_root": _summary(cold)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.perf.remote", description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=1, help="Repeat the example tree's external memory this many times.")
    parser.add_argument("--rounds", type=int, default=40, help="Warm searches per store (cold: a quarter of it).")
    parser.add_argument(
        "--parts",
        default="remote",
        help="Comma-separated: remote (disk vs SeaweedFS), "
            "ray (Ray vs one process), roots (many tenants in one process), "
        "service (many tenants behind one `serve --roots --http`, from a client).",
    )
    parser.add_argument("--workers", type=int, default=2, help="Ray workers (one model each).")
    parser.add_argument("--roots", type=int, default=100, help="Tenant roots for the roots part.")
    args = parser.parse_args(argv)
    parts = {p.strip() for p in args.parts.split(",") if p.strip()}
    if not parts <= {"remote", "ray", "roots", "service"}:
        parser.error("--parts takes remote, ray, roots, service")
    result: dict = {"load_average": [round(x, 2) for x in os.getloadavg()]}
    if "remote" in parts:
        result["remote"] = run_remote(args.copies, args.rounds)
    if "roots" in parts:
        result["roots"] = run_roots(args.roots, args.rounds)
    if "service" in parts:
        from benchmarks.perf.tenants import run_service

        result["service"] = run_service(args.roots, args.rounds)
    if "ray" in parts:
        result["ray"] = run_ray(args.copies, args.workers)
    result["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
