"""Benchmark of concurrent MCP sessions on one root: the resident memory of each ``memsearch serve`` and of the daemon.

    python -m benchmarks.perf.mcp_sessions [--out DIR] [--sessions 5] [--searches 2] [--in-process]
    python -m benchmarks.perf.mcp_sessions --first-call [--repeats 3] [--busy 2] [--out DIR]

On a copy of examples/memory with the real model, ``--sessions`` stdio MCP sessions (the ``mcp`` SDK's client, as
Claude Code, Claude Desktop or Cursor start one each) open together on the root, with autostart on (the
default): each runs ``--searches`` ``memory_search`` calls, then the resident set (psutil RSS) of every
``memsearch serve`` process and of the daemon is read while all sessions are still open. Also:

* each session's first search: its wall time from the call, and whether it got hits or the daemon's "starting"
  answer (then the call is repeated until hits come);
* where a thin server's memory goes: the RSS of a fresh Python after each import of the server's stack, and
  what the ``mcp`` SDK's stdio server would add (memsearch's stdio server does without it: harness/stdio.py);
* ``--in-process``: the same sessions with ``MEMSEARCH_AUTOSTART=0``, each server loading its own model (the
  behaviour before the thin client), for the before/after in one run.

``--first-call`` measures the first ``memory_search`` of a new session instead: the per-user service not
running (autostart on, so the session's server starts it), on a root never indexed and on one already indexed,
each in a fresh ``$XDG_RUNTIME_DIR`` of its own, ``--repeats`` times, with ``--busy`` processes spinning on a core
each meanwhile (the shared 2-core machine's worst case); then the same call once the service has embedded the
root (warm). Reference timed in the same run: ``python -c "import lancedb"``, the floor of any keyword answer.
Results go to ``DIR/mcp_first_call.json``.

Results go to ``DIR/mcp_sessions.json`` and a Markdown table on stdout, the load average beside each figure.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import REPO, load_average, write_result
from benchmarks.perf.service import _env, _memsearch

__all__ = ["run", "main", "report", "import_steps", "first_calls", "first_call_report"]

EXAMPLES = REPO / "examples" / "memory"
QUERIES = ("materialized view that keeps the newest grid value", "who reviews the Atlas schema changes",
           "what does Maya prefer for standups", "vendor contract renewal")
#: The auto-started daemon of the benchmark exits this long after its last request.
IDLE_EXIT_S = 120
MB = 1e6
#: The imports of a thin ``memsearch serve``, in order: the RSS after each says where its memory goes.
STACK = ("memsearch", "memsearch.service.client", "memsearch.memory.contract", "jsonschema", "memsearch.harness.tools",
         "memsearch.harness.forward", "memsearch.harness.stdio", "memsearch.harness.mcp", "memsearch.cli.app",
         "memsearch.cli.serve")
#: What a stdio server on the ``mcp`` SDK would add (its server and stdio transport), in a fresh Python.
SDK_STACK = ("pydantic", "anyio", "mcp_types", "mcp.server", "mcp.server.stdio")


def import_steps(env: dict, stack=STACK) -> list[dict]:
    """RSS (MB) of a fresh Python after each import of ``stack``."""
    code = ("import psutil, sys, json; p = psutil.Process(); steps = [['python', p.memory_info().rss]]\n"
            "for name in sys.argv[1:]:\n    __import__(name); steps.append([name, p.memory_info().rss])\n"
            "print(json.dumps(steps))")
    out = subprocess.run([sys.executable, "-c", code, *stack], env=env, capture_output=True, text=True, check=True)
    steps, before = [], 0
    for name, rss in json.loads(out.stdout):
        steps.append({"import": name, "rss_mb": round(rss / MB, 1), "added_mb": round((rss - before) / MB, 1)})
        before = rss
    return steps


def _processes(root: Path):
    """(serve processes, daemon processes) of ``root``, by their command lines."""
    import psutil

    serves, daemons = [], []
    for proc in psutil.process_iter(["cmdline"]):
        args = proc.info["cmdline"] or []
        if str(root) not in args or "memsearch" not in args:
            continue
        if "serve" in args:
            serves.append(proc)
        elif "watch" in args:
            daemons.append(proc)
    return serves, daemons


def _sessions(root: Path, env: dict, sessions: int, searches: int) -> dict:
    import anyio
    from mcp import ClientSession, StdioServerParameters, stdio_client

    params = StdioServerParameters(command=sys.executable, args=["-m", "memsearch", "serve", str(root)], env=env,
                                   cwd=str(REPO))
    firsts: list[dict] = [{} for _ in range(sessions)]
    done, measured = anyio.Event(), {}

    async def one(n: int, searched) -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            for i in range(searches):
                started = time.perf_counter()
                while True:
                    result = await client.call_tool("memory_search", {"query": QUERIES[(n + i) % len(QUERIES)], "k": 5})
                    data = json.loads(result.content[0].text)
                    if i == 0 and not firsts[n]:
                        firsts[n] = {"wall_s": round(time.perf_counter() - started, 3),
                                     "answer": data["error"]["type"] if "error" in data else "hits", "load": load_average()}
                    if "error" not in data:
                        break
                    await anyio.sleep(0.5)
            searched()
            await done.wait()

    async def main() -> None:
        left = [sessions]

        def searched() -> None:
            left[0] -= 1

        with anyio.fail_after(600):
            async with anyio.create_task_group() as group:
                for n in range(sessions):
                    group.start_soon(one, n, searched)
                while left[0]:
                    await anyio.sleep(0.1)
                await anyio.sleep(1.0)
                serves, daemons = _processes(root)
                measured["serve_rss_mb"] = sorted(round(p.memory_info().rss / MB, 1) for p in serves)
                measured["daemon_rss_mb"] = [round(p.memory_info().rss / MB, 1) for p in daemons]
                measured["load"] = load_average()
                done.set()

    anyio.run(main)
    serves = measured["serve_rss_mb"]
    return measured | {"first_search": firsts, "serve_processes": len(serves), "max_serve_rss_mb": max(serves),
                       "total_rss_mb": round(sum(serves) + sum(measured["daemon_rss_mb"]), 1)}


def _answer(data: dict) -> str:
    if "error" in data:
        return data["error"]["type"]
    if not data["hits"]:
        return "no hits"
    return "partial hits" if any(h["partial"] for h in data["hits"]) else "hits"


def _first_call(root: Path, env: dict) -> dict:
    """One session's first memory_search (wall time from the call, its answer), then a warm one."""
    import anyio
    from mcp import ClientSession, StdioServerParameters, stdio_client

    params = StdioServerParameters(command=sys.executable, args=["-m", "memsearch", "serve", str(root)], env=env,
                                   cwd=str(REPO))
    query = {"query": QUERIES[0], "k": 5}
    measured: dict = {}

    async def main() -> None:
        with anyio.fail_after(300):
            async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
                started = time.perf_counter()
                await client.initialize()
                measured["initialize_s"] = round(time.perf_counter() - started, 3)
                started = time.perf_counter()
                data = json.loads((await client.call_tool("memory_search", query)).content[0].text)
                measured.update(first_s=round(time.perf_counter() - started, 3), first=_answer(data),
                                load=load_average())
                if "error" in data:
                    measured["first_error"] = data["error"]["message"][:120]
                while _answer(data) != "hits":  # the service embeds the root: then a warm call
                    await anyio.sleep(0.5)
                    data = json.loads((await client.call_tool("memory_search", query)).content[0].text)
                started = time.perf_counter()
                data = json.loads((await client.call_tool("memory_search", query)).content[0].text)
                measured.update(warm_s=round(time.perf_counter() - started, 3), warm=_answer(data))

    anyio.run(main)
    return measured


