"""LoCoMo as Agent Memory trees, and retrieval scoring with line-level relevance.

Layout (one tree per conversation)::

    conv-26/
    ├── MEMORY.md                 who talks, how the memory is laid out
    └── sessions/
        ├── MEMORY.md
        └── 2023-05-08.md         one file per session, named by its date; one line per turn

Each evidence id ``D<session>:<turn>`` maps to (file, line). The data (CC BY-NC 4.0) is read
from ``../shared/data/locomo10.json`` or a path the user gives, never copied into the repo.

Measures, per question (category 5, adversarial, has no evidence and is left out):
* **file Recall@5**: share of the question's evidence files among the first 5 distinct files
  of the ranked hits;
* **turn recall within 60 lines**: read hits in rank order until 60 distinct lines have been
  returned (the hit that crosses the budget is cut), share of evidence turns returned.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from memsearch import settings

__all__ = ["DEFAULT_PATH", "Question", "Corpus", "load", "build_trees", "file_recall", "turn_recall", "score_hits"]

DEFAULT_PATH = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo10.json"
DATA_ENV = settings.env_name("locomo")
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
LINE_BUDGET = 60
FILE_K = 5
_ID = re.compile(r"D(\d+):(\d+)")


@dataclass(frozen=True)
class Question:
    qid: str
    conversation: str
    question: str
    category: int
    evidence: tuple[tuple[str, int], ...]  # (file path relative to the tree root, 1-based line)


@dataclass
class Corpus:
    root: Path
    conversations: list[str]
    questions: list[Question]
    stats: dict = field(default_factory=dict)


def data_path(path: str | os.PathLike[str] | None = None) -> Path:
    found = Path(path or settings.get("locomo") or DEFAULT_PATH)
    if not found.is_file():
        raise FileNotFoundError(
            f"LoCoMo data not found at {found}. Get locomo10.json from https://github.com/snap-research/locomo "
            f"(data/locomo10.json, CC BY-NC 4.0) and pass --locomo PATH or set {DATA_ENV}"
        )
    return found


def _session_date(text: str) -> dt.date:
    # "1:56 pm on 8 May, 2023"
    return dt.datetime.strptime(text.split(" on ", 1)[1].strip(), "%d %B, %Y").date()


def _turn_line(turn: dict) -> str:
    text = " ".join(str(turn.get("text", "")).split())
    if turn.get("blip_caption"):
        text += f" [shares a photo: {turn['blip_caption']}]"
    return f"{turn['speaker']}: {text}"


def load(path=None) -> list[dict]:
    return json.loads(data_path(path).read_text())


def build_trees(out: Path, path=None, merged: bool = False) -> Corpus:
    """Write the trees under ``out`` (``merged``: all conversations under one root)."""
    samples = load(path)
    out.mkdir(parents=True, exist_ok=True)
    questions: list[Question] = []
    stats = defaultdict(int)
    names = []
    if merged:
        (out / "MEMORY.md").write_text("# LoCoMo conversations\n\nOne folder per conversation; each holds its sessions.\n")
    for sample in samples:
        conv = sample["conversation"]
        name = sample["sample_id"]
        names.append(name)
        tree = out / name if merged else out / name
        sessions = tree / "sessions"
        sessions.mkdir(parents=True, exist_ok=True)
        prefix = f"{name}/" if merged else ""
        a, b = conv["speaker_a"], conv["speaker_b"]
        (tree / "MEMORY.md").write_text(
            f"# Conversations between {a} and {b}\n\nChat sessions between {a} and {b}, one file per session in sessions/.\n")
        (sessions / "MEMORY.md").write_text(f"# Sessions\n\nOne file per chat session between {a} and {b}, named by its date; one line per turn.\n")
        where: dict[str, tuple[str, int]] = {}
        used: dict[str, int] = defaultdict(int)
        numbers = sorted(int(k.split("_")[1]) for k in conv if re.fullmatch(r"session_\d+", k))
        for n in numbers:
            when = conv[f"session_{n}_date_time"]
            day = _session_date(when)
            used[day.isoformat()] += 1
            fname = day.isoformat() + ("" if used[day.isoformat()] == 1 else f"-{used[day.isoformat()]}") + ".md"
            lines = [f"# Session {n}: {a} and {b}, {when}", ""]
            for turn in conv[f"session_{n}"]:
                where[turn["dia_id"]] = (f"{prefix}sessions/{fname}", len(lines) + 1)
                lines.append(_turn_line(turn))
            (sessions / fname).write_text("\n".join(lines) + "\n")
        for i, qa in enumerate(sample["qa"]):
            if qa.get("category") == 5:
                stats["adversarial_left_out"] += 1
                continue
            evidence = []
            for raw in qa.get("evidence", []):
                for part in re.split(r"[;,\s]+", str(raw)):
                    if not part:
                        continue
                    fixed = part.replace("D:", "D")
                    match = _ID.fullmatch(fixed)
                    if not match:
                        stats["evidence_dropped"] += 1
                        continue
                    key = f"D{int(match[1])}:{int(match[2])}"
                    if key not in where:
                        stats["evidence_dropped"] += 1
                        continue
                    if fixed != part or part != raw:
                        stats["evidence_repaired"] += 1
                    evidence.append(where[key])
            if not evidence:
                stats["questions_without_evidence"] += 1
                continue
            questions.append(Question(f"{name}-{i}", name, qa["question"], int(qa["category"]), tuple(dict.fromkeys(evidence))))
    stats["questions"] = len(questions)
    return Corpus(out, names, questions, dict(stats))


def file_recall(hits: list[dict], question: Question, k: int = FILE_K) -> float:
    files = []
    for hit in hits:
        if hit["path"] not in files:
            files.append(hit["path"])
        if len(files) == k:
            break
    wanted = {path for path, _ in question.evidence}
    return len(wanted & set(files)) / len(wanted)


def turn_recall(hits: list[dict], question: Question, budget: int = LINE_BUDGET) -> float:
    seen: set[tuple[str, int]] = set()
    for hit in hits:
        for line in range(hit["start_line"], hit["end_line"] + 1):
            if len(seen) >= budget:
                break
            seen.add((hit["path"], line))
        if len(seen) >= budget:
            break
    return sum(1 for e in question.evidence if e in seen) / len(question.evidence)


def score_hits(results: dict[str, list[dict]], questions: list[Question]) -> dict:
    """Mean file R@5 and turn recall@60 lines, overall and per category."""
    by_cat: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for q in questions:
        hits = results[q.qid]
        pair = (file_recall(hits, q), turn_recall(hits, q))
        by_cat["all"].append(pair)
        by_cat[CATEGORIES[q.category]].append(pair)
    return {
        cat: {"n": len(v), "file_recall@5": sum(p[0] for p in v) / len(v), "turn_recall@60": sum(p[1] for p in v) / len(v)}
        for cat, v in by_cat.items()
    }


def run(out: Path, data=None, modes=("keyword", "vector", "hybrid"), k: int = 30, merged: bool = False,
        model=None, progress=None) -> dict:
    """Build the trees under ``out``, index each, search every question; return the scores.

    ``merged``: all ten conversations in one tree, searched without scope (the others act
    as distractors). Otherwise each question is searched in its own conversation's tree.
    """
    import time

    from memsearch.engine.embedder import load_embedder
    from memsearch.engine.index import MemoryIndex

    corpus = build_trees(out / ("merged" if merged else "split"), data, merged=merged)
    embedder = load_embedder(model)
    started = time.perf_counter()
    if merged:
        indexes = {None: MemoryIndex(corpus.root, db=out / "db-merged", embedder=embedder, rebuild=True)}
    else:
        indexes = {name: MemoryIndex(corpus.root / name, db=out / f"db-{name}", embedder=embedder, rebuild=True)
                   for name in corpus.conversations}
    chunks = 0
    for index in indexes.values():
        chunks += index.sync().chunks_total
    index_seconds = time.perf_counter() - started
    results = {"corpus": "locomo-merged" if merged else "locomo", "questions": len(corpus.questions),
               "chunks": chunks, "index_seconds": round(index_seconds, 2), "data_stats": corpus.stats, "modes": {}}
    for mode in modes:
        started = time.perf_counter()
        hits = {}
        for n, q in enumerate(corpus.questions):
            index = indexes[None if merged else q.conversation]
            hits[q.qid] = [h.to_dict() for h in index.search(q.question, k=k, mode=mode)]
            if progress:
                progress(mode, n + 1, len(corpus.questions))
        seconds = time.perf_counter() - started
        results["modes"][mode] = score_hits(hits, corpus.questions) | {"ms_per_query": round(1000 * seconds / len(corpus.questions), 2)}
    return results


def main(argv=None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description="LoCoMo retrieval benchmark for memsearch")
    parser.add_argument("--locomo", help="path of locomo10.json (default ../shared/data/locomo10.json or $MEMSEARCH_LOCOMO)")
    parser.add_argument("--out", default="bench-results/locomo", help="work and result directory")
    parser.add_argument("--merged", action="store_true", help="all conversations in one tree, no scope")
    parser.add_argument("--modes", default="keyword,vector,hybrid")
    args = parser.parse_args(argv)
    out = Path(args.out)
    result = run(out, args.locomo, modes=tuple(args.modes.split(",")), merged=args.merged)
    (out / "results.json").write_text(json.dumps(result, indent=2))
    for mode, scores in result["modes"].items():
        a = scores["all"]
        print(f"{mode:8s} file R@5 {a['file_recall@5']:.4f}  turn recall@60 lines {a['turn_recall@60']:.4f}  "
              f"({a['n']} questions, {scores['ms_per_query']} ms/query)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
