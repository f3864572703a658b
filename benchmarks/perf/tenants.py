"""Many tenants through one real ``memsearch serve --roots PARENT --http`` process, from an MCP client.

The server and its client are test support (tests/support/tenants.py); :func:`run_service` is the
``--parts service`` benchmark of :mod:`benchmarks.perf.remote`: the server's resident memory with
``count`` tenants on SeaweedFS (``--db s3://bench/tenants/{tenant}``), and search latency from a
client, p50/p95, of a warm tenant (open in the server's LRU) against a cold one (evicted).
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from tests.support.tenants import TenantServer, session

__all__ = ["run_service"]


def _summary(values: list[float]) -> dict:
    """p50/p95 in ms (nearest rank, as benchmarks.perf.remote reports them)."""
    ordered = sorted(values)
    pick = lambda q: ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]  # noqa: E731
    return {"p50_ms": round(pick(0.5) * 1000, 2), "p95_ms": round(pick(0.95) * 1000, 2), "n": len(values)}


def _tenants(parent: Path, count: int) -> list[str]:
    names = []
    for i in range(count):
        name = f"t{i:03d}"
        root = parent / name
        (root / "notes").mkdir(parents=True)
        (root / "MEMORY.md").write_text(f"# Tenant {i}\n")
        (root / "notes" / "MEMORY.md").write_text("# Notes\n\nDecisions and incidents.\n")
        (root / "notes" / "decisions.md").write_text(f"# Decisions\n\nTenant {i} chose warehouse {i % 9} for cost.\n")
        names.append(name)
    return names


def run_service(count: int = 100, rounds: int = 40, max_open: int = 16) -> dict:
    """``count`` tenants on SeaweedFS behind one server; see the module docstring."""
    import anyio

    from tests.support.seaweed import SeaweedS3

    with tempfile.TemporaryDirectory(prefix="memsearch-service-bench-") as tmp:
        work = Path(tmp)
        names = _tenants(work / "tenants", count)
        with SeaweedS3(work / "seaweed") as s3:
            s3.create_bucket("bench")
            env = dict(os.environ) | s3.env(MEMSEARCH_STATE_DIR=str(work / "state"), MEMSEARCH_MAX_OPEN=str(max_open))
            with TenantServer(work / "tenants", env=env, args=("--db", "s3://bench/tenants/{tenant}")) as server:
                figures: dict = {}

                async def measure() -> None:
                    t = time.perf_counter()
                    for name in names:  # each tenant indexed (first search syncs) and searched once
                        async with session(server.url(name)) as client:
                            await client.call_tool("memory_search", {"query": "warehouse"})
                        figures.setdefault("rss_first_mb", round(server.rss() / 2**20))  # the model loaded, one tenant open
                    figures["index_and_first_search_all_s"] = round(time.perf_counter() - t, 1)
                    figures["rss_after_all_mb"] = round(server.rss() / 2**20)
                    warm, cold, bare = [], [], []
                    async with session(server.url(names[0])) as hot:
                        for r in range(rounds):
                            t = time.perf_counter()
                            await hot.call_tool("memory_core", {})  # the reference: one tool call without the index
                            bare.append(time.perf_counter() - t)
                            t = time.perf_counter()
                            await hot.call_tool("memory_search", {"query": "which warehouse"})
                            warm.append(time.perf_counter() - t)
                            i = 1 + (r * 37) % (count - 1)  # far from the recently used ones: evicted, so cold
                            async with session(server.url(names[i])) as client:
                                t = time.perf_counter()
                                await client.call_tool("memory_search", {"query": "which warehouse"})
                                cold.append(time.perf_counter() - t)
                    figures["warm"], figures["cold"], figures["bare"] = _summary(warm), _summary(cold), _summary(bare)
                    figures["rss_end_mb"] = round(server.rss() / 2**20)

                anyio.run(measure)
    return {"tenants": count, "max_open": max_open, "rss_mb": {"after_first_tenant": figures["rss_first_mb"],
            "after_all_tenants": figures["rss_after_all_mb"], "end": figures["rss_end_mb"]},
            "index_and_first_search_all_s": figures["index_and_first_search_all_s"],
            "warm_tenant": figures["warm"], "cold_tenant": figures["cold"], "memory_core_call": figures["bare"],
            "cold_over_warm_p50": round(figures["cold"]["p50_ms"] / figures["warm"]["p50_ms"], 2)}
