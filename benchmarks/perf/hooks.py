"""Benchmark of the Claude Code hooks: wall time of each hook as Claude Code runs it (a command, JSON on stdin).

    python -m benchmarks.perf.hooks [--out DIR] [--runs 20]

On copies of examples/memory, with the real model and a per-user service of its own (its own
``$XDG_RUNTIME_DIR``), each figure beside the load average at its time:

* **cold**: a copy never indexed, no daemon; the session-start hook, then at once the first prompt hook (as
  ``claude -p`` runs them): the prompt is answered in-process by keyword (text rows first, hits ``partial``)
  or by the daemon session start started; a first prompt hook with no session start before it; and the first
  pair again with the hooks' bound lifted (``MEMSEARCH_HOOK_TIMEOUT=120``: how long the answer takes), beside
  ``python -I -c "import lancedb"``, the floor of any in-process answer;
* **indexed, no daemon** (an index built earlier, its daemon gone): the first prompt hook;
* **warm**: the session-start hook, then ``--runs`` prompt hooks through the daemon, each round timing a bare
  ``python -c pass`` too (the floor of any hook), so load drifts hit both alike.

Results go to ``DIR/hooks.json`` and a line per measure on stdout.
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import REPO, child_env, compile_bytecode, load_average, write_result

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


def _recalled(out: str) -> dict:
    """What a prompt hook's output says: whether it recalled the Atlas decision, how many hits, how many partial."""
    try:
        text = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    except (ValueError, KeyError, TypeError):
        return {"hits": 0, "partial": 0, "atlas": False}
    hits = [line for line in text.splitlines() if line.startswith("- ")]
    return {"hits": len(hits), "partial": sum("[partial]" in line for line in hits), "atlas": "atlas" in text.lower()}


def _memsearch(env: dict, *args: str) -> subprocess.CompletedProcess:
    """``memsearch ARGS`` in the benchmark's environment (its own ``$XDG_RUNTIME_DIR``: its own service)."""
    return subprocess.run([sys.executable, "-m", "memsearch", *args], env=env, capture_output=True, text=True,
                          timeout=120)


def _wait_serving(root: Path, env: dict) -> None:
    deadline = time.monotonic() + 300
    while not ((s := json.loads(_memsearch(env, "status", str(root), "--json").stdout or "{}")).get("serving")
               and s.get("state") == "watching"):
        if time.monotonic() > deadline:
            raise RuntimeError(f"the daemon did not come up: {s}")
        time.sleep(0.2)


def _median(command: list[str], env: dict, n: int = 3) -> float:
    return _p([_timed(command, None, env)[0] for _ in range(n)], 0.5)


def _cold(work: Path, name: str, env: dict, session_first: bool) -> dict:
    """One never-indexed copy: (the session-start hook, then) the first prompt hook; the daemon stopped after."""
    from memsearch.harness.claude_code import hook_command

    root = shutil.copytree(REPO / "examples" / "memory", work / name, ignore=shutil.ignore_patterns(".memsearch"))
    result: dict = {"load_before": load_average()}
    try:
        if session_first:
            result["session_start_s"] = _timed(shlex.split(hook_command("SessionStart", root)),
                                               {"hook_event_name": "SessionStart", "source": "startup"}, env)[0]
        result["prompt_s"], out = _timed(shlex.split(hook_command("UserPromptSubmit", root)),
                                         {"hook_event_name": "UserPromptSubmit", "prompt": QUERY}, env)
        result |= _recalled(out)
        result["load_after"] = load_average()
        _wait_serving(root, env)  # the service the hooks started: its first build done before the next measure
    finally:
        _memsearch(env, "stop", "--all")  # the next measure starts with no service, as a cold one does
    return result


def run(runs: int = 20) -> dict:
    from memsearch.harness.claude_code import hook_command

    work = Path(tempfile.mkdtemp(prefix="memsearch-hooks-"))
    runtime = work / "run"  # the benchmark's own per-user service, whatever else runs on the machine
    runtime.mkdir(mode=0o700)
    env = child_env(PYTHONPATH=str(REPO), MEMSEARCH_AUTOSTART="1", XDG_RUNTIME_DIR=str(runtime))
    compile_bytecode()  # as installing does: no timed hook compiles sources
    result = {"runs": runs, "load_start": load_average(), "tree": "examples/memory"}
    root = shutil.copytree(REPO / "examples" / "memory", work / "memory", ignore=shutil.ignore_patterns(".memsearch"))
    session = shlex.split(hook_command("SessionStart", root))
    prompt = shlex.split(hook_command("UserPromptSubmit", root))
    ask = {"hook_event_name": "UserPromptSubmit", "prompt": QUERY, "session_id": "bench", "cwd": str(work)}
    try:
        # The floor of an in-process answer: Python with LanceDB imported (isolated, as the hook runs).
        result["import_lancedb_s"] = _median([sys.executable, "-I", "-c", "import lancedb"], env)
        result["cold_session_then_prompt"] = _cold(work, "cold-a", env, session_first=True)
        result["cold_prompt_alone"] = _cold(work, "cold-b", env, session_first=False)
        # The same with the hooks' bound lifted: how long the cold answer takes where the bound cuts it.
        unbounded = env | {"MEMSEARCH_HOOK_TIMEOUT": "120"}
        result["cold_session_then_prompt_unbounded"] = _cold(work, "cold-c", unbounded, session_first=True)
        subprocess.run([sys.executable, "-m", "memsearch", "index", str(root)], env=env, check=True,
                       capture_output=True)
        result["indexed_no_daemon"] = {"load_before": load_average()}
        seconds, out = _timed(prompt, ask, env)
        result["indexed_no_daemon"] |= {"prompt_s": seconds, **_recalled(out), "load_after": load_average()}
        _wait_serving(root, env)
        result["session_start_s"] = _timed(session, {"hook_event_name": "SessionStart", "source": "startup"}, env)[0]
        warm, reference = [], []
        for _ in range(runs):  # each round times the reference too, so load drifts hit both alike
            reference.append(_timed([sys.executable, "-c", "pass"], None, env)[0])
            seconds, out = _timed(prompt, ask, env)
            if not _recalled(out)["atlas"]:
                raise RuntimeError(f"the prompt hook recalled nothing: {out!r}")
            warm.append(seconds)
        result["prompt_warm_p50_s"], result["prompt_warm_p95_s"] = _p(warm, 0.5), _p(warm, 0.95)
        result["python_pass_s"] = _p(reference, 0.5)
        result["prompt_warm_p50_over_python_pass"] = result["prompt_warm_p50_s"] / result["python_pass_s"]
    finally:
        _memsearch(env, "stop", "--all")
        shutil.rmtree(work, ignore_errors=True)
    result["load_end"] = load_average()
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.perf.hooks", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "bench-results")
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args(argv)
    result = run(args.runs)
    write_result(args.out, "hooks.json", result)
    for key, value in result.items():
        if isinstance(value, dict):
            value = {k: round(v, 3) if isinstance(v, float) else v for k, v in value.items()}
        print(f"{key}: {value:.3f}" if isinstance(value, float) else f"{key}: {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
