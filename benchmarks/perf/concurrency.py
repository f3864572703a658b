"""Benchmark of concurrent searches through one daemon: searches/s and latency at 1, 4 and 16 clients.

    python -m benchmarks.perf.concurrency [--out FILE] [--clients 1,4,16] [--seconds 10] [--label after] [--compare DIR]
                                          [--answers 2000] [--rounds 1]

On a copy of examples/memory with the real model, a ``memsearch watch --detach`` daemon serves;
for each client count, that many threads of this process (each its own connection per request,
as every client makes) search in a loop for ``--seconds``, hybrid, k=5, over :data:`QUERIES`.
Reported per count: searches/s, latency p50/p95/p99, and the ratio of searches/s to one
client's. The reference, timed in the same run after the daemon phases: this process encoding
the same queries with the same model, one at a time and in batches of ``--batch``
(queries/s), the ceiling batching can approach, and ``encode_bound_qps``: the cores over the
batched encode's CPU per query. The load average goes beside every figure.

Each phase also reports the CPU seconds per search of the clients (this process) and of the
daemon (``/proc``), and ``cpu_bound_qps``: the cores over their sum, the most searches/s the
machine could give if clients and daemon had every core to themselves; ``past_encode_cpu_ms``: their
sum less the batched encode's CPU per query, and ``over_encode_bound``: searches/s over
``encode_bound_qps``. ``--rounds N`` runs each phase N times, the checkouts' order alternating,
and pools the rounds into one figure (this machine's load moves a phase by 15% from one run to the
next). The daemon's part is split by its own counters (``status``: its searches' thread
CPU and its query encoder's, read before and after the phase): ``daemon_encode_cpu_ms`` (the model
calls, in the threads that lead a batch; an encoder's pool threads are not counted there),
``daemon_answer_cpu_ms`` (the rest of a search's thread CPU: BM25, vectors, fusion, hits, as answered
in the daemon), ``daemon_rest_cpu_ms`` (the daemon's CPU outside its searches' threads' search calls:
accepting, reading and decoding a request, encoding and sending the reply, the thread hand-offs, an
encoder's pool threads, the watcher), ``mean_batch`` (queries per model call) and ``encoder_busy`` (the
share of the phase's wall time the model spent in query batches: near 1, the encode's wall time, not the CPU
per search, is what bounds searches/s). ``--compare DIR`` runs a
second daemon from another checkout (``before``) on its own copy of the tree and interleaves its
phases with this checkout's, so that before and after share one run and its load.

``answer_cpu_ms`` (per checkout, after the phases): the CPU of one search's answer without its
encode and without the socket, a daemon's ``Server.answer`` and reply line in a process of that
checkout on its copy of the tree, each query's vector encoded beforehand (the only place a
vector is reused: the client phases encode every query), the best of :data:`ANSWER_ROUNDS`
rounds of ``--answers`` searches, the rounds of the checkouts interleaved.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from benchmarks.common import REPO, child_env, load_average, run_clients

__all__ = ["run", "main", "QUERIES", "ANSWER_ROUNDS"]

#: Rounds of the in-process answer reference per checkout (the best is kept: a busy machine only adds).
ANSWER_ROUNDS = 3
#: The answer reference, run with ``python -c`` in a checkout: root, searches -> CPU ms per answer.
_ANSWER_SCRIPT = """
import json, sys, time
from memsearch.engine.index import MemoryIndex
from memsearch.service.protocol import encode
from memsearch.service.server import Server
from benchmarks.perf.concurrency import QUERIES
root, n = sys.argv[1], int(sys.argv[2])
index = MemoryIndex(root)
vectors = {q: index.embedder.embed_query(q) for q in QUERIES}
index.embedder.embed_query = vectors.__getitem__
server = Server(index, path=root + "/unused.sock")
lines = [encode({"v": 1, "id": i, "method": "search", "root": root, "params": {"query": q, "k": 5}})
         for i, q in enumerate(QUERIES)]
