"""Benchmark of write-to-searchable: one memory-tool write through ``ToolBox(root, writable=True)``, in-process.

    python -m benchmarks.perf.writes [--writes 30] [--root DIR] [--out FILE.json]
    MEMSEARCH_BENCH_EMBEDDER=hash python -m benchmarks.perf.writes    # everything but the model

On a temporary copy of examples/memory (or ``--root``, copied), with the real default model
loaded and the tree indexed *before* timing (the first model load is excluded, as the target
says). Each timed call is one ``memory`` tool call, from the call to its return, when the
index already holds the change (read-your-writes: the changed paths are synced in-process).
Three kinds, ``--writes`` times each: ``create`` of a new note in a new directory (its
MEMORY.md made too), ``str_replace`` and ``insert`` in an existing file. After each call a
keyword search for the call's unique word must return the file (checked, not timed).

The machine is shared and noisy: beside the absolute figures the report gives a reference
timed in the same run (one bare ``embed_query`` of a short text, and one bare ``embed_documents``
of one chunk: what a small write must embed at least) and the ratios, plus the load average
before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from benchmarks.common import REPO, bench_embedder
from memsearch import MemoryIndex
from memsearch.tools import ToolBox

EXAMPLES = REPO / "examples" / "memory"
TARGET_MS = 300.0


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))], 2)


def _summary(values: list[float]) -> dict:
    return {"n": len(values), "p50_ms": _percentile(values, 0.5), "p95_ms": _percentile(values, 0.95),
            "max_ms": round(max(values), 2), "mean_ms": round(statistics.fmean(values), 2)}


def _calls(i: int) -> list[tuple[str, dict, str, str]]:
    """(kind, memory-tool input, unique word, path the search must return) for round ``i``."""
    word = f"zq{i:03d}marker"
    return [
        ("create", {"command": "create", "path": f"/memories/bench/r{i:03d}/note.md",
                    "file_text": f"# Note {i}\n\n## Context\n\nThe {word} decision was taken on a call.\n\n"
                                 "## Details\n\nWe agreed to ship the importer first and the exporter next quarter.\n"},
         word, f"bench/r{i:03d}/note.md"),
        ("str_replace", {"command": "str_replace", "path": "/memories/bench/log.md", "old_str": f"slot{i:03d}",
                         "new_str": f"slot{i:03d} {word}r"}, f"{word}r", "bench/log.md"),
        ("insert", {"command": "insert", "path": "/memories/bench/log.md", "insert_line": 2,
                    "insert_text": f"- {word}i inserted at the top of the log"}, f"{word}i", "bench/log.md"),
    ]


def run(root: Path, writes: int) -> dict:
    index = MemoryIndex(root, embedder=bench_embedder())  # MEMSEARCH_BENCH_EMBEDDER=hash: the overhead without the model
    box = ToolBox(root, index=index, writable=True, sync=False)
    box.call("memory", {"command": "create", "path": "/memories/bench/log.md",
                        "file_text": "# Log\n\n" + "".join(f"- slot{i:03d}\n" for i in range(writes)) + "\n"})
    index.sync()  # the rest of the tree, before timing
    index.embedder.embed_query("warm up")
    reference, reference_docs = [], []
    timings: dict[str, list[float]] = {"create": [], "str_replace": [], "insert": []}
    misses = 0
    for i in range(writes):
        started = time.perf_counter()
        index.embedder.embed_query(f"reference query number {i}")
        reference.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        index.embedder.embed_documents([f"Note {i} > Context\nThe reference {i} decision was taken on a call."])
        reference_docs.append((time.perf_counter() - started) * 1000)
        for kind, call, word, path in _calls(i):
            started = time.perf_counter()
            result = box.call("memory", call)
            timings[kind].append((time.perf_counter() - started) * 1000)
            assert result["index"]["synced"], result
            hits = box.call("memory_search", {"query": word, "mode": "keyword", "k": 3})["hits"]
            misses += not any(h["path"] == path for h in hits)
    every = [t for values in timings.values() for t in values]
    ref = statistics.median(reference)
    return {
        "writes": {kind: _summary(values) for kind, values in timings.items()} | {"all": _summary(every)},
        "reference_embed_query_ms": round(ref, 2),
        "reference_embed_one_chunk_ms": round(statistics.median(reference_docs), 2),
        "p50_over_one_chunk": round(_percentile(every, 0.5) / statistics.median(reference_docs), 2),
        "p50_over_reference": round(_percentile(every, 0.5) / ref, 2),
        "p95_over_reference": round(_percentile(every, 0.95) / ref, 2),
        "not_searchable_on_return": misses,
        "target_ms": TARGET_MS,
        "chunks_in_index": index.store.chunks().count_rows(),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="memsearch write-to-searchable benchmark")
    parser.add_argument("--writes", type=int, default=30, help="rounds; each times one create, one str_replace, one insert")
    parser.add_argument("--root", type=Path, default=EXAMPLES, help="memory to copy and write into (default: examples/memory)")
    parser.add_argument("--out", type=Path, help="also write the JSON report here")
    args = parser.parse_args(argv)
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "memory"
        shutil.copytree(args.root, root, ignore=shutil.ignore_patterns(".memsearch"))
        report = run(root, args.writes)
    report["load_average"] = {"before": [round(x, 2) for x in load_before], "after": [round(x, 2) for x in os.getloadavg()]}
    report["cpu_count"] = os.cpu_count()
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
