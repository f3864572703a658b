"""``python -m benchmarks.concurrency``: the concurrent-search benchmark by its short name (the module is
:mod:`benchmarks.perf.concurrency`, with the other speed benchmarks)."""

from benchmarks.perf.concurrency import main

__all__ = ["main"]

if __name__ == "__main__":
    raise SystemExit(main())