for line in lines:
    assert server.answer(line)["ok"]
cpu = time.process_time()
for i in range(n):
    encode(server.answer(lines[i % len(lines)]))
print(json.dumps((time.process_time() - cpu) * 1000 / n))
"""

EXAMPLES = REPO / "examples" / "memory"
#: Queries of varied length about the example memory (the encoder's cost grows with tokens).
QUERIES = ["when is the next milestone", "who owns the billing migration", "what did we decide about the vendor",
           "holiday before the deadline", "database outage last week", "how does Priya like to work",
           "kayak", "release plan", "what are the risks of the roadmap for next quarter and who is on call",
           "travel budget approval", "customer escalation about invoices and payment terms", "hiring",
           "design review notes from the spring offsite", "onboarding checklist for new engineers",
           "which meetings were moved to Friday", "preferences for code review and testing"]


def _pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))], 5)


def _memsearch(*args: str) -> list[str]:
    return [sys.executable, "-m", "memsearch", *args]


def _status(root: Path, env: dict) -> dict:
    out = subprocess.run(_memsearch("status", str(root), "--json"), capture_output=True, text=True, env=env).stdout
    try:
        return json.loads(out)
    except ValueError:
        return {}


def _cpu_s(pid: int | None) -> float | None:
    """CPU seconds (user + system, every thread) process ``pid`` has used: /proc on Linux, else None."""
    if pid is None:
        return None
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _counters(root: Path) -> dict | None:
    """The daemon's search and query-encoder counters (its ``status``), or None when it reports none."""
    from memsearch.service.client import Client

    try:
        status = Client(root, timeout=30).call("status")
    except Exception:  # noqa: BLE001 - a daemon of a checkout without them
        return None
    searches, encoder = status.get("searches"), status.get("query_encoder")
    if not isinstance(searches, dict) or not isinstance(encoder, dict):
        return None
    out = {"searches": searches["count"], "search_s": searches["cpu_s"], "batches": encoder["batches"],
           "texts": encoder["texts"], "encode_s": encoder["cpu_s"]}
    return out | ({"encode_wall_s": encoder["wall_s"]} if "wall_s" in encoder else {})


def _split(counts: dict | None, server_ms: float, seconds: float | None = None) -> dict:
    """Where the daemon's CPU per search went, from its counters' growth over a phase (module docstring), and
    ``encoder_busy``: the share of the phase's ``seconds`` that the model spent encoding."""
    if not counts or counts["searches"] <= 0:
        return {}
    encode, search = counts["encode_s"] * 1000 / counts["searches"], counts["search_s"] * 1000 / counts["searches"]
    out = {"mean_batch": round(counts["texts"] / counts["batches"], 2) if counts["batches"] else None,
           "daemon_encode_cpu_ms": round(encode, 3), "daemon_answer_cpu_ms": round(search - encode, 3),
           "daemon_rest_cpu_ms": round(server_ms - search, 3)}
    if "encode_wall_s" in counts and seconds:  # a daemon of a checkout without the counter reports none
        out["encoder_busy"] = round(counts["encode_wall_s"] / seconds, 3)
    return out


