"""``memsearch bench``: the repository's benchmarks, when they can be imported (registered by :func:`register`).

The benchmarks are the ``benchmarks`` package of a clone of the repository, not part of the
wheel, and need matplotlib and psutil (``pip install 'agent-memsearch[bench]'``). This command
imports that package from the import path as it is (run it from the clone's root as ``python -m
memsearch bench``, or use ``make bench`` / ``python -m benchmarks``); it never searches the disk
for it and never changes the import path or the environment. What is missing is one line
``error: ...`` saying how to get it.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import List, Optional

import typer

from ..errors import MemsearchError

__all__ = ["register", "BenchUnavailable", "HOW_TO_RUN"]

#: How to get the benchmarks, for the message when they cannot be imported.
HOW_TO_RUN = ("the benchmarks are not installed with memsearch: they run from a clone of the repository, "
              "in its root: `make bench`, or after `make setup` `.venv/bin/python -m memsearch bench ...` "
              "(the same as `.venv/bin/python -m benchmarks ...`)")


class BenchUnavailable(MemsearchError):
    """The benchmark package or one of its dependencies is missing."""


def _load_benchmarks():
    """``benchmarks.run`` from the import path as it is, or :class:`BenchUnavailable`."""
    try:
        runner = importlib.import_module("benchmarks.run")
    except ModuleNotFoundError as err:
        if err.name and err.name.split(".")[0] == "benchmarks":
            raise BenchUnavailable(HOW_TO_RUN) from None
        raise
    if not callable(getattr(runner, "run", None)):  # some other project's ``benchmarks``
        raise BenchUnavailable(f"{runner.__file__} is not memsearch's benchmarks: {HOW_TO_RUN}")
    return runner


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
        corpus: Optional[List[str]] = typer.Option(None, "--corpus", help="examples, locomo, locomo-merged, synthetic, cjk (repeat or comma-separate; default: examples, locomo, locomo-merged, cjk)."),
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
        try:
            runner.run(what, corpus, size, out, str(locomo) if locomo else None, peers, daemon, progress)
        except (ValueError, FileNotFoundError) as err:
            raise InvalidArgument(str(err)) from None
