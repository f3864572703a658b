"""The agent-written corpus: a memory tree built only through memsearch's own ``memory`` tool, and its questions.

The tree is what an agent leaves behind after weeks of work: every file is written command by
command through ``ToolBox(root, writable=True)`` (``create``, ``insert`` to append, ``str_replace``),
so every new directory gets the tool's generated ``MEMORY.md`` stub ("Memory about acme: the notes
filed in clients/acme/.") and most stay that way; a few are rewritten by hand as folder indexes
that *name* their subjects ("plans.md has the schedule and the budget") without holding the
answers. Dated notes (``notes/2026-03-02.md``, ``journal/2026-03-16.md``) are created and appended
to over weeks, and later entries update earlier values. The content is in
:mod:`benchmarks.agentmem_notes`; the order of the writes is shuffled with a fixed seed, so the
tree is the same on every run.

Questions (83) are what an agent asks mid-task, each with one relevant line (category
``fact``, ``paraphrase``, ``latest``, ``folder``, ``index``; see agentmem_notes). ``split``:
the questions about the folders marked "tune" (45) may be looked at while tuning ranking;
those about the "test" folders (38) are held out.
"""

from __future__ import annotations

import datetime as dt
import random
import shutil
from dataclasses import dataclass
from pathlib import Path

from benchmarks.agentmem_notes import EXTRA, FOLDERS, ROOT_NOTE

__all__ = ["Write", "writes", "build", "questions", "SEED", "START"]

SEED = 20
#: The first day of the agent's work; plain notes are written within the following weeks.
START = dt.date(2026, 2, 2)
WEEKS = 8


@dataclass(frozen=True)
class Write:
    """One memory-tool command on a day (``order`` breaks ties in a seeded shuffle)."""

    day: dt.date
    order: float
    command: dict
    index_of: str | None = None  # a hand-written MEMORY.md: replaces the stub of this directory


def _path(rel: str) -> str:
    return f"/memories/{rel}"


def _appends(text: str) -> tuple[str, list[str]]:
    """A note's first version and the lines appended to it later (marked ``\\n+ `` in the data)."""
    first, *more = text.split("\n+ ")
    return first, [m.rstrip("\n") for m in more]


def writes(seed: int = SEED) -> list[Write]:
    """Every command that builds the tree, in the order the agent ran them."""
    rng = random.Random(seed)
    out: list[Write] = [Write(START, 0.0, {"command": "create", "path": _path(ROOT_NOTE[0]), "file_text": ROOT_NOTE[1]})]

    def day(lo: int, hi: int) -> dt.date:
        return START + dt.timedelta(days=rng.randint(lo, hi))

    for folder in FOLDERS:
        notes = dict(folder.notes) | EXTRA.get(folder.dir, {})
        first_day = None
        for name, text in notes.items():
            created = day(0, 7 * WEEKS // 2)
            first_day = min(first_day or created, created)
            body, more = _appends(text)
            out.append(Write(created, rng.random(), {"command": "create", "path": _path(f"{folder.dir}/{name}"),
                                                     "file_text": body}))
            for line in more:
                out.append(Write(created + dt.timedelta(days=rng.randint(3, 21)), rng.random(),
                                 {"command": "insert", "path": _path(f"{folder.dir}/{name}"), "insert_text": line + "\n"}))
        for iso, lines in folder.dated.items():
            when = dt.date.fromisoformat(iso)
            rel = "/".join(p for p in (folder.dir, folder.dated_dir, f"{iso}.md") if p)
            first_day = min(first_day or when, when)
            out.append(Write(when, rng.random(), {"command": "create", "path": _path(rel),
                                                  "file_text": "\n".join(lines[:3]) + "\n"}))
            for i, line in enumerate(lines[3:]):  # appended through the day
                out.append(Write(when, 1.0 + i + rng.random(),
                                 {"command": "insert", "path": _path(rel), "insert_text": line + "\n"}))
        if folder.index:
            out.append(Write(first_day + dt.timedelta(days=1), rng.random(),
                             {"command": "str_replace", "path": _path(f"{folder.dir}/MEMORY.md"), "new_str": folder.index},
                             index_of=folder.dir))
    return sorted(out, key=lambda w: (w.day, w.order))


def build(root: Path, seed: int = SEED) -> dict:
    """Write the tree into the empty directory ``root`` through the ``memory`` tool; returns counts.

    The tool indexes each write (read-your-writes); a throwaway index with the hashing embedder
    takes them, beside ``root``, so building costs no model time.
    """
    from memsearch import MemoryIndex
    from memsearch.engine.embed.embedder import HashEmbedder
    from memsearch.harness.tools import ToolBox

    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    scratch = root.parent / f"{root.name}.build-db"
    shutil.rmtree(scratch, ignore_errors=True)
    counts: dict[str, int] = {}
    with MemoryIndex(root, db=scratch, embedder=HashEmbedder()) as index:
        box = ToolBox(root, index=index, writable=True)
        for w in writes(seed):
            command = dict(w.command)
            file = root / command["path"].removeprefix("/memories/")
            if command["command"] == "insert":  # append: after the file's last line
                command["insert_line"] = len(file.read_text(encoding="utf-8").splitlines())
            elif command["command"] == "str_replace":  # an index rewritten by hand: the whole stub goes
                command["old_str"] = file.read_text(encoding="utf-8").strip("\n")
                command["new_str"] = command["new_str"].strip("\n")
            box.call("memory", command)
            counts[command["command"]] = counts.get(command["command"], 0) + 1
    shutil.rmtree(scratch, ignore_errors=True)
    files = [p for p in root.rglob("*.md") if ".memsearch" not in p.parts]
    hand = {f"{f.dir}/MEMORY.md" for f in FOLDERS if f.index}
    indexes = [p for p in files if p.name == "MEMORY.md" and p.parent != root]
    return {"commands": counts, "notes": sum(p.name != "MEMORY.md" and p.parent != root for p in files),
            "folders": len(indexes), "memory_md_stubs": sum(p.relative_to(root).as_posix() not in hand for p in indexes),
            "memory_md_hand_written": len(hand)}


def _line_of(root: Path, rel: str, answer: str) -> int:
    lines = (root / rel).read_text(encoding="utf-8").split("\n")
    found = [i + 1 for i, line in enumerate(lines) if answer in line]
    if len(found) != 1:
        raise ValueError(f"agentmem: {answer!r} is on {len(found)} lines of {rel}, not one")
    return found[0]


def questions(root: Path) -> list[tuple[str, str, str, str, int, str]]:
    """(qid, query, category, path, line, split) of every question, the line looked up in the built tree."""
    out = []
    for folder in FOLDERS:
        for category, query, name, answer in folder.questions:
            rel = f"{folder.dir}/{name}"
            out.append((f"agent-{len(out)}", query, category, rel, _line_of(root, rel, answer), folder.split))
    return out
