"""Benchmark of one service for many roots: the memory one per-user process holds after many roots were searched.

    python -m benchmarks.perf.roots [--roots 20] [--chunks 250] [--out DIR]

``--roots`` synthetic trees (:mod:`benchmarks.synthetic`, about ``--chunks`` chunks each) are indexed
first in this process (so the figure is about serving, not about a first build), then searched one
after another with ``memsearch search`` from the shell, as a script would, with the default settings
(autostart on) and a private ``$XDG_RUNTIME_DIR``: the first call starts the per-user service, every
later one is answered by it, which loads each root on the first request naming it. Each root is
searched until the service answers for it.

Reported, with the load average beside it: the service's resident memory (``memsearch status``'s
``rss_bytes``, read from ``/proc``) after each root, how many memsearch processes run at the end, and
the wall time of each root's first served search beside Python's bare start timed in the same run.
Results go to ``DIR/roots.json`` and a Markdown table on stdout. The service is stopped at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import child_env, load_average, write_result
from benchmarks.synthetic import generate_chunks

__all__ = ["run", "main", "report"]


def _cli(env: dict, *argv: str) -> tuple[float, subprocess.CompletedProcess]:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "memsearch", *argv], capture_output=True, text=True, env=env,
                          timeout=600)
    return time.perf_counter() - started, done


def _status(env: dict) -> dict:
    _, done = _cli(env, "status", "--json")
    return json.loads(done.stdout)


def _memsearch_processes() -> list[int]:
    """The pids of ``python -m memsearch`` processes of this user's running now (the service among them)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            owner = entry.stat().st_uid
        except OSError:
            continue
        if owner == os.getuid() and b"memsearch" in argv and b"-m" in argv and b"service" in argv:
            pids.append(int(entry.name))
    return pids


def run(roots: int = 20, chunks: int = 250, work: Path | None = None) -> dict:
    from memsearch.engine.embed.embedder import load_embedder
    from memsearch.engine.index import MemoryIndex

    own = work is None
    work = Path(work or tempfile.mkdtemp(prefix="ms-roots-"))
    runtime = Path(tempfile.mkdtemp(prefix="ms-rt-"))
    env = child_env(XDG_RUNTIME_DIR=str(runtime))
    env.pop("MEMSEARCH_AUTOSTART", None)
    trees, queries = [], []
    embedder = load_embedder()
    for i in range(roots):
        root = work / f"memory{i:02d}"
        planted = generate_chunks(root, chunks, seed=i)
        MemoryIndex(root, embedder=embedder).sync()
        trees.append(root)
        queries.append(planted[0].query)
    python = min(_timed([sys.executable, "-c", "pass"]) for _ in range(3))
    rows = []
    try:
        for root, query in zip(trees, queries):
            first = None
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline:
                seconds, done = _cli(env, "search", str(root), query, "-k", "3", "--json")
                assert done.returncode == 0, done.stderr
                status = _status(env)
                if any(r["root"] == str(root.resolve()) and r["chunks"] for r in status.get("roots", [])):
                    first = seconds if first is None else first
                    break
                first = None
                time.sleep(0.5)
            served_s, _ = _cli(env, "search", str(root), query, "-k", "3", "--json")
            status = _status(env)
            rows.append({"root": root.name, "loaded": len(status["roots"]), "rss_mb": round(status["rss_bytes"] / 1e6, 1),
                         "chunks": next(r["chunks"] for r in status["roots"] if r["root"] == str(root.resolve())),
                         "served_search_s": round(served_s, 3)})
        processes = _memsearch_processes()
        final = _status(env)
    finally:
        _cli(env, "stop", "--all")
        shutil.rmtree(runtime, ignore_errors=True)
        if own:
            shutil.rmtree(work, ignore_errors=True)
    return {"roots": roots, "chunks_per_root": chunks, "rows": rows, "service_processes": len(processes),
            "final_rss_mb": round(final["rss_bytes"] / 1e6, 1), "max_rss_mb": max(r["rss_mb"] for r in rows),
            "python_start_s": round(python, 3), "load_average": load_average()}


def _timed(argv: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, check=True)
    return time.perf_counter() - started


def report(result: dict) -> str:
    lines = [f"One service, {result['roots']} roots of about {result['chunks_per_root']} chunks each "
             f"(load {result['load_average']}):", "",
             "| roots loaded | service RSS (MB) | served search (s) |", "| ---: | ---: | ---: |"]
    for row in result["rows"]:
        lines.append(f"| {row['loaded']} | {row['rss_mb']} | {row['served_search_s']} |")
    lines += ["", f"memsearch service processes at the end: {result['service_processes']}; "
                  f"largest RSS {result['max_rss_mb']} MB; Python's bare start {result['python_start_s']} s"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.perf.roots", description=__doc__.splitlines()[0])
    parser.add_argument("--roots", type=int, default=20)
    parser.add_argument("--chunks", type=int, default=250)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    result = run(args.roots, args.chunks)
    write_result(args.out, "roots.json", result)
    print(report(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
