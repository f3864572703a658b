"""Peer adapter: zilliztech's ``memsearch`` (PyPI), run INSIDE its own virtual environment.

    venv-zilliz/bin/python zilliz_adapter.py JOB.json

The PyPI package is a different project that shares our package name, so it can never
live in our environment. It is used as its documentation says: ``MemSearch(paths=...,
embedding_provider="local", embedding_model=<the same all-MiniLM-L6-v2 directory we use>,
milvus_uri=<a Milvus Lite file>)``, its own chunker (headings, 1,500 characters, 2 lines of
overlap) and its hybrid search (dense + BM25 with RRF, k=60). Each tree of the job is a
collection; the files given are exactly those memsearch (ours) indexes. Writes one JSON
line per question ``{"qid", "hits": [{"path", "start_line", "end_line"}]}`` and a stats file.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from importlib.metadata import version
from pathlib import Path


def main(job_path: str) -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from memsearch import MemSearch  # zilliztech's package, installed in this venv only

    job = json.loads(Path(job_path).read_text())
    work = Path(job["work"])
    work.mkdir(parents=True, exist_ok=True)
    uri = str(work / "milvus.db")
    for stale in work.glob("milvus.db*"):
        if stale.is_file():
            stale.unlink()
    engines, chunks, index_s = {}, 0, 0.0
    for n, (key, tree) in enumerate(job["trees"].items()):
        root = Path(tree["root"]).resolve()
        # Construction loads the model (once per engine): not counted as indexing time.
        engine = MemSearch(paths=[str(root / rel) for rel in tree["files"]], embedding_provider="local",
                           embedding_model=job["model"], milvus_uri=uri, collection=f"bench_{n}")
        started = time.perf_counter()
        chunks += asyncio.run(engine.index())
        index_s += time.perf_counter() - started
        engines[key] = (engine, root)
        print(f"@progress {n + 1} {len(job['trees'])} index", flush=True)
    started = time.perf_counter()
    questions = job["questions"]
    with open(job["out"], "w") as out:
        for n, q in enumerate(questions, 1):
            engine, root = engines[q["tree"]]
            found = asyncio.run(engine.search(q["query"], top_k=job["k"]))
            hits = []
            for h in found:
                try:
                    rel = Path(h["source"]).resolve().relative_to(root).as_posix()
                except ValueError:
                    continue
                hits.append({"path": rel, "start_line": int(h["start_line"]), "end_line": int(h["end_line"]), "score": h.get("score")})
            out.write(json.dumps({"qid": q["qid"], "hits": hits}) + "\n")
            if n % 50 == 0 or n == len(questions):
                print(f"@progress {n} {len(questions)}", flush=True)
    query_s = time.perf_counter() - started
    stats = {
        "version": f"memsearch (zilliztech) {version('memsearch')}, pymilvus {version('pymilvus')}, milvus-lite {version('milvus-lite')}",
        "units": chunks,
        "index_seconds": round(index_s, 2),
        "ms_per_query": round(1000 * query_s / max(len(questions), 1), 2),
        "settings": "defaults: heading chunker, 1,500 characters, 2 overlap lines; "
        "hybrid dense + BM25, RRF k=60; local sentence-transformers provider",
    }
    Path(job["stats"]).write_text(json.dumps(stats, indent=2))
    for engine, _ in engines.values():
        close = getattr(engine, "close", None)
        if close:
            close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
