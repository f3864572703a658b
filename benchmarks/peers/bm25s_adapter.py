"""Peer adapter: a plain BM25 baseline with ``bm25s``. Runs INSIDE its own virtual environment.

    venv-bm25s/bin/python bm25s_adapter.py JOB.json

Reads the job written by benchmarks/peers/__init__.py (trees, the files to index, questions,
k), indexes each tree as windows of consecutive lines (at most WINDOW_CHARS characters,
about 150 tokens; no Markdown awareness, no context header), English stop words and the
Snowball stemmer, and writes one JSON line per question ``{"qid", "hits": [{"path",
"start_line", "end_line"}]}`` plus a stats file. Imports nothing from memsearch.
"""

from __future__ import annotations

import json
import sys
import time
from importlib.metadata import version
from pathlib import Path

WINDOW_CHARS = 600


def windows(text: str) -> list[tuple[int, int, str]]:
    out, start, buf = [], 1, []
    for number, line in enumerate(text.split("\n"), 1):
        if buf and sum(len(x) + 1 for x in buf) + len(line) > WINDOW_CHARS:
            out.append((start, number - 1, "\n".join(buf)))
            start, buf = number, []
        buf.append(line)
    if any(x.strip() for x in buf):
        out.append((start, start + len(buf) - 1, "\n".join(buf)))
    return [w for w in out if w[2].strip()]


def main(job_path: str) -> int:
    import bm25s
    import Stemmer

    job = json.loads(Path(job_path).read_text())
    stemmer = Stemmer.Stemmer("english")
    started = time.perf_counter()
    indexes, units = {}, 0
    for key, tree in job["trees"].items():
        root = Path(tree["root"])
        docs = []
        for rel in tree["files"]:
            for a, b, text in windows((root / rel).read_text(encoding="utf-8", errors="replace")):
                docs.append((rel, a, b, text))
        tokens = bm25s.tokenize([d[3] for d in docs], stopwords="en", stemmer=stemmer, show_progress=False)
        retriever = bm25s.BM25()
        retriever.index(tokens, show_progress=False)
        indexes[key] = (retriever, docs)
        units += len(docs)
    index_s = time.perf_counter() - started
    started = time.perf_counter()
    questions = job["questions"]
    with open(job["out"], "w") as out:
        for n, q in enumerate(questions, 1):
            retriever, docs = indexes[q["tree"]]
            query = bm25s.tokenize([q["query"]], stopwords="en", stemmer=stemmer, return_ids=False, show_progress=False)
            hits = []
            if query and query[0]:
                ids, scores = retriever.retrieve(query, k=min(job["k"], len(docs)), show_progress=False)
                for i, s in zip(ids[0], scores[0]):
                    if s > 0:
                        rel, a, b, _ = docs[int(i)]
                        hits.append({"path": rel, "start_line": a, "end_line": b, "score": float(s)})
            out.write(json.dumps({"qid": q["qid"], "hits": hits}) + "\n")
            if n % 50 == 0 or n == len(questions):
                print(f"@progress {n} {len(questions)}", flush=True)
    query_s = time.perf_counter() - started
    stats = {"version": f"bm25s {version('bm25s')}", "units": units, "index_seconds": round(index_s, 2),
             "ms_per_query": round(1000 * query_s / max(len(questions), 1), 2),
             "settings": f"windows of consecutive lines up to {WINDOW_CHARS} characters, English stop words, Snowball stemmer"}
    Path(job["stats"]).write_text(json.dumps(stats, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
