"""A deterministic generator of agent-memory trees, for scale and speed curves.

Trees look like real agent memory: core files in the root (``MEMORY.md``, ``persona.md``,
``human.md``); ``projects/<name>/`` folders of notes with decisions, TODO check lists, code
fences and YAML front matter, some one level deeper in ``projects/<name>/decisions/``;
``notes/<year>/`` dated daily notes; ``logs/<year>/<month>/`` service logs with fenced log
lines; ``people/``. Every memory directory has its ``MEMORY.md``. Each file carries one
planted fact at a known line, so generated queries have known answers.

Size is set in files (:func:`generate`) or in approximate chunks (:func:`generate_chunks`,
about :data:`CHUNKS_PER_FILE` chunks per file at the default chunk size). The same seed
gives the same tree, and a larger tree starts with the files of a smaller one.
"""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Planted", "generate", "generate_chunks", "files_for_chunks", "CHUNKS_PER_FILE"]

#: Chunks per generated file at the default chunker settings (measured: 300 files give
#: 1,379 chunks with max_tokens=128 and 2 overlap lines, MEMORY.md files included); only
#: used to turn a size in chunks into files. Results always report the chunks indexed.
CHUNKS_PER_FILE = 4.6

_WORDS = (
    "pipeline schema deploy rollback latency cache queue worker retry budget invoice ledger forecast "
    "model feature flag migration index shard replica backup restore alert threshold dashboard metric "
    "owner review release branch merge conflict test fixture coverage profile memory cpu disk network "
    "timeout quota token session cookie header payload webhook endpoint client server region cluster"
).split()
_NAMES = "Maya Kenji Priya Diego Lena Tomas Aiko Omar Sara Felix Nadia Ravi".split()
_THINGS = "atlas billing riverline sdk website search ingest ledger forecaster gateway scheduler vault".split()
_SERVICES = "api worker ingest scheduler gateway billing".split()
_CODE = [
    "```bash\nmake deploy ENV=staging\nkubectl rollout status deploy/api\n```",
    "```python\ndef retry(fn, attempts=3):\n    for i in range(attempts):\n"
    "        try:\n            return fn()\n        except TimeoutError:\n            continue\n```",
    "```sql\nSELECT region, count(*) FROM events GROUP BY region;\n```",
]
_QUERIES = [
    "who owns the {code} rollout and what is its error budget",
    "what is the error budget of {code}, and who is its owner",
    "{code} rollout: owner and error budget minutes",
]


@dataclass(frozen=True)
class Planted:
    """A fact written at a known place: ``query`` should find ``path`` at ``line``."""

    query: str
    path: str
    line: int
    kind: str = "notes"


def files_for_chunks(chunks: int) -> int:
    return max(1, round(chunks / CHUNKS_PER_FILE))


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
        heading = rng.choice(["Decisions", "Open questions", "TODO", "Log", "Architecture", "Notes"])
        lines += [f"## {heading} {s + 1}", ""]
        for _ in range(rng.randint(2, 5)):
            if heading == "TODO":
                lines.append(f"- [{rng.choice(' x')}] {_sentence(rng, rng.randint(6, 12))}")
            else:
                lines.append(f"- {dated or '2026-09-0' + str(rng.randint(1, 9))}: {_sentence(rng, rng.randint(8, 20))}")
        if s == fact_at:
            lines.append(f"- {fact}")
            fact_line = len(lines)
        if rng.random() < 0.25:
            lines += ["", *rng.choice(_CODE).split("\n")]  # one element per line: line numbers stay exact
        lines.append("")
    return lines, fact_line


def _log(rng: random.Random, title: str, fact: str, day: dt.date) -> tuple[list[str], int]:
    lines = [f"# {title}", "", _sentence(rng, 14), "", "## Events", ""]
    fact_line = 0
    for _ in range(rng.randint(3, 6)):
        lines.append(f"- {rng.randint(0, 23):02d}:{rng.randint(0, 59):02d} {_sentence(rng, rng.randint(8, 16))}")
    lines.append(f"- {fact}")
    fact_line = len(lines)
    lines += ["", "## Raw lines", "", "```text"]
    for _ in range(rng.randint(3, 8)):
        lines.append(
            f"{day.isoformat()}T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:00Z "
            f"{rng.choice(['INFO', 'WARN', 'ERROR'])} {rng.choice(_SERVICES)} {' '.join(rng.choice(_WORDS) for _ in range(6))}"
        )
    lines += ["```", ""]
    return lines, fact_line


