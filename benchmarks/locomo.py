"""LoCoMo as Agent Memory trees: one tree per conversation, evidence as (file, line).

Layout (one tree per conversation)::

    conv-26/
    ├── MEMORY.md                 who talks, how the memory is laid out
    └── sessions/
        ├── MEMORY.md
        └── 2023-05-08.md         one file per session, named by its date; one line per turn

Each evidence id ``D<session>:<turn>`` maps to (file, line). The data (CC BY-NC 4.0) is read
from ``../shared/data/locomo10.json``, ``$MEMSEARCH_LOCOMO`` or a path the user gives, never
copied into the repo. Category 5 (adversarial) has no evidence and is left out. Questions are
run and scored by benchmarks/quality.py (``python -m benchmarks quality --corpus locomo``).
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

__all__ = ["DEFAULT_PATH", "CATEGORIES", "Question", "Corpus", "data_path", "load", "build_trees"]

DEFAULT_PATH = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo10.json"
DATA_ENV = settings.env_name("locomo")
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
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
        tree = out / name
        sessions = tree / "sessions"
        sessions.mkdir(parents=True, exist_ok=True)
        prefix = f"{name}/" if merged else ""
        a, b = conv["speaker_a"], conv["speaker_b"]
        (tree / "MEMORY.md").write_text(
            f"# Conversations between {a} and {b}\n\nChat sessions between {a} and {b}, one file per session in sessions/.\n")
        (sessions / "MEMORY.md").write_text(
            f"# Sessions\n\nOne file per chat session between {a} and {b}, named by its date; one line per turn.\n"
        )
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
            questions.append(
                Question(f"{name}-{i}", name, qa["question"], int(qa["category"]), tuple(dict.fromkeys(evidence)))
            )
    stats["questions"] = len(questions)
    return Corpus(out, names, questions, dict(stats))
