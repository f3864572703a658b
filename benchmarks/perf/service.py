"""Benchmark of the serving daemon: what a shell command, a harness and a writer see with and without it.

    python -m benchmarks.perf.service [--out DIR] [--runs 20] [--local-runs 5] [--clients 8] [--seconds 10] [--files 0]
    python -m benchmarks.perf.service --client-only [--runs 30] [--compare OTHER_CHECKOUT]

On a copy of examples/memory (plus ``--files`` synthetic notes), with the real model:

1. **reference**: wall time of a bare ``python -c pass`` (Python's start, the floor of any CLI call);
2. **CLI with the daemon**: ``memsearch search ROOT QUERY`` wall time p50/p95 (``--runs`` calls,
   hybrid; and keyword), answered by a ``memsearch watch --detach`` daemon;
3. **CLI without it**: the same with ``--local`` (``--local-runs`` calls: each loads the model), and
   ``--local --mode keyword`` (no model, but the engine's imports);
4. **server-side latency**: the ``server_ms`` the daemon reports per search, against the same
   searches run in this process on an index opened here (same model, same data);
5. **throughput**: searches per second with ``--clients`` concurrent clients (threads, one
   connection per request) for ``--seconds``;
6. **write-to-searchable**: a new note with a unique word is written; a warm client searches for
   it every ``POLL_S`` until a hit holds it (``--writes`` times);
7. **the client path** (:func:`client_path`; alone with ``--client-only``): ``--runs`` rounds, each
   timing ``python -c pass``, then a daemon-answered ``memsearch search`` with text output and with
   ``--json``, interleaved so that the load drifts over all alike; ``--compare DIR`` adds the same two
   calls with the client of another checkout (e.g. ``git worktree add DIR BASE``) in the same rounds.
   The package's bytecode is compiled first, as installing it does.

Every absolute figure goes with the load average (``os.getloadavg``) and with ratios against
figures of the same run. Results go to ``DIR/service.json`` and a Markdown table on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from benchmarks.common import REPO, child_env, compile_bytecode, load_average, run_clients, write_result

__all__ = ["run", "main", "report"]

EXAMPLES = REPO / "examples" / "memory"
QUERIES = ["when is the next milestone", "who owns the billing migration", "what did we decide about the vendor",
           "holiday before the deadline", "database outage last week", "how does Priya like to work"]
POLL_S = 0.02
WORDS = ("harbour budget vendor contract kayak rental deadline spring hiring design review migration database outage "
         "customer launch roadmap quarter meeting decision risk travel invoice payment release testing onboarding").split()


def _env() -> dict:
    env = child_env()
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    env.pop("MEMSEARCH_DB", None)
    return env


def _stats(values: list[float]) -> dict:
    if not values:
        return {"n": 0}
    ordered = sorted(values)
    pick = lambda q: ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]  # noqa: E731
    return {"n": len(values), "p50": round(pick(0.5), 4), "p95": round(pick(0.95), 4), "mean": round(statistics.fmean(values), 4)}


def _wall(cmd: list[str], env: dict, cwd: Path | None = None) -> float:
    started = time.perf_counter()
    result = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env, cwd=cwd)
    elapsed = time.perf_counter() - started
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {result.stderr.strip()[-500:]}")
    return elapsed


def _tree(files: int, where: Path) -> Path:
    root = where / "memory"
    shutil.copytree(EXAMPLES, root, ignore=shutil.ignore_patterns(".memsearch"))
    if files:
        import random

        rng = random.Random(7)
        bulk = root / "notes" / "bulk"
        bulk.mkdir(parents=True)
        (bulk / "MEMORY.md").write_text("# Bulk notes\n\nSynthetic notes for the service benchmark.\n")
        for i in range(files):
            body = "\n\n".join(" ".join(rng.choice(WORDS) for _ in range(40)) + "." for _ in range(4))
            (bulk / f"note-{i:05d}.md").write_text(f"# Note {i}\n\n{body}\n")
    return root


def _memsearch(*args: str) -> list[str]:
    return [sys.executable, "-m", "memsearch", *args]


def _status(root: Path, env: dict) -> dict:
    return json.loads(subprocess.run(_memsearch("status", str(root), "--json"), capture_output=True, text=True, env=env).stdout)


def client_path(root: Path, env: dict, runs: int, compare: tuple[Path, ...] = ()) -> dict:
    """Wall times of daemon-answered searches (text, ``--json``) against ``python -c pass``, round by round."""
    checkouts = {"": REPO} | {f" [{path}]": path for path in compare}
    for path in checkouts.values():
        compile_bytecode(path)
    names = ["python -c pass"] + [f"search{out}{tag}" for tag in checkouts for out in ("", " --json")]
    walls: dict[str, list[float]] = {name: [] for name in names}
    load_before = load_average()
    for i in range(runs):
        query = QUERIES[i % len(QUERIES)]
        walls["python -c pass"].append(_wall([sys.executable, "-c", "pass"], env))
        for tag, path in checkouts.items():  # run from the checkout: ``-m`` puts the working directory first on sys.path
            there = dict(env, PYTHONPATH=str(path))
            walls[f"search{tag}"].append(_wall(_memsearch("search", str(root), query, "-k", "5"), there, path))
            walls[f"search --json{tag}"].append(_wall(_memsearch("search", str(root), query, "-k", "5", "--json"), there,
                                                      path))
    stats = {name: _stats(values) for name, values in walls.items()}
    reference = stats["python -c pass"]["p50"]
    return {"runs": runs, "load_before": load_before, "load_after": load_average(), "wall_s": stats,
            "p50_over_python_start": {name: round(s["p50"] / reference, 2) for name, s in stats.items()}}


def client_report(c: dict) -> str:
    lines = ["| call | p50 / p95 ms | p50 over `python -c pass` |", "|---|---|---:|"]
    lines += [f"| `{name}` | {s['p50'] * 1000:.1f} / {s['p95'] * 1000:.1f} | {c['p50_over_python_start'][name]:.2f} |"
              for name, s in c["wall_s"].items()]
    lines.append(f"\n{c['runs']} rounds; load average {c['load_before']} before, {c['load_after']} after.")
    return "\n".join(lines)


def run(out: Path | None = None, runs: int = 20, local_runs: int = 5, clients: int = 8, seconds: float = 10.0,
        files: int = 0, writes: int = 10, log=print, client_only: bool = False, compare: tuple[Path, ...] = ()) -> dict:
    """Run the service benchmark; returns the results (also written to ``out/service.json``)."""
    from memsearch.service.client import Client

    env = _env()
    results: dict = {"load_before": [round(x, 2) for x in os.getloadavg()], "files_extra": files}
    work = Path(tempfile.mkdtemp(prefix="memsearch-service-bench-"))
    root = _tree(files, work)
    try:
        results["python_start_s"] = _stats([_wall([sys.executable, "-c", "pass"], env) for _ in range(max(runs // 2, 3))])
        log(f"python start: {results['python_start_s']}")
        started = subprocess.run(_memsearch("watch", str(root), "--detach"), capture_output=True, text=True, env=env)
        if started.returncode != 0:
            raise RuntimeError(f"the daemon did not start: {started.stderr}")
        deadline = time.monotonic() + 900
        while not ((s := _status(root, env)).get("serving") and s.get("last_sync")):
            if time.monotonic() > deadline:
                raise RuntimeError("the daemon did not catch up within 900 s")
            time.sleep(0.5)
        results["chunks"] = s.get("chunks")
        log(f"daemon serving {s['chunks']} chunks on {s['socket']}")
        results["client_path"] = client_path(root, env, runs, compare)
        log(client_report(results["client_path"]))
        if client_only:
            write_result(out, "service-client.json", results)
            return results
        query = lambda i: QUERIES[i % len(QUERIES)]  # noqa: E731

        def cli_runs(n: int, *extra: str) -> dict:
            return _stats([_wall(_memsearch("search", str(root), query(i), "-k", "5", *extra), env) for i in range(n)])

        results["cli_daemon_s"] = cli_runs(runs)
        results["cli_daemon_keyword_s"] = cli_runs(runs, "--mode", "keyword")
        log(f"CLI with the daemon: {results['cli_daemon_s']}")
        results["cli_local_s"] = cli_runs(local_runs, "--local")
        results["cli_local_keyword_s"] = cli_runs(local_runs, "--local", "--mode", "keyword")
        log(f"CLI --local: {results['cli_local_s']}; keyword {results['cli_local_keyword_s']}")

        # server-side time against the same searches in this process
        from memsearch import MemoryIndex

        client = Client(root)
        here = MemoryIndex(root)
        here.search("warm up", k=5)
        server_ms, local_ms, total_ms = [], [], []
        for i in range(runs * 3):
            q = query(i)
            t0 = time.perf_counter()
            reply = client.request("search", query=q, k=5)
            total_ms.append((time.perf_counter() - t0) * 1000)
            server_ms.append(reply["server_ms"])
            t0 = time.perf_counter()
            here.search(q, k=5)
            local_ms.append((time.perf_counter() - t0) * 1000)
        results["server_ms"], results["in_process_ms"], results["round_trip_ms"] = _stats(server_ms), _stats(local_ms), _stats(total_ms)
        log(f"server {results['server_ms']}, in-process {results['in_process_ms']}, round trip {results['round_trip_ms']}")

        # throughput with concurrent clients
        stop = threading.Event()
        latencies: list[float] = []
        failures: list[str] = []

        def worker(n: int) -> None:
            mine = Client(root, timeout=30)
            i = n
            while not stop.is_set():
                t0 = time.perf_counter()
                try:
                    mine.call("search", query=query(i), k=5)
                except Exception as exc:  # noqa: BLE001 - counted, reported
                    failures.append(f"{type(exc).__name__}: {exc}")
                    return
                latencies.append(time.perf_counter() - t0)
                i += 1

        elapsed = run_clients(worker, clients, seconds, stop, join_s=60)
        results["concurrent"] = {"clients": clients, "seconds": round(elapsed, 2), "qps": round(len(latencies) / elapsed, 1),
                                 "latency_s": _stats(latencies), "failures": failures[:5]}
        log(f"{clients} clients: {results['concurrent']}")

        # write-to-searchable seen by a warm client
        seen = []
        for i in range(writes):
            word = f"zyx{i}quokka{int(time.time() * 1000) % 100000}"
            t0 = time.perf_counter()
            (root / "notes" / f"2026-12-{i + 1:02d}.md").write_text(f"# 2026-12-{i + 1:02d}\n\nThe {word} census moved to Friday.\n")
            while True:
                hits = client.call("search", query=f"{word} census", k=3, mode="keyword")["hits"]
                if any(word in h["text"] for h in hits):
                    break
                if time.perf_counter() - t0 > 60:
                    raise RuntimeError(f"write {i} not searchable within 60 s")
                time.sleep(POLL_S)
            seen.append(time.perf_counter() - t0)
        results["write_to_searchable_s"] = _stats(seen)
        log(f"write to searchable: {results['write_to_searchable_s']}")
    finally:
        subprocess.run(_memsearch("stop", str(root)), capture_output=True, env=env)
        shutil.rmtree(work, ignore_errors=True)
    p50 = lambda key: results[key]["p50"]  # noqa: E731
    results["ratios"] = {
        "cli_daemon_over_local": round(p50("cli_daemon_s") / p50("cli_local_s"), 4),
        "cli_daemon_over_python_start": round(p50("cli_daemon_s") / p50("python_start_s"), 2),
        "server_minus_in_process_ms": round(p50("server_ms") - p50("in_process_ms"), 3),
    }
    results["load_after"] = [round(x, 2) for x in os.getloadavg()]
    write_result(out, "service.json", results)
    log(report(results))
    return results


def report(r: dict) -> str:
    """The results as the README's Markdown table."""
    def s(key: str, scale: float = 1000, unit: str = "ms") -> str:
        v = r[key]
        return f"{v['p50'] * scale:,.0f} / {v['p95'] * scale:,.0f} {unit}"

    c = r["concurrent"]
    rows = [
        ("`memsearch search` with the daemon (hybrid), p50 / p95", s("cli_daemon_s")),
        ("`memsearch search` with the daemon (keyword), p50 / p95", s("cli_daemon_keyword_s")),
        ("`memsearch search --local` (hybrid), p50 / p95", s("cli_local_s")),
        ("`memsearch search --local --mode keyword`, p50 / p95", s("cli_local_keyword_s")),
        ("bare `python -c pass`, p50 / p95", s("python_start_s")),
        ("daemon over `--local` (p50)", f"{r['ratios']['cli_daemon_over_local']:.1%}"),
        ("server-side search, p50 / p95", f"{r['server_ms']['p50']:.1f} / {r['server_ms']['p95']:.1f} ms"),
        ("same search in-process, p50 / p95", f"{r['in_process_ms']['p50']:.1f} / {r['in_process_ms']['p95']:.1f} ms"),
        ("client round trip (socket + JSON + search), p50", f"{r['round_trip_ms']['p50']:.1f} ms"),
        (f"{c['clients']} concurrent clients", f"{c['qps']:.0f} searches/s (latency p50 {c['latency_s']['p50'] * 1000:.0f} ms)"),
        ("write to searchable, warm client, p50 / p95", s("write_to_searchable_s")),
    ]
    lines = ["| measure | value |", "|---|---|"] + [f"| {a} | {b} |" for a, b in rows]
    lines.append(f"\n{r.get('chunks')} chunks; load average {r['load_before']} before, {r['load_after']} after.")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.perf.service", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=None, help="write service.json here")
    parser.add_argument("--runs", type=int, default=20, help="CLI calls with the daemon (and 3x searches for server time)")
    parser.add_argument("--local-runs", type=int, default=5, help="CLI calls with --local (each loads the model)")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=10.0, help="length of the concurrent-clients phase")
    parser.add_argument("--files", type=int, default=0, help="synthetic notes added to examples/memory")
    parser.add_argument("--writes", type=int, default=10, help="write-to-searchable samples")
    parser.add_argument("--client-only", action="store_true", help="only the client path (item 7)")
    parser.add_argument("--compare", type=Path, action="append", default=[],
                        help="another checkout whose client runs the same calls in the same rounds (repeatable)")
    args = parser.parse_args(argv)
    run(args.out, runs=args.runs, local_runs=args.local_runs, clients=args.clients, seconds=args.seconds,
        files=args.files, writes=args.writes, client_only=args.client_only, compare=tuple(args.compare))
    return 0


if __name__ == "__main__":
    sys.exit(main())