def _measure(root: Path, clients: int, seconds: float, daemon_pid: int | None) -> dict:
    """One round of :func:`clients_phase`: its latencies, failures, seconds, CPU seconds and counters' growth."""
    from memsearch.service.client import Client

    stop = threading.Event()
    latencies: list[list[float]] = [[] for _ in range(clients)]
    failures: list[str] = []

    def worker(n: int) -> None:
        client = Client(root, timeout=60)
        i = n * 5
        while not stop.is_set():
            t0 = time.perf_counter()
            try:
                client.call("search", query=QUERIES[i % len(QUERIES)], k=5)
            except Exception as exc:  # noqa: BLE001 - counted, reported
                failures.append(f"{type(exc).__name__}: {exc}")
                return
            latencies[n].append(time.perf_counter() - t0)
            i += 1

    load = load_average()
    counters0 = _counters(root) if daemon_pid is not None else None
    cpu0, server0 = time.process_time(), _cpu_s(daemon_pid)
    elapsed = run_clients(worker, clients, seconds, stop)
    client_cpu, server1 = time.process_time() - cpu0, _cpu_s(daemon_pid)
    counters1 = _counters(root) if daemon_pid is not None else None
    grown = {key: counters1[key] - counters0[key] for key in counters0} if counters0 and counters1 else None
    return {"latencies": [x for part in latencies for x in part], "failures": failures, "elapsed": elapsed,
            "load": load, "client_cpu": client_cpu,
            "server_cpu": server1 - server0 if server0 is not None and server1 is not None else None,
            "counters": grown}


def _summary(clients: int, rounds: list[dict]) -> dict:
    """One phase's figures from its rounds (:func:`_measure`), pooled."""
    every = [x for r in rounds for x in r["latencies"]]
    elapsed = sum(r["elapsed"] for r in rounds)
    out = {"clients": clients, "seconds": round(elapsed, 2), "searches": len(every),
           "qps": round(len(every) / elapsed, 1), "p50_s": _pct(every, 0.5), "p95_s": _pct(every, 0.95),
           "p99_s": _pct(every, 0.99), "failures": [f for r in rounds for f in r["failures"]][:5],
           "loadavg": rounds[0]["load"]}
    if len(rounds) > 1:
        out |= {"rounds": len(rounds), "loadavg_rounds": [r["load"] for r in rounds]}
    if every and all(r["server_cpu"] is not None for r in rounds):
        per_client = sum(r["client_cpu"] for r in rounds) / len(every)
        per_server = sum(r["server_cpu"] for r in rounds) / len(every)
        out.update(client_cpu_ms=round(per_client * 1000, 3), server_cpu_ms=round(per_server * 1000, 3),
                   cpu_bound_qps=round((os.cpu_count() or 1) / (per_client + per_server), 1))
        if all(r["counters"] for r in rounds):
            counts = {key: sum(r["counters"][key] for r in rounds) for key in rounds[0]["counters"]}
            out |= _split(counts, per_server * 1000, elapsed)
    return out


def clients_phase(root: Path, clients: int, seconds: float, daemon_pid: int | None = None) -> dict:
    """``clients`` threads searching through the daemon for ``seconds``; with ``daemon_pid``, the CPU
    seconds per search of the clients (this process) and of the daemon, the bound they set, and the
    daemon's split of its part (:func:`_split`)."""
    return _summary(clients, [_measure(root, clients, seconds, daemon_pid)])


def encode_reference(batch: int, seconds: float) -> dict:
    """Queries/s of this process encoding :data:`QUERIES` one at a time and in batches of ``batch``."""
    from memsearch.engine.embed.embedder import load_embedder

    embedder = load_embedder()
    embedder.embed_query("warm up")
    batched = getattr(embedder, "embed_queries", None)
    out: dict = {"loadavg": load_average(), "batch": batch}

    def rate(step) -> float:
        done, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            done += step(done)
        return round(done / (time.perf_counter() - t0), 1)

    cpu0 = time.process_time()
    out["single_qps"] = rate(lambda i: (embedder.embed_query(QUERIES[i % len(QUERIES)]), 1)[1])
    used = time.process_time() - cpu0  # a lone query's encode, as one client's searches have it
    out["single_cpu_ms_per_query"] = round(used * 1000 / (out["single_qps"] * min(seconds, 5.0)), 3)
    if batched is not None:
        group = [QUERIES[i % len(QUERIES)] for i in range(batch)]
        cpu0 = time.process_time()
        out["batched_qps"] = rate(lambda i: (batched(group), batch)[1])
        used = time.process_time() - cpu0  # CPU of every thread (the encoder's own included), per query
        out["batched_cpu_ms_per_query"] = round(used * 1000 / (out["batched_qps"] * min(seconds, 5.0)), 3)
    return out


