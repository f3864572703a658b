"""Benchmark of the Claude Code hooks: wall time of each hook as Claude Code runs it (a command, JSON on stdin).

    python -m benchmarks.perf.hooks [--out DIR] [--runs 20]

On a copy of examples/memory, indexed first, with the real model: a bare ``python -c pass`` (the floor of any
hook), then the first prompt hook with no daemon running (it starts one and waits for it at most
``START_WAIT_S``), the session-start hook, and ``--runs`` prompt hooks through the warm daemon. Every figure
goes with the load average; results go to ``DIR/hooks.json`` and a line per measure on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import REPO, child_env, compile_bytecode, write_result

__all__ = ["run", "main"]

QUERY = "which warehouse did we choose for Atlas and why"


def _timed(command: list[str], payload: dict | None, env: dict) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(command, input=json.dumps(payload) if payload is not None else "", capture_output=True,
                          text=True, env=env, timeout=120)
    return time.perf_counter() - start, done.stdout


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def run(runs: int = 20) -> dict:
    from memsearch.harness.claude_code import hook_command
    from memsearch.service import process

    env = child_env(PYTHONPATH=str(REPO))
    compile_bytecode()  # as installing does: no timed hook compiles sources
    work = Path(tempfile.mkdtemp(prefix="memsearch-hooks-"))
    root = shutil.copytree(REPO / "examples" / "memory", work / "memory")
    subprocess.run([sys.executable, "-m", "memsearch", "index", str(root)], env=env, check=True, capture_output=True)
    session = shlex.split(hook_command("SessionStart", root))
    prompt = shlex.split(hook_command("UserPromptSubmit", root))
    ask = {"hook_event_name": "UserPromptSubmit", "prompt": QUERY, "session_id": "bench", "cwd": str(work)}
    result = {"runs": runs, "load_start": os.getloadavg(), "tree": "examples/memory"}
    try:
        result["python_pass_s"] = statistics.median(_timed([sys.executable, "-c", "pass"], None, env)[0]
                                                    for _ in range(5))
        result["prompt_no_daemon_s"], out = _timed(prompt, ask, env)
        result["prompt_no_daemon_answered"] = bool(out.strip())
        deadline = time.monotonic() + 300
        while not ((s := process.daemon_status(root)).get("serving") and s.get("state") == "watching"):
            if time.monotonic() > deadline:
                raise RuntimeError(f"the daemon did not come up: {s}")
            time.sleep(0.2)
        result["session_start_s"] = _timed(session, {"hook_event_name": "SessionStart", "source": "startup"}, env)[0]
        warm, reference = [], []
        for _ in range(runs):  # each round times the reference too, so load drifts hit both alike
            reference.append(_timed([sys.executable, "-c", "pass"], None, env)[0])
            seconds, out = _timed(prompt, ask, env)
            if "projects/atlas.md" not in out and "notes/" not in out:
                raise RuntimeError(f"the prompt hook recalled nothing: {out!r}")
            warm.append(seconds)
        result["prompt_warm_p50_s"], result["prompt_warm_p95_s"] = _p(warm, 0.5), _p(warm, 0.95)
        result["python_pass_s"] = _p(reference, 0.5)
        result["prompt_warm_p50_over_python_pass"] = result["prompt_warm_p50_s"] / result["python_pass_s"]
    finally:
        process.stop(root)
        shutil.rmtree(work, ignore_errors=True)
    result["load_end"] = os.getloadavg()
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.perf.hooks", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "bench-results")
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args(argv)
    result = run(args.runs)
    write_result(args.out, "hooks.json", result)
    for key, value in result.items():
        print(f"{key}: {value:.3f}" if isinstance(value, float) else f"{key}: {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
