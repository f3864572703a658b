"""The content of the agent-written corpus (benchmarks/agentmem.py): folders, their notes, and the questions,
read from ``benchmarks/corpora/agentmem.json``.

Each :class:`Folder` is one memory directory an agent filed notes in: plain notes (``notes``:
file name -> text, written with ``create`` and later extended with ``insert`` where a note holds
``"\\n+ "`` appends), optionally a hand-written ``MEMORY.md`` that *names* subjects without holding
the answers (``index``), and dated entries (``dated``: ISO date -> lines, several writes to the
same day's file). ``questions`` are what an agent asks mid-task: (category, query, path, answer),
where ``answer`` is a substring of exactly one line of ``path`` (the relevant line). Categories:

* ``fact`` - the question shares words with the answer line;
* ``paraphrase`` - it shares few words with any note (the meaning, not the wording);
* ``latest`` - "the latest / last / most recent X": the newest dated note holds the answer,
  older dated notes hold older values of the same thing;
* ``folder`` - the question names the folder (a generated ``MEMORY.md`` stub names it too);
* ``index`` - the question names a subject a hand-written ``MEMORY.md`` names.

``split`` is "tune" or "test": the held-out folders are never looked at while tuning ranking.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Folder", "FOLDERS", "ROOT_NOTE", "EXTRA"]


@dataclass(frozen=True)
class Folder:
    dir: str
    split: str
    notes: dict[str, str] = field(default_factory=dict)
    index: str | None = None
    dated: dict[str, list[str]] = field(default_factory=dict)
    dated_dir: str = "notes"
    questions: tuple[tuple[str, str, str, str], ...] = ()


DATA = Path(__file__).parent / "corpora" / "agentmem.json"


def _folder(d: dict) -> Folder:
    return Folder(d["dir"], d["split"], notes=d.get("notes", {}), index=d.get("index"), dated=d.get("dated", {}),
                  dated_dir=d.get("dated_dir", "notes"), questions=tuple(tuple(q) for q in d.get("questions", ())))


_DATA = json.loads(DATA.read_text(encoding="utf-8"))
#: The root's core note: (file name, text).
ROOT_NOTE: tuple[str, str] = tuple(_DATA["root_note"])
FOLDERS: tuple[Folder, ...] = tuple(_folder(d) for d in _DATA["folders"])
#: Notes no question asks about: what else an agent files in the same folders (distractors).
EXTRA: dict[str, dict[str, str]] = _DATA["extra"]
