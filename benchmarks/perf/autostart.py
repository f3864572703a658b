"""Benchmark of the auto-started daemon: CLI wall times with no daemon started by hand.

    python -m benchmarks.perf.autostart [--out DIR] [--runs 10] [--off-runs 3]

On a copy of examples/memory, indexed first (``memsearch index``), with the real model:

1. **reference**: wall time of a bare ``python -c pass`` (the floor of any CLI call);
2. **autostart off** (``MEMSEARCH_AUTOSTART=0``, today's behaviour without ``watch``): each
   ``memsearch search ROOT QUERY`` loads the model in-process (``--off-runs`` calls);
3. **autostart on**: the first call (answered in-process; it starts a daemon in the
   background), the time until that daemon serves, then ``--runs`` calls answered by it.

Every figure goes with the load average beside it and as a ratio to the reference of the same
run. Results go to ``DIR/autostart.json`` and a Markdown table on stdout.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import REPO, load_average, write_result
from benchmarks.perf.service import QUERIES, _env, _memsearch, _stats, _status, _wall

__all__ = ["run", "main", "report"]

EXAMPLES = REPO / "examples" / "memory"
#: The auto-started daemon of the benchmark exits this long after its last request.
IDLE_EXIT_S = 120


def run(out: Path | None = None, runs: int = 10, off_runs: int = 3, log=print) -> dict:
    """Run the benchmark; returns the results (also written to ``out/autostart.json``)."""
    work = Path(tempfile.mkdtemp(prefix="memsearch-autostart-"))
    root = work / "memory"
    shutil.copytree(EXAMPLES, root, ignore=shutil.ignore_patterns(".memsearch"))
    off = dict(_env(), MEMSEARCH_AUTOSTART="0")
    on = dict(_env(), MEMSEARCH_AUTOSTART="1", MEMSEARCH_IDLE_EXIT=str(IDLE_EXIT_S))
    result: dict = {"load_start": load_average()}
    try:
        subprocess.run(_memsearch("index", str(root)), env=off, check=True, capture_output=True)
        reference = [_wall([sys.executable, "-c", "pass"], off) for _ in range(5)]
        result["reference_python_s"] = _stats(reference) | {"load": load_average()}
        log(f"reference python -c pass: {result['reference_python_s']['p50']:.3f} s")
        walls = [_wall(_memsearch("search", str(root), QUERIES[i % len(QUERIES)]), off) for i in range(off_runs)]
        result["off_s"] = _stats(walls) | {"load": load_average()}
        log(f"autostart off, each call in-process: p50 {result['off_s']['p50']:.3f} s")
        started = time.perf_counter()
        first = _wall(_memsearch("search", str(root), QUERIES[0]), on)
        result["first_call_s"] = {"wall": round(first, 4), "load": load_average()}
        while not _status(root, off).get("serving"):
            if time.perf_counter() - started > 600:
                raise RuntimeError("the auto-started daemon did not serve within 600 s")
            time.sleep(0.1)
        result["daemon_serving_after_s"] = round(time.perf_counter() - started, 3)
        log(f"first call {first:.3f} s; daemon serving after {result['daemon_serving_after_s']:.1f} s")
        walls = [_wall(_memsearch("search", str(root), QUERIES[i % len(QUERIES)]), on) for i in range(runs)]
        result["later_calls_s"] = _stats(walls) | {"load": load_average()}
        log(f"later calls (daemon): p50 {result['later_calls_s']['p50']:.3f} s")
        ref = result["reference_python_s"]["p50"]
        result["ratios_to_python_start"] = {
            "off_p50": round(result["off_s"]["p50"] / ref, 2),
            "first_call": round(result["first_call_s"]["wall"] / ref, 2),
            "later_p50": round(result["later_calls_s"]["p50"] / ref, 2)}
    finally:
        subprocess.run(_memsearch("stop", str(root)), env=off, capture_output=True)
        shutil.rmtree(work, ignore_errors=True)
    result["load_end"] = load_average()
    write_result(out, "autostart.json", result)
    return result


def report(r: dict) -> str:
    ratio = r["ratios_to_python_start"]
    rows = [("python -c pass (reference)", r["reference_python_s"]["p50"], 1.0, r["reference_python_s"]["load"]),
            ("search, autostart off (p50)", r["off_s"]["p50"], ratio["off_p50"], r["off_s"]["load"]),
            ("search, first call (autostart)", r["first_call_s"]["wall"], ratio["first_call"], r["first_call_s"]["load"]),
            ("search, later calls via the daemon (p50)", r["later_calls_s"]["p50"], ratio["later_p50"],
             r["later_calls_s"]["load"])]
    lines = ["| call | wall s | x python start | load (1/5/15 min) |", "|---|---:|---:|---|"]
    lines += [f"| {name} | {wall:.3f} | {ratio:.2f} | {' '.join(map(str, load))} |" for name, wall, ratio, load in rows]
    lines.append(f"\nThe daemon served {r['daemon_serving_after_s']:.1f} s after the first call began.")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.perf.autostart", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=None, help="write autostart.json here")
    parser.add_argument("--runs", type=int, default=10, help="calls answered by the auto-started daemon")
    parser.add_argument("--off-runs", type=int, default=3, help="calls with autostart off (each loads the model)")
    args = parser.parse_args(argv)
    print(report(run(args.out, args.runs, args.off_runs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