def answer_reference(roots: list[tuple[str, Path, dict, Path]], searches: int, log=print) -> dict:
    """``answer_cpu_ms`` of each checkout (module docstring): ``roots`` are (name, root, env, checkout)."""
    best: dict[str, float] = {}
    for _ in range(ANSWER_ROUNDS):
        for name, root, env, code in roots:
            out = subprocess.run([sys.executable, "-c", _ANSWER_SCRIPT, str(root), str(searches)], capture_output=True,
                                 text=True, env=env, cwd=code)
            if out.returncode != 0:
                raise RuntimeError(f"the answer reference failed in {code}: {out.stderr[-2000:]}")
            best[name] = min(best.get(name, float("inf")), float(out.stdout.strip().splitlines()[-1]))
    log(f"answer without the encode, CPU per search: {best}")
    return {name: round(ms, 3) for name, ms in best.items()}


def _start_daemon(root: Path, env: dict, code: Path = REPO) -> dict:
    """Start ``memsearch watch --detach`` on ``root`` from checkout ``code`` and wait until it serves,
    caught up; its status. It runs in ``code`` because ``python -m`` imports the package of its working
    directory before PYTHONPATH's."""
    started = subprocess.run(_memsearch("watch", str(root), "--detach"), capture_output=True, text=True, env=env,
                             cwd=code)
    if started.returncode != 0:
        raise RuntimeError(f"the daemon did not start: {started.stderr}")
    deadline = time.monotonic() + 600
    while not ((s := _status(root, env)).get("serving") and s.get("last_sync")):
        if time.monotonic() > deadline:
            raise RuntimeError("the daemon did not catch up within 600 s")
        time.sleep(0.5)
    return s


