"""Benchmark of read replicas (``memsearch serve --read-only``) of one ``s3://`` index on SeaweedFS.

    python -m benchmarks.perf.replicas [--parts qps,rss] [--seconds 10] [--clients 6] [--chunks 100000] [--out DIR]

``qps``: a copy of examples/memory indexed with the real model into a SeaweedFS bucket on loopback, three
replica processes (each its own state directory, as on its own machine), then ``--clients`` threads of this
process searching over the daemon protocol (one connection per request), spread over the first 1, 2 and 3
replicas in turn, ``--seconds`` each, hybrid, k=5. Per phase: searches/s, p50/p95, the CPU seconds per
search of the clients (this process) and of the replicas (``/proc``), and ``cpu_bound_qps``: the cores over
their sum, the most searches/s this machine could give whatever the number of replicas.

``rss``: one replica's resident memory on an index of ``--chunks`` rows (the example's chunks repeated with
their words shuffled, vectors random: written straight into the tables, as a writer would have committed them,
with the full-text index and, as a writer builds it past 25k rows, the ANN index), after it loaded the index and
answered searches; beside it a replica of the small example index (the model and the process alone).

Each figure has the load average beside it (a shared machine: compare within one run).
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import tempfile
import threading
import time
from pathlib import Path

from benchmarks.common import REPO, child_env, load_average, run_clients, write_result

__all__ = ["run_qps", "run_rss", "main"]

QUERIES = ["when is the next milestone", "who owns the billing migration", "what did we decide about the vendor",
           "holiday before the deadline", "database outage last week", "how does Priya like to work"]
EXAMPLES = REPO / "examples" / "memory"


def _cpu_s(pid: int) -> float | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0


def _pct(values: list[float], q: float) -> float | None:
    values = sorted(values)
    return round(values[min(len(values) - 1, int(q * len(values)))] * 1000, 1) if values else None


def _phase(root: Path, sockets: list[Path], pids: list[int], clients: int, seconds: float) -> dict:
    from memsearch.service.client import Client

    stop = threading.Event()
    latencies: list[list[float]] = [[] for _ in range(clients)]
    failures: list[str] = []

    def worker(n: int) -> None:
        path, i = sockets[n % len(sockets)], n * 5
        while not stop.is_set():
            t0 = time.perf_counter()
            try:
                Client(root, path=path, timeout=60).call("search", query=QUERIES[i % len(QUERIES)], k=5)
            except Exception as exc:  # noqa: BLE001 - counted, reported
                failures.append(f"{type(exc).__name__}: {exc}"[:200])
                return
            latencies[n].append(time.perf_counter() - t0)
            i += 1

    load = load_average()
    cpu0, servers0 = time.process_time(), [_cpu_s(p) for p in pids]
    elapsed = run_clients(worker, clients, seconds, stop)
    client_cpu = time.process_time() - cpu0
    server_cpu = sum((_cpu_s(p) or 0) - (s or 0) for p, s in zip(pids, servers0))
    every = [x for part in latencies for x in part]
    out = {"replicas": len(sockets), "clients": clients, "searches": len(every), "qps": round(len(every) / elapsed, 1),
           "p50_ms": _pct(every, 0.5), "p95_ms": _pct(every, 0.95), "failures": failures[:3], "loadavg": load}
    if every:
        per_client, per_server = client_cpu / len(every), server_cpu / len(every)
        out.update(client_cpu_ms=round(per_client * 1000, 2), replica_cpu_ms=round(per_server * 1000, 2),
                   cpu_bound_qps=round((os.cpu_count() or 1) / (per_client + per_server), 1))
    return out


def _index(root: Path, uri: str, env: dict) -> float:
    import subprocess
    import sys

    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "memsearch", "index", str(root), "--db", uri], env=env, cwd=REPO, check=True,
                   capture_output=True, timeout=1800)
    return round(time.perf_counter() - t0, 1)


def run_qps(seconds: float = 10.0, clients: int = 6) -> dict:
    """Searches/s through 1, 2 and 3 replicas of the example index; see the module docstring."""
    from tests.support.replicas import Cluster
    from tests.support.seaweed import SeaweedS3

    with tempfile.TemporaryDirectory(prefix="memsearch-replicas-bench-") as tmp:
        work = Path(tmp)
        root = work / "memory"
        shutil.copytree(EXAMPLES, root)
        with SeaweedS3(work / "seaweed") as s3:
            s3.create_bucket("bench")
            env = child_env(**s3.env(), MEMSEARCH_STATE_DIR=str(work / "bench-state"))
            uri = "s3://bench/example"
            index_s = _index(root, uri, env)
            cluster = Cluster(root, uri, env, work)
            try:
                replicas = [cluster.replica(f"replica-{i}") for i in range(1, 4)]
                cluster.wait_healthy(replicas)
                from memsearch.service.client import Client

                for node in replicas:  # each loads its copies and its model before the clock starts
                    Client(root, path=node.socket(), timeout=120).call("search", query="warm up", k=1)
                rss_small = [_rss_mb(n.pid) for n in replicas]
                phases = [_phase(root, [n.socket() for n in replicas[:k]], [n.pid for n in replicas[:k]], clients,
                                 seconds) for k in (1, 2, 3)]
            finally:
                cluster.close()
    return {"index_s": index_s, "phases": phases, "replica_rss_mb_small_index": rss_small, "cores": os.cpu_count()}


def _write_big_index(uri: str, chunks: int, ann: bool) -> dict:
    """``chunks`` rows in the tables at ``uri``, committed in batches, with index.json naming the default model."""
    import numpy as np
    import pyarrow as pa

    from memsearch.engine.embed.embedder import load_embedder
    from memsearch.engine.ingest.chunker import ChunkerConfig
    from memsearch.engine.params import index_params
    from memsearch.engine.storage.schema import FILE_SCHEMA, chunk_schema
    from memsearch.engine.storage.store import Store
    from memsearch.memory.tokens import encoding_name

    embedder = load_embedder()
    store = Store(uri)
    words = " ".join(p.read_text() for p in EXAMPLES.rglob("*.md")).split()
    rng, gen = random.Random(7), np.random.default_rng(7)
    dim, per_file, batch = embedder.dimension, 50, 10_000
    t0 = time.perf_counter()
    for start in range(0, chunks, batch):
        n = min(batch, chunks - start)
        texts = [" ".join(rng.choices(words, k=60)) for _ in range(n)]
        paths = [f"notes/f{(start + i) // per_file:05d}.md" for i in range(n)]
        vectors = gen.standard_normal((n, dim), dtype=np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        rows = {"id": [f"c{start + i}" for i in range(n)], "path": paths, "dir": ["notes"] * n, "depth": [1] * n,
                "heading": ["Note"] * n, "start_line": [3 + (start + i) % per_file * 4 for i in range(n)],
                "end_line": [5 + (start + i) % per_file * 4 for i in range(n)], "text": texts, "search_text": texts,
                "tokens": [80] * n, "file_hash": [f"h{p}" for p in paths], "embed_hash": [f"e{start + i}" for i in range(n)],
                "date": [None] * n, "mtime_ns": [0] * n, "model": [embedder.name] * n,
                "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), dim)}
        table = store.chunks(dimension=dim)
        table.add(pa.Table.from_pydict(rows, schema=chunk_schema(dim)))
    files = sorted({f"notes/f{i // per_file:05d}.md" for i in range(chunks)})
    store.files(create=True).add(pa.Table.from_pylist(
        [{"path": p, "file_hash": f"h{p}", "mtime_ns": 0, "size": 0, "chunks": per_file} for p in files],
        schema=FILE_SCHEMA))
    store.ensure_indexes()
    written = time.perf_counter() - t0
    if ann:
        store.build_vector_index()
    meta = index_params(embedder, ChunkerConfig(), encoding_name(None), False) | {
        "dimension": dim, "build": "bench", "root": "", "updated": ""}
    store.write_meta(meta)
    return {"chunks": chunks, "write_s": round(written, 1), "ann_s": round(time.perf_counter() - t0 - written, 1),
            "ann": ann}


def run_rss(chunks: int = 100_000, ann: bool = True) -> dict:
    """One replica's resident memory on a ``chunks``-row index; see the module docstring."""
    from tests.support.replicas import Cluster
    from tests.support.seaweed import SeaweedS3

    with tempfile.TemporaryDirectory(prefix="memsearch-replicas-rss-") as tmp:
        work = Path(tmp)
        root = work / "memory"
        (root / "notes").mkdir(parents=True)
        (root / "MEMORY.md").write_text("# Memory\n\nA big generated index.\n")
        (root / "notes" / "MEMORY.md").write_text("# Notes\n\nGenerated notes.\n")
        with SeaweedS3(work / "seaweed") as s3:
            s3.create_bucket("bench")
            env = child_env(**s3.env(), MEMSEARCH_STATE_DIR=str(work / "bench-state"))
            os.environ.update(s3.env())
            uri = "s3://bench/big"
            built = _write_big_index(uri, chunks, ann)
            cluster = Cluster(root, uri, env, work)
            try:
                t0 = time.perf_counter()
                node = cluster.replica("replica-big")
                cluster.wait_healthy([node], timeout=1800)
                ready_s = round(time.perf_counter() - t0, 1)
                from memsearch.service.client import Client

                latencies = []
                for i in range(30):
                    s = time.perf_counter()
                    Client(root, path=node.socket(), timeout=300).call("search", query=QUERIES[i % len(QUERIES)], k=5)
                    latencies.append(time.perf_counter() - s)
                health = node.health()
                return built | {"replica_ready_s": ready_s, "rss_mb": _rss_mb(node.pid), "rows": health["rows"],
                                "search_p50_ms": _pct(latencies[5:], 0.5), "search_p95_ms": _pct(latencies[5:], 0.95),
                                "loadavg": load_average()}
            finally:
                cluster.close()


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.perf.replicas", description=__doc__.splitlines()[0])
    parser.add_argument("--parts", default="qps,rss")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--clients", type=int, default=6)
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--no-ann", action="store_true", help="rss: leave the ANN index out (flat vectors in memory)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    parts = set(args.parts.split(","))
    result: dict = {"loadavg_start": load_average()}
    if "qps" in parts:
        result["qps"] = run_qps(args.seconds, args.clients)
    if "rss" in parts:
        result["rss"] = run_rss(args.chunks, ann=not args.no_ann)
    result["loadavg_end"] = load_average()
    import json

    print(json.dumps(result, indent=2))
    write_result(args.out, "replicas.json", result)
    return result


if __name__ == "__main__":
    main()