def _index(folder: Path, title: str, text: str) -> None:
    if not folder.exists():
        folder.mkdir(parents=True)
    if not (folder / "MEMORY.md").exists():
        (folder / "MEMORY.md").write_text(f"# {title}\n\n{text}\n")


def generate(root: Path, files: int, seed: int = 0) -> list[Planted]:
    """Write a tree of about ``files`` Markdown files under ``root``; return the planted facts."""
    rng = random.Random(seed)
    root.mkdir(parents=True, exist_ok=True)
    (root / "MEMORY.md").write_text("# Memory\n\nGenerated agent memory: projects/, notes/, logs/, people/.\n")
    (root / "persona.md").write_text("# Persona\n\nConcise, careful, cites sources.\n")
    (root / "human.md").write_text(
        "# Human: Maya\n\n- Tech lead of the platform team; prefers short answers.\n"
        "- Timezone Europe/Lisbon; no meetings on Wednesdays.\n"
    )
    planted: list[Planted] = []
    dirs = {
        "projects": "Projects, one folder each.",
        "notes": "Dated daily notes, one folder per year.",
        "logs": "Service logs, by year and month.",
        "people": "Colleagues.",
    }
    for d, text in dirs.items():
        _index(root / d, d.title(), text)
    start = dt.date(2024, 1, 1)
    for i in range(files):
        kind = rng.choices(["notes", "projects", "people", "logs"], weights=[5, 3, 1, 1])[0]
        code = f"{rng.choice(_THINGS)}-{i:05d}"
        who = rng.choice(_NAMES)
        fact = f"The {code} rollout owner is {who}; its error budget is {rng.randint(1, 99)} minutes."
        day = start + dt.timedelta(days=i)
        if kind == "notes":
            rel = f"notes/{day.year}/{day.isoformat()}.md"
            _index(root / f"notes/{day.year}", f"Notes {day.year}", "One file per day.")
            lines, line = _body(rng, f"{day.isoformat()} daily note", fact, day.isoformat())
        elif kind == "logs":
            service = rng.choice(_SERVICES)
            folder = f"logs/{day.year}/{day.month:02d}"
            _index(root / f"logs/{day.year}", f"Logs {day.year}", "One folder per month.")
            _index(root / folder, f"Logs {day.year}-{day.month:02d}", "One file per service and day.")
            rel = f"{folder}/{day.isoformat()}-{service}-{i:05d}.md"
            lines, line = _log(rng, f"{service} log {day.isoformat()}", fact, day)
        elif kind == "projects":
            project = rng.choice(_THINGS)
            _index(root / "projects" / project, project.title(), f"Everything about the {project} project.")
            if rng.random() < 0.3:
                _index(
                    root / "projects" / project / "decisions",
                    f"{project.title()} decisions",
                    "One record per decision.",
                )
                rel = f"projects/{project}/decisions/{code}.md"
            else:
                rel = f"projects/{project}/{code}.md"
            lines, line = _body(rng, f"{project.title()} {code}", fact, None)
        else:
            rel = f"people/{who.lower()}-{i:05d}.md"
            lines, line = _body(rng, f"{who} ({code})", fact, None)
        (root / rel).write_text("\n".join(lines) + "\n")
        planted.append(Planted(rng.choice(_QUERIES).format(code=code), rel, line, kind))
    return planted


def generate_chunks(root: Path, chunks: int, seed: int = 0) -> list[Planted]:
    """A tree of about ``chunks`` chunks (see :data:`CHUNKS_PER_FILE`)."""
    return generate(root, files_for_chunks(chunks), seed=seed)
