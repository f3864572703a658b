"""``memsearch bench``: retrieval quality and speed benchmarks (registered by :func:`register`).

The benchmarks live in the repository's ``benchmarks/`` package (not in the wheel) and need
matplotlib and psutil (``pip install 'agent-memsearch[bench]'``); both are imported only
when the command runs, and their absence is one line ``error: ...``.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import List, Optional

import typer

from ..errors import MemsearchError

__all__ = ["register", "BenchUnavailable"]


class BenchUnavailable(MemsearchError):
    """The benchmark package or one of its dependencies is missing."""


def _load_benchmarks():
    """``benchmarks.run``, from the import path or else from the repository around us or cwd."""
    import sys

    for attempt in range(2):
        try:
            return importlib.import_module("benchmarks.run")
        except ModuleNotFoundError as err:
            if not err.name or err.name.split(".")[0] != "benchmarks" or attempt:
                if err.name and err.name.split(".")[0] == "benchmarks":
                    break
                raise
        here = Path(__file__).resolve().parents[2]  # the repository root of an editable install
        for root in (here, Path.cwd(), *Path.cwd().parents):
            if (root / "benchmarks" / "run.py").is_file():
                sys.path.insert(0, str(root))
                break
        else:
            break
    raise BenchUnavailable(
        "the benchmarks are not installed with memsearch: run `memsearch bench` in a clone of the repository "
        "(an editable install, `make setup`), e.g. `make bench`")


def _check_deps() -> None:
    for module in ("matplotlib", "psutil"):
        try:
            importlib.import_module(module)
        except ImportError:
            raise BenchUnavailable(f"the benchmarks need {module}: pip install 'agent-memsearch[bench]'") from None


def register(app: typer.Typer) -> None:
    """Add the ``bench`` command to ``app``."""

    @app.command("bench")
    def bench(
        what: str = typer.Argument("all", help="quality, speed or all.", show_default=True),
        corpus: Optional[List[str]] = typer.Option(None, "--corpus", help="examples, locomo, locomo-merged, synthetic (repeat or comma-separate; default: examples, locomo, locomo-merged)."),
        size: Optional[List[str]] = typer.Option(None, "--size", help="Synthetic sizes in chunks (repeat or comma-separate; default 1000,10000; 100000 is opt-in)."),
        out: Path = typer.Option(Path("bench-results"), "--out", help="Where results.json, report.md and the PNG plots go."),
        locomo: Optional[Path] = typer.Option(None, "--locomo", help="Path of locomo10.json (default ../shared/data/locomo10.json or $MEMSEARCH_LOCOMO)."),
        peers: str = typer.Option("auto", "--peers", help="auto: run installed peers; setup: create their venvs first (pip); off."),
        daemon: bool = typer.Option(True, "--daemon/--no-daemon", help="Measure daemon freshness (speed and all)."),
        progress: bool = typer.Option(True, "--progress/--no-progress", help="Show a progress bar."),
    ) -> None:
        """Benchmark retrieval quality and speed; writes JSON results, a Markdown report and PNG plots."""
        from ..errors import InvalidArgument

        if what not in ("quality", "speed", "all"):
            raise InvalidArgument(f"unknown benchmark {what!r}: choose quality, speed or all")
        if peers not in ("auto", "setup", "off"):
            raise InvalidArgument(f"unknown --peers {peers!r}: choose auto, setup or off")
        runner = _load_benchmarks()
        _check_deps()
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        try:
            runner.run(what, corpus, size, out, str(locomo) if locomo else None, peers, daemon, progress)
        except (ValueError, FileNotFoundError) as err:
            raise InvalidArgument(str(err)) from None
