"""First-stage variants for the tuning loop (benchmarks/research/tune.py): finer vectors inside chunks, context, trimmed hits.

Steps over a dump (``python -m benchmarks.research.tune dump --out DIR``), each saving a pickle beside it::

    python -m benchmarks.research.tune_vectors windows --out DIR [--size 1]   # sentence windows of every chunk, embedded
    python -m benchmarks.research.tune_vectors context --out DIR              # chunks re-embedded with their turn's context
    python -m benchmarks.research.tune eval --out DIR win2-mix-0.5 ...         # the variants below, as any other

Variants (registered in ``tune.VARIANTS``):

* ``win{S}-mix-{m}``: a chunk's vector score is ``(1 - m) x`` its own cosine ``+ m x`` the best cosine of
  one of its sentence windows (``S`` sentences of one line, the chunk's heading and date prepended, as
  the engine's context header), over every chunk of the tree; the top of that goes to the usual fusion;
* ``win{S}-trim-{d}``: the baseline ranking, each multi-line hit cut to the lines whose best window is
  within ``d`` of the hit's best (a hit holds what answers, not a fixed slice);
* ``ctx-user``: the vector leg over chunks re-embedded with context (late-chunking style): a chunk cut
  from the middle of a turn (it opens none: no ``**User:**`` or ``Name:`` line) gets its turn's speaker
  and the user's turn before it (its first :data:`CONTEXT_CHARS` characters) between the header and its
  text.
"""

from __future__ import annotations

import argparse
import pickle
import re
import sys
from pathlib import Path

import numpy as np

from benchmarks import quality
from memsearch.engine.search import fusion

__all__ = ["SIZES", "sentences", "embed_windows", "embed_context", "VARIANTS"]

SIZES = (1, 2)
#: Context added to a chunk's embedded text: ``user`` (its turn's speaker and the user turn before
#: it, for a chunk cut from inside a turn) or ``next`` (the start of the line after the chunk).
HOWS = ("user", "next")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_TURN = re.compile(r"^(\*\*[^*]{1,40}:\*\*|[A-Z][\w .'-]{0,30}:)\s")
#: Characters of a context line kept (the start of the question a chunk answers).
CONTEXT_CHARS = 300


def sentences(line: str) -> list[str]:
    return [s for s in _SENTENCE_END.split(line.strip()) if s]


def _header(row: dict) -> str:
    header = row["heading"] or ""
    if row.get("date") and row["date"] not in header:
        header += f" ({row['date']})"
    return header


def _windows(row: dict, size: int) -> list[tuple[int, str]]:
    """(line number, text) of each window: ``size`` consecutive sentences of one body line."""
    out = []
    for i, line in enumerate(row["text"].split("\n")):
        if not line.strip() or line.startswith("#"):
            continue
        parts = sentences(line)
        for j in range(0, len(parts), size):
            out.append((row["start_line"] + i, " ".join(parts[j : j + size])))
    return out


def _embed(texts: list[str]) -> np.ndarray:
    from benchmarks.common import bench_embedder

    matrix = np.asarray(bench_embedder().embed_documents(texts), np.float32)
    return matrix / np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)


def embed_windows(out: Path, size: int) -> Path:
    data = pickle.loads((out / "candidates.pkl").read_bytes())
    result = {}
    for key, tree in data["trees"].items():
        rows, lines, texts = [], [], []
        for i, r in enumerate(tree["rows"]):
            for line, text in _windows(r, size):
                rows.append(i)
                lines.append(line)
                texts.append(f"{_header(r)}\n{text}")
        result[key] = {"row": np.asarray(rows), "line": np.asarray(lines), "matrix": _embed(texts),
                       "chars": sum(map(len, texts))}
        print(f"windows of {key}: {len(texts)} for {len(tree['rows'])} chunks", file=sys.stderr, flush=True)
    path = out / f"windows-{size}.pkl"
    path.write_bytes(pickle.dumps(result))
    return path


