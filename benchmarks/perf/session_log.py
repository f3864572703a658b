"""Benchmark of the session log's hook: what Claude Code's Stop costs a turn, with the log off and on.

    python -m benchmarks.perf.session_log [--out DIR] [--runs 10]

On a copy of examples/memory with its daemon warm (the real model): a bare ``python -c pass`` timed in the same
rounds (the floor of any hook); the plugin's Stop hook with ``log_sessions`` off (its launcher returns before
Python starts); the ``session-log`` hook as ``memsearch claude-code install --log-sessions`` writes it, on a
transcript of 10 turns and of 200 turns (each turn a prompt, a Read, an Edit, a tool result and a final answer),
each run rewriting the session's section and the daemon indexing it before the hook returns. Results go to
``DIR/session_log.json`` with the load average, and a line per measure on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import REPO, child_env, compile_bytecode, write_result

__all__ = ["transcript", "run", "main"]

LAUNCHER = REPO / "plugins" / "memsearch" / "scripts" / "memsearch-plugin"


def transcript(path: Path, cwd: str, turns: int, run: int = 0) -> Path:
    """A Claude Code transcript of ``turns`` turns (``run`` changes the last answer, so each run rewrites)."""
    lines = []
    for i in range(turns):
        when = f"2026-11-03T{10 + i // 60:02d}:{i % 60:02d}"
        base = {"sessionId": "bench", "cwd": cwd, "gitBranch": "main", "isSidechain": False}
        lines.append(base | {"type": "user", "timestamp": f"{when}:00Z", "message": {
            "role": "user", "content": f"turn {i}: make the exporter retry when the upload of batch {i} fails"}})
        lines.append(base | {"type": "assistant", "timestamp": f"{when}:01Z", "message": {"role": "assistant", "content": [
            {"type": "tool_use", "id": f"r{i}", "name": "Read", "input": {"file_path": f"{cwd}/src/export_{i % 7}.py"}},
            {"type": "tool_use", "id": f"e{i}", "name": "Edit", "input": {"file_path": f"{cwd}/src/upload_{i % 5}.py",
                                                                          "old_string": "a", "new_string": "b"}}]}})
        lines.append(base | {"type": "user", "timestamp": f"{when}:02Z", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"r{i}", "content": "def export():\n    ...\n" * 40}]}})
        answer = f"Batch {i} now retries three times with backoff; the test covers a failed upload. (run {run})"
        lines.append(base | {"type": "assistant", "timestamp": f"{when}:03Z", "message": {
            "role": "assistant", "content": [{"type": "text", "text": answer}]}})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def _timed(command: list[str], payload: dict | None, env: dict) -> float:
    start = time.perf_counter()
    subprocess.run(command, input=json.dumps(payload) if payload is not None else "", capture_output=True, text=True,
                   env=env, timeout=120, check=True)
    return time.perf_counter() - start


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def run(runs: int = 10) -> dict:
    from memsearch.harness.claude_code import hook_command
    from memsearch.service import process

    env = child_env(PYTHONPATH=str(REPO))
    compile_bytecode()
    work = Path(tempfile.mkdtemp(prefix="memsearch-session-log-"))
    root = shutil.copytree(REPO / "examples" / "memory", work / "memory")
    project = work / "exporter"
    (project / ".git").mkdir(parents=True)
    subprocess.run([sys.executable, "-m", "memsearch", "index", str(root)], env=env, check=True, capture_output=True)
    log = shlex.split(hook_command("Stop", root))
    off = [str(LAUNCHER), "hook", "session-log"]
    result: dict = {"runs": runs, "load_start": os.getloadavg(), "tree": "examples/memory"}
    try:
        process.detach(root)  # the daemon the hooks would have started, warm
        deadline = time.monotonic() + 300
        while not ((s := process.daemon_status(root)).get("serving") and s.get("state") == "watching"):
            if time.monotonic() > deadline:
                raise RuntimeError(f"the daemon did not come up: {s}")
            time.sleep(0.2)
        reference, quiet = [], []
        sizes = {10: [], 200: []}
        for n in range(runs):  # each round times the reference too, so load drifts hit every figure alike
            reference.append(_timed([sys.executable, "-c", "pass"], None, env))
            quiet.append(_timed(off, {"hook_event_name": "Stop"}, env | {"MEMSEARCH_LOG_SESSIONS": "false"}))
            for turns, times in sizes.items():
                path = transcript(work / f"t{turns}.jsonl", str(project), turns, n)
                payload = {"session_id": f"bench-{turns}", "transcript_path": str(path), "cwd": str(project),
                           "hook_event_name": "Stop"}
                times.append(_timed(log, payload, env))
        written = (root / "exporter" / "2026-11-03.md").read_text()
        if written.count("## Session") != 2 or f"(run {runs - 1})" not in written:
            raise RuntimeError("the session log was not written as expected")
        result["python_pass_s"] = _p(reference, 0.5)
        result["stop_log_off_s"] = _p(quiet, 0.5)
        for turns, times in sizes.items():
            result[f"stop_log_on_{turns}_turns_p50_s"] = _p(times, 0.5)
            result[f"stop_log_on_{turns}_turns_p95_s"] = _p(times, 0.95)
        result["transcript_200_turns_bytes"] = (work / "t200.jsonl").stat().st_size
    finally:
        process.stop(root)
        shutil.rmtree(work, ignore_errors=True)
    result["load_end"] = os.getloadavg()
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.perf.session_log", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "bench-results")
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args(argv)
    result = run(args.runs)
    write_result(args.out, "session_log.json", result)
    for key, value in result.items():
        print(f"{key}: {value:.3f}" if isinstance(value, float) else f"{key}: {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
