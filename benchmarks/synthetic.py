"""A deterministic generator of agent-memory trees, for scale and speed curves.

Trees look like real agent memory: root core files, ``projects/`` with nested project
folders (decisions, TODOs, code fences, front matter), ``notes/`` with dated daily notes,
``people/``. Each file carries a planted fact at a known line, so queries have known answers.
Size is set in files; about 3-4 chunks per file at the default chunk size.
"""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Planted", "generate"]

_WORDS = (
    "pipeline schema deploy rollback latency cache queue worker retry budget invoice ledger forecast "
    "model feature flag migration index shard replica backup restore alert threshold dashboard metric "
    "owner review release branch merge conflict test fixture coverage profile memory cpu disk network "
    "timeout quota token session cookie header payload webhook endpoint client server region cluster"
).split()
_NAMES = "Maya Kenji Priya Diego Lena Tomas Aiko Omar Sara Felix Nadia Ravi".split()
_THINGS = "atlas billing riverline sdk website search ingest ledger forecaster gateway scheduler vault".split()
_CODE = ["```bash\nmake deploy ENV=staging\nkubectl rollout status deploy/api\n```",
         "```python\ndef retry(fn, attempts=3):\n    for i in range(attempts):\n        try:\n            return fn()\n        except TimeoutError:\n            continue\n```",
         "```sql\nSELECT region, count(*) FROM events GROUP BY region;\n```"]


@dataclass(frozen=True)
class Planted:
    """A fact written at a known place: ``query`` should find ``path`` at ``line``."""

    query: str
    path: str
    line: int


def _sentence(rng: random.Random, n: int = 12) -> str:
    words = [rng.choice(_WORDS) for _ in range(n)]
    return " ".join(words).capitalize() + "."


def _body(rng: random.Random, title: str, fact: str, dated: str | None) -> tuple[list[str], int]:
    lines: list[str] = []
    if rng.random() < 0.3:
        lines += ["---", f"title: {title}", f"updated: {dated or '2026-10-01'}", "tags: [generated]", "---", ""]
    lines += [f"# {title}", "", _sentence(rng, 18), ""]
    fact_line = 0
    sections = rng.randint(2, 4)
    fact_at = rng.randrange(sections)
    for s in range(sections):
        lines += [f"## {rng.choice(['Decisions', 'Open questions', 'TODO', 'Log', 'Architecture', 'Notes'])} {s + 1}", ""]
        for _ in range(rng.randint(2, 5)):
            lines.append(f"- {dated or '2026-09-0' + str(rng.randint(1, 9))}: {_sentence(rng, rng.randint(8, 20))}")
        if s == fact_at:
            lines.append(f"- {fact}")
            fact_line = len(lines)
        if rng.random() < 0.25:
            lines += ["", rng.choice(_CODE)]
        lines.append("")
    return lines, fact_line


def generate(root: Path, files: int, seed: int = 0) -> list[Planted]:
    """Write a tree of about ``files`` Markdown files under ``root``; return the planted facts."""
    rng = random.Random(seed)
    root.mkdir(parents=True, exist_ok=True)
    (root / "MEMORY.md").write_text("# Memory\n\nGenerated agent memory: projects/, notes/, people/.\n")
    (root / "persona.md").write_text("# Persona\n\nConcise, careful, cites sources.\n")
    planted: list[Planted] = []
    dirs = {"projects": "Projects, one folder each.", "notes": "Dated daily notes.", "people": "Colleagues."}
    for d, text in dirs.items():
        (root / d).mkdir(exist_ok=True)
        (root / d / "MEMORY.md").write_text(f"# {d.title()}\n\n{text}\n")
    start = dt.date(2024, 1, 1)
    for i in range(files):
        kind = rng.choices(["notes", "projects", "people"], weights=[6, 3, 1])[0]
        code = f"{rng.choice(_THINGS)}-{i:05d}"
        who = rng.choice(_NAMES)
        fact = f"The {code} rollout owner is {who}; its error budget is {rng.randint(1, 99)} minutes."
        if kind == "notes":
            day = start + dt.timedelta(days=i)
            rel = f"notes/{day.year}/{day.isoformat()}.md"
            (root / f"notes/{day.year}").mkdir(exist_ok=True)
            if not (root / f"notes/{day.year}/MEMORY.md").exists():
                (root / f"notes/{day.year}/MEMORY.md").write_text(f"# Notes {day.year}\n\nOne file per day.\n")
            lines, line = _body(rng, f"{day.isoformat()} daily note", fact, day.isoformat())
        elif kind == "projects":
            project = rng.choice(_THINGS)
            folder = root / "projects" / project
            if not folder.exists():
                folder.mkdir()
                (folder / "MEMORY.md").write_text(f"# {project.title()}\n\nEverything about the {project} project.\n")
            rel = f"projects/{project}/{code}.md"
            lines, line = _body(rng, f"{project.title()} {code}", fact, None)
        else:
            rel = f"people/{who.lower()}-{i:05d}.md"
            lines, line = _body(rng, f"{who} ({code})", fact, None)
        (root / rel).write_text("\n".join(lines) + "\n")
        planted.append(Planted(f"who owns the {code} rollout and what is its error budget", rel, line))
    return planted
