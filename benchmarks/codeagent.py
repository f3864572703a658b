"""The coding-agent corpus: the long-lived memory of a coding agent across several projects, and its questions.

The tree is what an agent that works for one developer keeps after four months: core files at the
root (``MEMORY.md``, ``user.md`` with the standing instructions, ``agent.md``), ``people/``, general
``howto/``, and one folder per project under ``projects/`` with an overview, the project's
conventions, ``decisions/`` (ADR-like notes), ``bugs/``, ``howto/`` and ``logs/`` (one session log per
working day). Every folder has a ``MEMORY.md`` that summarises it the way an agent writes one (what
is there, what state things are in), not a generated stub.

The text lives in data files (``benchmarks/corpora/codeagent/``: ``core.toml`` for the root,
people and general how-tos, one ``projects/<name>.toml`` per project, ``filler.toml`` for the routine
lines of the session logs); this module only lays them out. A project's logs are its dated story
lines plus routine sessions on other working days, each log padded with routine lines (reviews,
dependency bumps, triage) drawn with a fixed seed from ``filler.toml`` and the project's own
components and people, so the tree is the same on every run.

Questions (category): ``fact``, ``paraphrase`` (few shared words), ``summary`` ("how did X go": the
dated lines of a story across logs), ``order`` ("in which order did we ...": three dated lines),
``everything`` ("everything about X": lines in several notes), ``instruction`` ("what did I ask you to
always do ..."), ``latest`` (a value that changed across logs: the newest line), ``folder`` ("which
folder holds X": its ``MEMORY.md``). Each names its evidence as (file, a substring of exactly one
line); ``folder`` evidence is the whole ``MEMORY.md``. ``split``: three projects and half the
general questions are the tuning half, the rest held out.
"""

from __future__ import annotations

import datetime as dt
import random
import shutil
import tomllib
from dataclasses import dataclass
from pathlib import Path

from benchmarks.common import REPO

__all__ = ["DATA", "SEED", "CATEGORIES", "Asked", "build", "load"]

DATA = REPO / "benchmarks" / "corpora" / "codeagent"
SEED = 31
CATEGORIES = ("fact", "paraphrase", "summary", "order", "everything", "instruction", "latest", "folder")
#: Routine lines added to each session log, and routine sessions' own count of lines.
FILLER_PER_LOG = (1, 4)
ROUTINE_LINES = (3, 6)


@dataclass(frozen=True)
class Asked:
    """One question: its query, category, split and evidence ((path, (first, last) or None for the whole file))."""

    qid: str
    query: str
    category: str
    split: str
    items: tuple[tuple[str, tuple[int, int] | None], ...]


def load() -> tuple[dict, list[dict], dict]:
    """The data files: (core, projects in name order, filler)."""
    read = lambda p: tomllib.loads(p.read_text(encoding="utf-8"))  # noqa: E731
    projects = [read(p) for p in sorted((DATA / "projects").glob("*.toml"))]
    return read(DATA / "core.toml"), projects, read(DATA / "filler.toml")


def _write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text.strip("\n") + "\n", encoding="utf-8")


def _workdays(start: dt.date, end: dt.date) -> list[dt.date]:
    days = (start + dt.timedelta(days=i) for i in range((end - start).days + 1))
    return [d for d in days if d.weekday() < 5]


def _routine(rng: random.Random, filler: dict, project: dict) -> str:
    template = rng.choice(filler["lines"])
    return template.format(
        component=rng.choice(project["components"]), dep=rng.choice(project["deps"]),
        person=rng.choice(project["people"]), n=rng.randint(2, 9), pr=rng.randint(40, 480),
        minor=rng.randint(1, 19), patch=rng.randint(0, 9),
    )


def _logs(rng: random.Random, project: dict, filler: dict) -> dict[str, str]:
    """``logs/<date>.md`` -> text: the story's dated lines with routine lines around them, and routine days."""
    story = {dt.date.fromisoformat(d): lines for d, lines in project["logs"].items()}
    first, last = min(story), max(story)
    spare = [d for d in _workdays(first, last) if d not in story]
    days = sorted(set(story) | set(rng.sample(spare, min(len(spare), project["sessions"] - len(story)))))
    out = {}
    for day in days:
        lines = list(story.get(day, ()))
        count = rng.randint(*(FILLER_PER_LOG if lines else ROUTINE_LINES))
        for _ in range(count):
            lines.insert(rng.randint(0, len(lines)), _routine(rng, filler, project))
        head = f"# {project['name']} session {day.isoformat()}"
        out[f"logs/{day.isoformat()}.md"] = "\n".join([head, "", *(f"- {x}" for x in lines)])
    return out


def _line(root: Path, rel: str, answer: str) -> tuple[int, int] | None:
    if not answer:
        return None
    lines = (root / rel).read_text(encoding="utf-8").split("\n")
    found = [i + 1 for i, line in enumerate(lines) if answer in line]
    if len(found) != 1:
        raise ValueError(f"codeagent: {answer!r} is on {len(found)} lines of {rel}, not one")
    return (found[0], found[0])


def _rel(base: str, path: str) -> str:
    """A question's evidence path: relative to its project, or to the root when it starts with ``/``."""
    return path[1:] if path.startswith("/") else f"{base}/{path}".lstrip("/")


def _questions(root: Path, base: str, split: str, asked: list[dict], out: list[Asked]) -> None:
    for q in asked:
        if q["cat"] not in CATEGORIES:
            raise ValueError(f"codeagent: unknown category {q['cat']!r} of {q['q']!r}")
        items = tuple(
            (rel, _line(root, rel, answer))
            for rel, answer in ((_rel(base, path), answer) for path, answer in q["a"])
        )
        out.append(Asked(f"code-{len(out)}", q["q"], q["cat"], q.get("split", split), items))


def build(root: Path, seed: int = SEED) -> tuple[list[Asked], dict]:
    """Write the tree into ``root`` (replaced); returns its questions and counts."""
    core, projects, filler = load()
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    rng = random.Random(seed)
    for rel, text in core["files"].items():
        _write(root, rel, text)
    for project in projects:
        base = f"projects/{project['slug']}"
        files = dict(project["files"]) | _logs(rng, project, filler)
        for rel, text in files.items():
            _write(root, f"{base}/{rel}", text)
    asked: list[Asked] = []
    _questions(root, "", "", core["q"], asked)
    for project in projects:
        _questions(root, f"projects/{project['slug']}", project["split"], project["q"], asked)
    files = [p for p in root.rglob("*.md")]
    folders = {p.parent for p in files}
    missing = sorted(str(f.relative_to(root)) for f in folders if not (f / "MEMORY.md").is_file())
    if missing:
        raise ValueError(f"codeagent: folders without MEMORY.md: {', '.join(missing)}")
    stats = {
        "files": len(files), "folders": len(folders), "logs": sum(p.parent.name == "logs" for p in files),
        "projects": len(projects), "questions": len(asked),
    }
    return asked, stats