def run(clients: list[int], seconds: float, batch: int, label: str, log=print, compare: Path | None = None,
        answers: int = 2000, rounds: int = 1) -> dict:
    """The phases (module docstring); ``compare``: another checkout whose daemon (labelled ``before``)
    serves a second copy of the tree, its phases interleaved with this one's in the same run; ``answers``:
    searches per round of the answer reference (0: none); ``rounds``: phases per client count and checkout,
    the checkouts' order alternating, pooled into one figure each."""
    env = child_env()
    env.pop("MEMSEARCH_DB", None)
    codes = [(label or "this", REPO)] + ([("before", compare)] if compare is not None else [])
    work = Path(tempfile.mkdtemp(prefix="memsearch-concurrency-"))
    results: dict = {"label": label, "cpus": os.cpu_count(), "loadavg_start": load_average(), "phases": []}
    daemons: list[tuple[str, Path, dict, dict]] = []
    checkouts: list[tuple[str, Path, dict, Path]] = []
    try:
        for name, code in codes:
            root = work / name / "memory"
            shutil.copytree(EXAMPLES, root, ignore=shutil.ignore_patterns(".memsearch"))
            code_env = dict(env, PYTHONPATH=os.pathsep.join(p for p in (str(code), env.get("PYTHONPATH", "")) if p))
            status = _start_daemon(root, code_env, code)
            daemons.append((name, root, code_env, status))
            checkouts.append((name, root, code_env, code))
            results["chunks"] = status.get("chunks")
            clients_phase(root, 2, 2.0)  # warm: the daemon's copies of the vectors and BM25
        for n in clients:
            measured: dict[str, list[dict]] = {name: [] for name, *_ in daemons}
            for turn in range(rounds):  # the checkouts' order alternates from round to round
                for name, root, _, status in (daemons if turn % 2 == 0 else daemons[::-1]):
                    measured[name].append(_measure(root, n, seconds, status.get("pid")))
            for name, root, _, status in daemons:
                phase = _summary(n, measured[name]) | {"code": name}
                results["phases"].append(phase)
                log(f"{name:>6} {n:>3} clients: {phase['qps']:>7.1f} searches/s  p50 {phase['p50_s'] * 1000:6.1f} ms  "
                    f"p99 {phase['p99_s'] * 1000:6.1f} ms  CPU/search: clients {phase.get('client_cpu_ms')} ms, "
                    f"daemon {phase.get('server_cpu_ms')} ms  load {phase['loadavg']}")
                if "mean_batch" in phase:
                    log(f"{'':>6} {'':>3}          daemon's split: encode {phase['daemon_encode_cpu_ms']} ms, answer "
                        f"{phase['daemon_answer_cpu_ms']} ms, rest {phase['daemon_rest_cpu_ms']} ms; "
                        f"mean batch {phase['mean_batch']}; the model encoding {phase.get('encoder_busy')} of the time")
        if answers:
            results["answer_cpu_ms"] = answer_reference(checkouts, answers, log) | {"loadavg": load_average()}
    finally:
        for _, root, code_env, _ in daemons:
            subprocess.run(_memsearch("stop", str(root)), capture_output=True, env=code_env)
        shutil.rmtree(work, ignore_errors=True)
    results["encode"] = encode_reference(batch, min(seconds, 5.0))
    log(f"encode in-process: {results['encode']}")
    ref = results["encode"].get("batched_qps") or results["encode"]["single_qps"]
    encode_ms = results["encode"].get("batched_cpu_ms_per_query")
    if encode_ms:  # the most searches/s the encode alone allows on every core
        results["encode_bound_qps"] = round((os.cpu_count() or 1) * 1000 / encode_ms, 1)
    for phase in results["phases"]:
        if encode_ms and phase.get("server_cpu_ms") is not None:
            phase["past_encode_cpu_ms"] = round(phase["client_cpu_ms"] + phase["server_cpu_ms"] - encode_ms, 3)
            phase["over_encode_bound"] = round(phase["qps"] / results["encode_bound_qps"], 3)
        base = next((p["qps"] for p in results["phases"] if p["code"] == phase["code"]), None)
        phase["over_one_client"] = round(phase["qps"] / base, 2) if base else None
        phase["p99_over_p50"] = round(phase["p99_s"] / phase["p50_s"], 2) if phase["p50_s"] else None
        phase["over_batched_encode"] = round(phase["qps"] / ref, 3)
        if "past_encode_cpu_ms" in phase:
            log(f"{phase['code']:>6} {phase['clients']:>3} clients: CPU past the encode {phase['past_encode_cpu_ms']} ms, "
                f"{phase['over_encode_bound']} of the encode's bound ({results['encode_bound_qps']}/s)")
    results["loadavg_end"] = load_average()
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.perf.concurrency", description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, help="write the results here (JSON)")
    parser.add_argument("--clients", default="1,4,16", help="client counts, comma-separated")
    parser.add_argument("--seconds", type=float, default=10.0, help="length of each phase")
    parser.add_argument("--batch", type=int, default=16, help="batch size of the in-process encode reference")
    parser.add_argument("--label", default="", help="a name for this run (e.g. before, after)")
    parser.add_argument("--compare", type=Path, help="another checkout (e.g. `git archive` of main) whose daemon "
                        "runs beside this one's, phases interleaved: before and after in one run")
    parser.add_argument("--answers", type=int, default=2000,
                        help="searches per round of the in-process answer reference (0: skip it)")
    parser.add_argument("--rounds", type=int, default=1,
                        help="phases of --seconds per client count and checkout, their order alternating, pooled")
    args = parser.parse_args(argv)
    results = run([int(c) for c in args.clients.split(",")], args.seconds, args.batch, args.label,
                  compare=args.compare, answers=args.answers, rounds=max(args.rounds, 1))
    text = json.dumps(results, indent=2) + "\n"
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
