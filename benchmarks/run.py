"""The benchmark entry point: ``python -m benchmarks [quality|speed|all] ...`` (also ``python -m
benchmarks.run``, ``make bench``). Writes ``results.json``, ``report.md`` and PNG plots to ``--out``.

The standard set (``make bench``): quality on ``examples``, ``locomo``, ``locomo-merged`` and ``cjk``
(with the installed peers), speed and synthetic quality at 1,000 and 10,000 chunks, and
daemon freshness. 100,000 chunks is opt-in (``--size 1000,10000,100000``):
its full index alone took 6,090 s on 2 busy cores (about 25 minutes idle, estimated from the 1k rate).
"""

from __future__ import annotations

import argparse
import os
import shutil
import time
from contextlib import contextmanager
from pathlib import Path

from benchmarks.common import EMBEDDER_ENV, bench_embedder

__all__ = ["run", "main", "progress_bar", "STANDARD_CORPORA", "STANDARD_SIZES", "EMBEDDER_ENV"]

STANDARD_CORPORA = ("examples", "locomo", "locomo-merged", "cjk", "agentmem", "longchat", "longchat-hard", "codeagent")
STANDARD_SIZES = (1000, 10_000)


@contextmanager
def progress_bar(enabled: bool = True):
    """A callback ``(label, done, total)`` drawing one rich progress bar on stderr."""
    if not enabled:
        yield None
        return
    import sys

    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    if not sys.stderr.isatty():  # a log file: a line per finished step, and one every 30 s
        state = {"label": None, "at": 0.0}
        t0 = time.perf_counter()

        def line(label: str, done: int, total: int) -> None:
            now = time.perf_counter()
            if label != state["label"] or done >= total or now - state["at"] > 30:
                print(f"[{now - t0:7.0f} s] {label}: {done}/{total}", file=sys.stderr, flush=True)
                state.update(label=label, at=now)

        yield line
        return
    columns = [TextColumn("{task.description:<34}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn()]
    with Progress(*columns, console=Console(stderr=True), transient=False) as bar:
        tasks: dict[str, int] = {}

        def update(label: str, done: int, total: int) -> None:
            if label not in tasks:
                tasks[label] = bar.add_task(label, total=total)
            bar.update(tasks[label], completed=done, total=total)

        yield update


def _split(values) -> list[str]:
    out = []
    for v in values or ():
        out += [x.strip() for x in str(v).split(",") if x.strip()]
    return out


def run(what: str = "all", corpora=None, sizes=None, out: Path = Path("bench-results"), locomo=None,
        peers: str = "auto", daemon: bool = True, show_progress: bool = True, log=print) -> dict:
    """Run a benchmark set and write its outputs; returns the results (as in results.json)."""
    from benchmarks import quality, report
    from benchmarks.locomo import data_path
    from benchmarks.perf import speed

    if what not in ("quality", "speed", "all"):
        raise ValueError(f"unknown benchmark {what!r}: choose quality, speed or all")
    explicit = bool(corpora)
    corpora = _split(corpora) or list(STANDARD_CORPORA)
    sizes = [int(s) for s in _split(sizes)] or list(STANDARD_SIZES)
    for name in corpora:
        if name not in quality.CORPORA:
            raise ValueError(f"unknown corpus {name!r}: choose from {', '.join(quality.CORPORA)}")
    out = Path(out)
    work = out / "work"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    started = time.perf_counter()
    embedder = bench_embedder()
    results: dict = {"machine": report.machine(), "model": f"{embedder.name} ({embedder.fingerprint})", "notes": []}
    notes = results["notes"]
    peer_list = []
    if what in ("quality", "all") and peers != "off":
        from benchmarks import peers as peer_mod

        if peers == "setup":
            results["peers_setup"] = peer_mod.setup(log=log)
        for p in peer_mod.get_peers():
            if p.available():
                peer_list.append(p)
            else:
                notes.append(f"peer {p.name} not installed: `python -m benchmarks --peers setup` creates {p.venv}")
    with progress_bar(show_progress) as bar:
        if what in ("quality", "all"):
            cached = quality.CachingEmbedder(embedder)
            results["quality"] = []
            for name in corpora:
                if name == "synthetic" and what == "all":
                    continue  # measured at every speed size instead
                if name.startswith("locomo"):
                    try:
                        data_path(locomo)
                    except FileNotFoundError as err:
                        if explicit:  # asked for by name: say why, no traceback
                            raise SystemExit(f"error: {err}") from None
                        notes.append(f"{name} skipped: {err}")
                        continue
                use_peers = peer_list if name != "synthetic" else []
                results["quality"].append(quality.run_corpus(name, work, cached, locomo=locomo, size=sizes[0],
                                                             peers=use_peers, progress=bar))
        if what in ("speed", "all"):
            results["speed"] = speed.run_sizes(sizes, work / "speed", progress=bar)
            if daemon:
                if bar:
                    bar("daemon freshness", 0, 1)
                results["daemon"] = speed.daemon_freshness(work / "speed")
                if bar:
                    bar("daemon freshness", 1, 1)
    if what in ("speed", "all") and 100_000 not in sizes:
        notes.append(
            "100,000 chunks is opt-in (`python -m benchmarks speed --size 1000,10000,100000`): "
            "its full index took 6,090 s on 2 busy cores, about 25 min idle (estimated)"
        )
    results["seconds"] = round(time.perf_counter() - started, 1)
    results["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
    paths = report.write(results, out)
    log(f"wrote {paths['json']}, {paths['markdown']} and {len(paths['plots'])} plots in {out} ({results['seconds']} s)")
    return results


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks", description="memsearch benchmarks: retrieval quality and speed"
    )
    parser.add_argument("what", nargs="?", default="all", choices=("quality", "speed", "all"))
    parser.add_argument(
        "--corpus",
        action="append",
        help="examples, locomo, locomo-merged, synthetic, cjk, agentmem, longchat, longchat-hard, longchat-alt, longchat-ask, codeagent "
        "(comma-separated or repeated)",
    )
    parser.add_argument("--size", action="append", help="synthetic sizes in chunks (default 1000,10000)")
    parser.add_argument("--out", default="bench-results", type=Path)
    parser.add_argument(
        "--locomo", help="path of locomo10.json (default ../shared/data/locomo10.json or $MEMSEARCH_LOCOMO)"
    )
    parser.add_argument(
        "--peers",
        default="auto",
        choices=("auto", "setup", "off"),
        help="auto: run the peers whose venvs exist; setup: create missing venvs first (pip); off",
    )
    parser.add_argument("--no-daemon", action="store_true", help="skip the daemon freshness run")
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    run(args.what, args.corpus, args.size, args.out, args.locomo, args.peers, not args.no_daemon, not args.no_progress)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