def _context(rows: list[dict], files: dict[str, list[str]], how: str = "user") -> list[str]:
    texts = []
    for r in rows:
        lines = files[r["path"]]
        first = r["start_line"] - 1
        body = r["text"].split("\n")
        extra = ""
        if how == "next":
            j = r["end_line"]
            while j < len(lines) and not lines[j].strip():
                j += 1
            if j < len(lines) and not lines[j].startswith("#"):
                texts.append(f"{_header(r)}\n{r['text']}\n{lines[j][:CONTEXT_CHARS]}")
                continue
        elif not any(_TURN.match(x) for x in body):
            j = first
            while j >= 0 and not _TURN.match(lines[j]):
                j -= 1
            user = next((k for k in range(j, -1, -1) if lines[k].startswith("**User:**")), None) if j >= 0 else None
            extra = " ".join(x for x in (lines[user] if user is not None and user != j else "",
                                         (_TURN.match(lines[j]).group(1) if j >= 0 else "")) if x)
        extra = extra[:CONTEXT_CHARS]
        texts.append(f"{_header(r)}\n{extra + chr(10) if extra else ''}{r['text']}")
    return texts


def embed_context(out: Path, locomo=None, how: str = "user") -> Path:
    data = pickle.loads((out / "candidates.pkl").read_bytes())
    corpus = quality.dumped_corpus(out, locomo)
    result = {}
    for key, tree in data["trees"].items():
        root = corpus.trees[key]
        files = {p: (root / p).read_text(encoding="utf-8").split("\n") for p in {r["path"] for r in tree["rows"]}}
        texts = _context(tree["rows"], files, how)
        result[key] = {"matrix": _embed(texts), "chars": sum(map(len, texts))}
        print(f"context ({how}) of {key}", file=sys.stderr, flush=True)
    path = out / f"context-{how}.pkl"
    path.write_bytes(pickle.dumps(result))
    return path


def _extra(out: Path) -> dict:
    """The pickles of this module found beside a dump: {"windows-2": {tree: ...}, "context-user": ...}."""
    return {p.stem: pickle.loads(p.read_bytes()) for p in sorted(out.glob("windows-*.pkl")) + sorted(out.glob("context-*.pkl"))}


def _best_window(ctx, size, qv):
    win = ctx["extra"][f"windows-{size}"][ctx["question"].tree]
    cos = win["matrix"] @ qv
    best = np.full(len(ctx["tree"]["rows"]), -1.0, np.float32)
    np.maximum.at(best, win["row"], cos)
    return win, cos, best


def win_mix(size: int, mix: float, long: int = 0):
    """``long``: only chunks holding a line of at least that many characters take the windows' score."""

    def run(q, vec, kw, ctx):
        tree = ctx["tree"]
        qv = ctx["vector"] / np.linalg.norm(ctx["vector"])
        _, _, best = _best_window(ctx, size, qv)
        if long:
            if f"long-{long}" not in tree:
                tree[f"long-{long}"] = np.array([max(map(len, r["text"].split("\n"))) >= long for r in tree["rows"]])
            best = np.where(tree[f"long-{long}"], best, -1.0)
        chunk = tree["matrix"] @ qv
        if mix < 0:  # the better of the two: a window helps a chunk, never hurts it
            score = np.maximum(chunk, best)
        else:
            score = np.where(best > -1, (1 - mix) * chunk + mix * best, chunk)
        top = np.argsort(-score, kind="stable")[: len(vec)]  # as deep as the dumped cosine list
        rows = [dict(tree["rows"][i], score=float(score[i])) for i in top]
        return fusion.hybrid("convex", q.query, rows, kw)

    return run


