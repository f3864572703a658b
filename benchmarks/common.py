"""What the benchmarks share: the repository root, the embedder under test, a child's environment, client threads, result files."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

from memsearch import settings

__all__ = ["REPO", "EMBEDDER_ENV", "bench_embedder", "child_env", "load_average", "compile_bytecode", "write_result", "run_clients"]

#: The clone the benchmarks run from (they read examples/ and tests/fixtures/ there).
REPO = Path(__file__).resolve().parents[1]
#: ``hash``: a deterministic stand-in for smoke tests (numbers meaningless); default: the real model.
EMBEDDER_ENV = settings.env_name("bench_embedder")


def bench_embedder():
    """The embedder the benchmarks measure: the default model, or the hashing stand-in."""
    from memsearch.engine.embed.embedder import HashEmbedder, load_embedder

    if settings.get("bench_embedder") == "hash":
        return HashEmbedder(dimension=64, name="hash-smoke")
    return load_embedder()


def child_env(**extra: str) -> dict[str, str]:
    """The environment of a benchmark's child process: this one's, offline, quiet tokenizers, plus ``extra``."""
    return dict(os.environ, HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false", **extra)


def load_average() -> list[float]:
    """The machine's 1, 5 and 15 minute load averages, to stand beside every absolute figure."""
    return [round(x, 2) for x in os.getloadavg()]


def compile_bytecode(checkout: Path = REPO) -> None:
    """Compile ``checkout``'s ``memsearch`` package to bytecode, as installing it does, so that no timed
    command compiles sources (with ``PYTHONDONTWRITEBYTECODE`` set, each would: 13 ms of CPU for a daemon-answered search)."""
    import compileall

    compileall.compile_dir(str(checkout / "memsearch"), quiet=2)


def write_result(out: Path | None, name: str, result) -> None:
    """Write ``result`` as indented JSON to ``out/name`` (``out`` made if missing); nothing when ``out`` is None."""
    if out is None:
        return
    out.mkdir(parents=True, exist_ok=True)
    (out / name).write_text(json.dumps(result, indent=2) + "\n")


def run_clients(worker, clients: int, seconds: float, stop: threading.Event, join_s: float = 120) -> float:
    """Run ``worker(n)`` in ``clients`` threads for ``seconds``, then set ``stop`` and join them; the wall seconds."""
    threads = [threading.Thread(target=worker, args=(n,)) for n in range(clients)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join(join_s)
    return time.perf_counter() - t0