def first_calls(out: Path | None = None, repeats: int = 3, busy: int = 2, log=print) -> dict:
    """The ``--first-call`` benchmark (see the module docstring); results also in ``out/mcp_first_call.json``."""
    result: dict = {"repeats": repeats, "busy": busy, "load_start": load_average(), "cases": {}}
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(busy)]
    try:
        time.sleep(2.0 if busy else 0.0)
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import lancedb"], check=True)
        result["import_lancedb_s"] = round(time.perf_counter() - started, 3)
        for case in ("never indexed", "indexed"):
            runs = []
            for _ in range(repeats):
                work = Path(tempfile.mkdtemp(prefix="msfc-"))
                root, runtime = work / "memory", work / "run"
                runtime.mkdir(mode=0o700)
                shutil.copytree(EXAMPLES, root, ignore=shutil.ignore_patterns(".memsearch"))
                env = dict(_env(), MEMSEARCH_AUTOSTART="1", MEMSEARCH_IDLE_EXIT=str(IDLE_EXIT_S),
                           XDG_RUNTIME_DIR=str(runtime))
                try:
                    if case == "indexed":
                        subprocess.run(_memsearch("index", str(root)), env=env | {"MEMSEARCH_AUTOSTART": "0"},
                                       check=True, capture_output=True)
                    runs.append(_first_call(root, env))
                    log(f"{case}: {runs[-1]}")
                finally:
                    subprocess.run([sys.executable, "-c", "from memsearch.service.process import stop_service; "
                                    "stop_service()"], env=env, capture_output=True)
                    shutil.rmtree(work, ignore_errors=True)
            result["cases"][case] = runs
    finally:
        for proc in spinners:
            proc.kill()
            proc.wait()
    result["load_end"] = load_average()
    write_result(out, "mcp_first_call.json", result)
    return result