def win_trim(size: int, delta: float):
    def run(q, vec, kw, ctx):
        ranked = fusion.hybrid("convex", q.query, vec, kw)  # tune.baseline
        qv = ctx["vector"] / np.linalg.norm(ctx["vector"])
        win, cos, _ = _best_window(ctx, size, qv)
        if "of_row" not in win:  # row index -> its windows' indices, once per tree
            win["of_row"] = {}
            for w, i in enumerate(win["row"].tolist()):
                win["of_row"].setdefault(i, []).append(w)
            win["ids"] = {r["id"]: i for i, r in enumerate(ctx["tree"]["rows"])}
        out = []
        for r in ranked:
            lines: dict[int, float] = {}
            for w in win["of_row"].get(win["ids"].get(r["id"]), ()):
                lines[int(win["line"][w])] = max(lines.get(int(win["line"][w]), -1.0), float(cos[w]))
            if r["end_line"] == r["start_line"] or not lines:
                out.append(r)
                continue
            top = max(lines.values())
            keep = [ln for ln, c in lines.items() if c >= top - delta]
            first, last = min(keep), max(keep)
            text = r["text"].split("\n")[first - r["start_line"] : last - r["start_line"] + 1]
            out.append(dict(r, start_line=first, end_line=last, text="\n".join(text)))
        return out

    return run


def merge_near(ratio: float):
    """Hits grow less: a row overlapping a better hit of its file is folded into it only when it scores at
    least ``ratio`` x that hit (the engine folds every one: ratio 0); otherwise it keeps only its lines not
    shown yet, as a hit of its own at its own rank (none left: dropped). ``ratio`` > 1: no hit outgrows
    its chunk."""

    def run(q, vec, kw, ctx):
        out: list[dict] = []
        for r in fusion.hybrid("convex", q.query, vec, kw):  # tune.baseline
            same = [o for o in out if o["path"] == r["path"]]
            target = next((o for o in same if r["start_line"] <= o["end_line"] and o["start_line"] <= r["end_line"]),
                          None)
            if target is not None and r["score"] >= ratio * target["score"]:
                out.append(dict(r, score=target["score"]))  # shape.merge_rows folds it into the target
                continue
            seen = {n for o in same for n in range(o["start_line"], o["end_line"] + 1)}
            new = [n for n in range(r["start_line"], r["end_line"] + 1) if n not in seen]
            if not new:
                continue
            first = last = new[0]
            while last + 1 in new:  # the first run of lines not shown yet
                last += 1
            text = r["text"].split("\n")[first - r["start_line"] : last - r["start_line"] + 1]
            out.append(dict(r, start_line=first, end_line=last, text="\n".join(text)))
        return out

    return run


def context_leg(how: str):
    def run(q, vec, kw, ctx):
        tree = ctx["tree"]
        qv = ctx["vector"] / np.linalg.norm(ctx["vector"])
        score = ctx["extra"][f"context-{how}"][q.tree]["matrix"] @ qv
        top = np.argsort(-score, kind="stable")[: len(vec)]  # as deep as the dumped cosine list
        return fusion.hybrid("convex", q.query, [dict(tree["rows"][i], score=float(score[i])) for i in top], kw)

    return run


VARIANTS = {f"win{s}-mix-{m}": win_mix(s, m) for s in SIZES for m in (0.0, 0.3, 0.5, 0.7, 1.0)}
VARIANTS |= {f"win{s}-max": win_mix(s, -1) for s in SIZES}
VARIANTS |= {f"win1-long{c}-{m}": win_mix(1, m, c) for c in (300, 500) for m in (0.5, 0.7, 1.0)}
VARIANTS |= {f"win{s}-trim-{d}": win_trim(s, d) for s in SIZES for d in (0.05, 0.1, 0.2)}
VARIANTS |= {f"ctx-{h}": context_leg(h) for h in HOWS}
VARIANTS |= {f"merge-near-{r}": merge_near(r) for r in (0.0, 0.8, 0.9, 0.95, 2.0)}
#: What each family needs beside the dump (a variant whose pickle is missing is skipped by ``eval``).
NEEDS = {f"win{s}-": f"windows-{s}" for s in SIZES} | {f"ctx-{h}": f"context-{h}" for h in HOWS}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.research.tune_vectors")
    parser.add_argument("what", choices=("windows", "context"))
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--size", type=int, default=1, choices=SIZES)
    parser.add_argument("--how", default="user", choices=HOWS)
    parser.add_argument("--locomo")
    args = parser.parse_args(argv)
    print(embed_windows(args.out, args.size) if args.what == "windows" else embed_context(args.out, args.locomo, args.how))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
