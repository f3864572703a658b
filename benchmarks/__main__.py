"""``python -m benchmarks [quality|speed|all] ...``: the benchmark runner (see benchmarks/run.py)."""

from benchmarks.run import main

raise SystemExit(main())