def first_call_report(r: dict) -> str:
    lines = [f"`import lancedb` in the same run: {r['import_lancedb_s']} s; {r['busy']} busy processes; "
             f"load {' '.join(map(str, r['load_start']))} -> {' '.join(map(str, r['load_end']))}\n",
             "| root, service not running | first memory_search s (each run) | its answer | warm call s | load at the call |",
             "|---|---|---|---|---|"]
    for case, runs in r["cases"].items():
        lines.append(f"| {case} | {', '.join(str(x['first_s']) for x in runs)} | "
                     f"{', '.join(sorted({x['first'] for x in runs}))} | {', '.join(str(x['warm_s']) for x in runs)} | "
                     f"{'; '.join(' '.join(map(str, x['load'])) for x in runs)} |")
    return "\n".join(lines)


def run(out: Path | None = None, sessions: int = 5, searches: int = 2, in_process: bool = False, log=print) -> dict:
    """Run the benchmark; returns the results (also written to ``out/mcp_sessions.json``)."""
    work = Path(tempfile.mkdtemp(prefix="memsearch-mcp-sessions-"))
    root = work / "memory"
    shutil.copytree(EXAMPLES, root, ignore=shutil.ignore_patterns(".memsearch"))
    off = dict(_env(), MEMSEARCH_AUTOSTART="0")
    on = dict(_env(), MEMSEARCH_AUTOSTART="1", MEMSEARCH_IDLE_EXIT=str(IDLE_EXIT_S))
    result: dict = {"sessions": sessions, "searches": searches, "load_start": load_average()}
    try:
        result["imports"] = import_steps(off)
        result["sdk_imports"] = import_steps(off, SDK_STACK)
        log("imports: " + ", ".join(f"{s['import']} {s['rss_mb']}" for s in result["imports"]))
        log("the SDK: " + ", ".join(f"{s['import']} {s['rss_mb']}" for s in result["sdk_imports"]))
        subprocess.run(_memsearch("index", str(root)), env=off, check=True, capture_output=True)
        result["thin"] = _sessions(root, on, sessions, searches)
        log(f"thin: serve RSS {result['thin']['serve_rss_mb']} MB, daemon {result['thin']['daemon_rss_mb']} MB")
        subprocess.run(_memsearch("stop", str(root)), env=off, capture_output=True)
        if in_process:
            result["in_process"] = _sessions(root, off, sessions, searches)
            log(f"in-process: serve RSS {result['in_process']['serve_rss_mb']} MB")
    finally:
        subprocess.run(_memsearch("stop", str(root)), env=off, capture_output=True)
        shutil.rmtree(work, ignore_errors=True)
    result["load_end"] = load_average()
    write_result(out, "mcp_sessions.json", result)
    return result


def report(r: dict) -> str:
    lines = ["| sessions on one root | serve processes, RSS MB each | daemon RSS MB | total MB | load (1/5/15 min) |",
             "|---|---|---:|---:|---|"]
    for key, name in (("thin", "thin clients (autostart on)"), ("in_process", "in-process (autostart off)")):
        if key in r:
            m = r[key]
            lines.append(f"| {name} | {', '.join(map(str, m['serve_rss_mb']))} | "
                         f"{', '.join(map(str, m['daemon_rss_mb'])) or '-'} | {m['total_rss_mb']} | "
                         f"{' '.join(map(str, m['load']))} |")
    firsts = r["thin"]["first_search"]
    lines.append("\nFirst search of each thin session: " + "; ".join(f"{f['wall_s']} s ({f['answer']})" for f in firsts))
    lines.append("\n| import (a thin server's stack, in order) | RSS MB after | added MB |\n|---|---:|---:|")
    lines += [f"| {s['import']} | {s['rss_mb']} | {s['added_mb']} |" for s in r["imports"]]
    lines.append("\n| import (the mcp SDK's stdio server, not used by it) | RSS MB after | added MB |\n|---|---:|---:|")
    lines += [f"| {s['import']} | {s['rss_mb']} | {s['added_mb']} |" for s in r["sdk_imports"]]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.perf.mcp_sessions",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=None, help="write mcp_sessions.json here")
    parser.add_argument("--sessions", type=int, default=5, help="concurrent stdio MCP sessions")
    parser.add_argument("--searches", type=int, default=2, help="memory_search calls per session")
    parser.add_argument("--in-process", action="store_true", help="also run the sessions with autostart off")
    parser.add_argument("--first-call", action="store_true", help="measure a new session's first search instead")
    parser.add_argument("--repeats", type=int, default=3, help="--first-call: runs of each case")
    parser.add_argument("--busy", type=int, default=2, help="--first-call: processes spinning meanwhile")
    args = parser.parse_args(argv)
    if args.first_call:
        print(first_call_report(first_calls(args.out, args.repeats, args.busy)))
        return 0
    print(report(run(args.out, args.sessions, args.searches, args.in_process)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
