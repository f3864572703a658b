"""Peak memory of indexing one big Markdown file: ``python -m benchmarks.perf.bigfile``.

Generates one Markdown file of each size asked (deterministic: headings, paragraphs, lists and
code fences, a canary fact in its first and in its last section), indexes it into a fresh
index in a child process under ``/usr/bin/time -v`` and reports the child's peak resident set
("Maximum resident set size"), the chunks stored, the seconds taken and the load average.
``--embedder hash`` indexes with the deterministic HashEmbedder (384 dimensions, the default
model's vector size) through :class:`~memsearch.engine.index.MemoryIndex`: the memory curve of
chunking, storing and committing without the model's cost. ``--embedder model`` runs
``memsearch index`` itself with the default model (slow on 2 cores: use small sizes). Each run
also checks that both canaries are found, so a file left out or cut short cannot pass.

    python -m benchmarks.perf.bigfile --sizes 5,20,50 --embedder hash
    python -m benchmarks.perf.bigfile --sizes 2,5 --embedder model
    python -m benchmarks.perf.bigfile --sizes 50 --files 50    # the same bytes in 50 files, for comparison
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import REPO, child_env

__all__ = ["generate", "measure", "main", "FIRST_CANARY", "LAST_CANARY"]

FIRST_CANARY = "The first section canary is zebra-alpha-17, kept by the night shift."
LAST_CANARY = "The last section canary is okapi-omega-99, kept by the archive team."
_WORDS = ("ingest pipeline deploy cluster shard replica latency budget incident review owner rollback "
          "schema migration index query vector keyword cache daemon socket memory agent planner "
          "ticket sprint release note design decision tradeoff storage backup restore quota alert "
          "dashboard metric trace span sample region zone failover canary rollout flag").split()
_RSS = re.compile(r"Maximum resident set size \(kbytes\): (\d+)")


def generate(path: Path, megabytes: float, seed: int = 12) -> int:
    """Write a Markdown file of about ``megabytes`` MB to ``path``; its size in bytes."""
    rng = random.Random(seed)
    target = int(megabytes * 1_000_000)
    size = 0
    section = 0
    with path.open("w", encoding="utf-8") as out:
        def write(text: str) -> None:
            nonlocal size
            out.write(text)
            size += len(text.encode())

        write(f"# Big notes ({megabytes:g} MB)\n\n## Section 0\n\n{FIRST_CANARY}\n\n")
        while size < target - 2_000:
            section += 1
            write(f"## Section {section}\n\n")
            for block in range(rng.randint(3, 8)):
                kind = rng.random()
                if kind < 0.1:
                    write(
                        "```\n"
                        + "\n".join(
                            f"run {rng.choice(_WORDS)} --{rng.choice(_WORDS)}" for _ in range(rng.randint(2, 6))
                        )
                        + "\n```\n\n"
                    )
                elif kind < 0.25:
                    write(
                        "".join(
                            f"- {' '.join(rng.choices(_WORDS, k=rng.randint(4, 12)))}\n"
                            for _ in range(rng.randint(2, 6))
                        )
                        + "\n"
                    )
                else:
                    sentences = (
                        " ".join(rng.choices(_WORDS, k=rng.randint(6, 18))).capitalize() + "."
                        for _ in range(rng.randint(2, 6))
                    )
                    write(" ".join(sentences) + "\n\n")
        write(f"## Section {section + 1}\n\n{LAST_CANARY}\n")
    return size


_CHILD = """
import json, sys
from memsearch.engine.embed.embedder import HashEmbedder
from memsearch.engine.index import MemoryIndex
index = MemoryIndex(sys.argv[1], db=sys.argv[2], embedder=HashEmbedder(dimension=384, name="hash-384"))
report = index.sync()
report = index.check_and_repair() or report
print(json.dumps({"chunks": report.chunks_total, "too_large": list(report.too_large)}))
"""


def _found(root: Path, db: Path, embedder: str) -> bool:
    """Whether a keyword search finds both canaries (the file was indexed whole)."""
    from memsearch.engine.embed.embedder import HashEmbedder
    from memsearch.engine.index import MemoryIndex

    index = (
        MemoryIndex(root, db=db, embedder=HashEmbedder(dimension=384, name="hash-384"))
        if embedder == "hash"
        else MemoryIndex(root, db=db)
    )
    try:
        return all(
            any(canary.split(",")[0] in hit.text for hit in index.search(canary, k=3, mode="keyword"))
            for canary in (FIRST_CANARY, LAST_CANARY)
        )
    finally:
        index.close()


def measure(megabytes: float, embedder: str, work: Path, files: int = 1) -> dict:
    """Index ``megabytes`` MB of generated Markdown (one file, or ``files`` files of equal size)
    in a child process; its peak RSS and more."""
    root = work / f"memory-{megabytes:g}-{files}"
    (root / "notes").mkdir(parents=True)
    (root / "MEMORY.md").write_text("# Memory\n\nBig notes for the memory benchmark.\n")
    (root / "notes" / "MEMORY.md").write_text("# Notes\n\nOne big file.\n")
    names = ["big.md"] if files == 1 else [f"part-{i:04d}.md" for i in range(files)]
    size = sum(generate(root / "notes" / name, megabytes / files, seed=12 + i) for i, name in enumerate(names))
    db = work / f"db-{megabytes:g}-{files}"
    if embedder == "hash":
        command = [sys.executable, "-c", _CHILD, str(root), str(db)]
    else:
        command = [sys.executable, "-m", "memsearch", "index", str(root), "--db", str(db), "--json"]
    env = child_env(MEMSEARCH_MAX_FILE_MB="100000", PYTHONPATH=str(REPO))
    env.pop("MEMSEARCH_DB", None)
    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    done = subprocess.run(["/usr/bin/time", "-v", *command], capture_output=True, text=True, env=env, cwd=str(REPO))
    seconds = time.perf_counter() - started
    rss = _RSS.search(done.stderr)
    if done.returncode != 0 or rss is None:
        raise SystemExit(f"indexing {megabytes:g} MB failed (exit {done.returncode}):\n{done.stderr[-2000:]}")
    report = json.loads(done.stdout)
    return {
        "embedder": embedder,
        "files": files,
        "mb": round(size / 1e6, 2),
        "chunks": report.get("chunks_total", report.get("chunks")),
        "max_rss_mb": round(int(rss.group(1)) / 1024),
        "seconds": round(seconds, 1),
        "canaries_found": _found(root, db, embedder),
        "load_before": round(load_before, 2),
        "load_after": round(os.getloadavg()[0], 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.perf.bigfile", description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="5,20,50", help="comma-separated file sizes in MB (default 5,20,50)")
    parser.add_argument(
        "--embedder", choices=("hash", "model"), default="hash", help="hash (default) or the real model"
    )
    parser.add_argument(
        "--files",
        type=int,
        default=1,
        help="split each size over this many files (default 1): what the index's size costs, apart from one file's",
    )
    parser.add_argument("--out", help="also write the results to this JSON file")
    args = parser.parse_args(argv)
    if not Path("/usr/bin/time").exists():
        raise SystemExit("/usr/bin/time is needed (GNU time): install it, e.g. `apt-get install time`")
    results = []
    with tempfile.TemporaryDirectory(prefix="memsearch-bigfile-") as tmp:
        for megabytes in (float(s) for s in args.sizes.split(",") if s.strip()):
            result = measure(megabytes, args.embedder, Path(tmp), max(1, args.files))
            print(json.dumps(result), flush=True)
            results.append(result)
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=2) + "\n")
    return 0 if all(r["canaries_found"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
