"""Peers, side by side: other tools on the same trees, questions, model, machine and scorer.

Each peer lives in its own virtual environment (never a dependency of memsearch) under
``bench-results/peers/venv-<name>``; :func:`setup` creates it with pip. A run writes a job
file (the trees, exactly the files memsearch indexes in each, the questions, ``k``, the
model directory), runs the peer's adapter script with the venv's Python, reads back ranked
hits as JSON lines, and returns them for :func:`benchmarks.quality.score`.

* ``zilliz-memsearch`` - zilliztech's ``memsearch`` from PyPI (Milvus Lite, local
  sentence-transformers provider with our model's directory);
* ``bm25s`` - a plain BM25 baseline over line windows with ``bm25s``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.common import REPO, child_env
from benchmarks.metrics import Span
from memsearch import settings

__all__ = ["Peer", "PEERS", "peers_dir", "get_peers", "setup"]

HERE = Path(__file__).resolve().parent
TIMEOUT_S = 3600


def peers_dir() -> Path:
    """Where the peers' venvs live: ``$MEMSEARCH_PEERS_DIR``, else ``bench-results/peers`` in the clone."""
    return settings.get("peers_dir") or REPO / "bench-results" / "peers"


def _torch_spec() -> str:
    """The torch of our own environment (a CPU build stays a CPU build), unless $TORCH says otherwise."""
    if os.environ.get("TORCH"):
        return os.environ["TORCH"]
    try:
        from importlib.metadata import version

        return "torch==" + version("torch").split("+")[0]
    except Exception:  # noqa: BLE001
        return "torch"


class Peer:
    def __init__(self, name: str, adapter: str, packages: list[str], needs_model: bool = False):
        self.name = name
        self.adapter = HERE / adapter
        self.packages = packages
        self.needs_model = needs_model
        self.venv = peers_dir() / f"venv-{name}"

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    def available(self) -> bool:
        return self.python.is_file() and (self.venv / ".installed").is_file()

    def setup(self, log=print) -> None:
        """Create the venv and install the peer (pip; needs PyPI once)."""
        if self.available():
            return
        self.venv.parent.mkdir(parents=True, exist_ok=True)
        base = getattr(sys, "_base_executable", None) or sys.executable
        subprocess.run([base, "-m", "venv", str(self.venv)], check=True)
        for group in self.packages:
            log(f"peer {self.name}: pip install {group}")
            subprocess.run([str(self.python), "-m", "pip", "install", "-q", *group.split()], check=True)
        (self.venv / ".installed").write_text("\n".join(self.packages) + "\n")

    def run(self, corpus, work: Path, k: int = 50, progress=None) -> dict:
        """Run the adapter on ``corpus``; {"hits": {qid: [Span]}, "index_seconds", ...} or {"error"}."""
        from memsearch.memory.tree import scan

        if not self.available():
            return {"error": f"not installed (python -m benchmarks --peers setup creates {self.venv})"}
        out = (work / "peers" / self.name / corpus.name).resolve()  # the adapter runs with cwd=out
        out.mkdir(parents=True, exist_ok=True)
        job = {"trees": {key: {"root": str(root.resolve()), "files": sorted(scan(root).external_files)}
                         for key, root in corpus.trees.items()},
               "questions": [{"qid": q.qid, "query": q.query, "tree": q.tree} for q in corpus.questions],
               "k": k, "model": _model_dir() if self.needs_model else None, "work": str(out / "work"),
               "out": str(out / "hits.jsonl"), "stats": str(out / "stats.json")}
        (out / "job.json").write_text(json.dumps(job))
        env = child_env(PYTHONPATH="")
        started = time.perf_counter()
        log = open(out / "stderr.log", "w")
        proc = subprocess.Popen([str(self.python), str(self.adapter), str(out / "job.json")], stdout=subprocess.PIPE,
                                stderr=log, text=True, env=env, cwd=str(out))
        label = f"{corpus.name}: peer {self.name}"
        try:
            for line in proc.stdout:
                parts = line.split()
                if progress and len(parts) >= 3 and parts[0] == "@progress":
                    progress(label + (" index" if parts[3:] == ["index"] else ""), int(parts[1]), int(parts[2]))
            code = proc.wait(TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            return {"error": f"timed out after {TIMEOUT_S} s"}
        finally:
            log.close()
        wall = round(time.perf_counter() - started, 2)
        if code != 0:
            tail = (out / "stderr.log").read_text()[-600:].strip().splitlines()
            return {"error": f"adapter exited {code}: {tail[-1] if tail else ''}", "log": str(out / "stderr.log")}
        hits = {}
        for line in (out / "hits.jsonl").read_text().splitlines():
            row = json.loads(line)
            hits[row["qid"]] = [Span(h["path"], h["start_line"], h["end_line"]) for h in row["hits"]]
        return json.loads((out / "stats.json").read_text()) | {"hits": hits, "wall_seconds": wall}


def _model_dir() -> str:
    """The directory of the default model, so a peer loads exactly the same weights."""
    from memsearch.engine.embed.embedder import load_embedder

    source = load_embedder().source
    if not Path(source).is_dir():
        raise RuntimeError(f"the default model is not a local directory ({source}); peers need the same weights on disk")
    return source


PEERS = {
    "zilliz-memsearch": lambda: Peer("zilliz-memsearch", "zilliz_adapter.py",
                                     [_torch_spec(), "memsearch[local]==0.4.23"], needs_model=True),
    "bm25s": lambda: Peer("bm25s", "bm25s_adapter.py", ["bm25s==0.3.16 PyStemmer"]),
}


def get_peers(names=None) -> list[Peer]:
    return [PEERS[n]() for n in (names or PEERS)]


def setup(names=None, log=print) -> dict:
    """Create the missing venvs; returns {name: "ok" | error text}."""
    status = {}
    for peer in get_peers(names):
        try:
            peer.setup(log=log)
            status[peer.name] = "ok"
        except Exception as err:  # noqa: BLE001 - reported, the benchmark goes on without it
            status[peer.name] = f"setup failed: {err}"
    return status
