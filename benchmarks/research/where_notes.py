"""Do questions worded like folder questions but asking for one note still get the note first?

"where did I write down the savings rate" reads as a folder question (:func:`memsearch.engine.search.query.asks_for_folder`)
but asks for the note that holds it, which its folder's ``MEMORY.md`` names. These questions, asked of the ``agentmem``
tree with the default model and engine, count how often that note ranks first and how often a ``MEMORY.md`` ranks above
it (within the first five hits)::

    python -m benchmarks.research.where_notes [--questions]

The findings, and the values of :data:`~memsearch.engine.search.shape.FOLDER_GAIN` and
:data:`~memsearch.engine.search.shape.FOLDER_NOTE_FLOOR` they chose, are in benchmarks/research/LOG.md (round
sixteen).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

__all__ = ["QUESTIONS", "measure", "main"]

#: (question, the note that answers it), each worded as a question about where something was kept.
QUESTIONS = (
    ("where did I note the plumber's booking", "home/repairs.md"),
    ("where did I write down the savings rate", "finance/budget.md"),
    ("where are the accountant's details kept", "finance/taxes.md"),
    ("where did I record who has not paid their invoice", "finance/invoices.md"),
    ("where do I keep the tomato sowing dates", "home/garden.md"),
    ("where did I write down the carpenter's quote", "home/repairs.md"),
    ("where is the monthly budget recorded", "finance/budget.md"),
    ("where did I note the kids' term dates", "family/school.md"),
    ("where did I keep the birthday gift ideas", "family/birthdays.md"),
    ("where is the electricity tariff noted", "home/utilities.md"),
    ("where would I find the Atlas schedule", "projects/atlas/plans.md"),
    ("where did I record the billing cutover date", "projects/billing/migration.md"),
)
K = 5


def measure(*, show: bool = False) -> dict:
    """``{"first": n, "pointer_above": n, "questions": n}`` over :data:`QUESTIONS` (``show``: print each ranking)."""
    from benchmarks import quality
    from benchmarks.common import bench_embedder
    from memsearch import MemoryIndex
    from memsearch.engine.search.query import asks_for_folder

    work = Path(tempfile.mkdtemp(prefix="where-notes-"))
    root = quality.load_corpus("agentmem", work).trees[""]
    for question, note in QUESTIONS:  # the set means: worded as a folder question, answered by one note of the tree
        if not asks_for_folder(question) or not (root / note).is_file() or note.endswith("MEMORY.md"):
            raise ValueError(f"where_notes: {question!r} is no folder question, or {note!r} no note of the tree")
    first = above = 0
    with MemoryIndex(root, db=work / "db", embedder=bench_embedder()) as index:
        index.sync()
        for question, note in QUESTIONS:
            paths = [h.path for h in index.search(question, k=K)]
            rank = paths.index(note) if note in paths else K
            first += rank == 0
            above += any(p.endswith("MEMORY.md") for p in paths[:rank])
            if show:
                print(f"{rank + 1 if rank < K else '-':>2} {question}: {', '.join(paths[:3])}")
    return {"first": first, "pointer_above": above, "questions": len(QUESTIONS)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.research.where_notes", description=__doc__.split("\n")[0])
    parser.add_argument("--questions", action="store_true", help="print each question's first hits")
    args = parser.parse_args(argv)
    got = measure(show=args.questions)
    print(f"the note first: {got['first']} of {got['questions']}; a MEMORY.md above it: {got['pointer_above']}")


if __name__ == "__main__":
    main()
