"""Ranking by the shape of agent memory: MEMORY.md files yield to notes, "latest" questions get the newest note,
and the fusion weight leans on vectors when the keyword candidates share few of the query's words."""

from __future__ import annotations

import pytest

from memsearch import MemoryIndex
from memsearch.engine.search.fusion import VECTOR_WEIGHT, WEAK_KEYWORD_VECTOR_WEIGHT, keyword_coverage, vector_weight
from memsearch.engine.search.query import asks_for_folder, wants_latest
from memsearch.engine.search.shape import FOLDER_GAIN, STUB_WEIGHT, is_stub, latest_boost, memory_md_yield, reshape
from memsearch.harness.tools import ToolBox
from memsearch.memory.editor import index_text


def row(path, score, text="text", date=None, start=1):
    directory = path.rsplit("/", 1)[0] if "/" in path else "."
    return {"id": f"{path}:{start}", "path": path, "dir": directory, "start_line": start, "end_line": start + 2,
            "text": text, "score": score, "date": date, "heading": ""}


def test_wants_latest():
    for q in ("latest atlas load test latency", "what is the most recent weight", "how far did I run last time",
              "what is the current blocker", "who handles procurement now", "how many so far",
              "how many open issues are there at the moment", "which Python do we use at present"):
        assert wants_latest(q), q
    for q in ("what did we decide last week", "where did Melanie go last summer", "atlas load test latency",
              "what happened last Friday", "what present would my mother enjoy"):
        assert not wants_latest(q), q


def test_a_generated_stub_is_not_content():
    stub = row("clients/acme/MEMORY.md", 1.0, index_text("clients/acme").strip())
    note = row("clients/acme/contract.md", 0.6)
    assert is_stub(stub) and not is_stub(note)
    assert not is_stub(row("clients/acme/MEMORY.md", 1.0, "# Acme\n\nOur biggest client; renewal in 2028."))
    out = memory_md_yield([stub, note])
    assert [r["path"] for r in out] == ["clients/acme/contract.md", "clients/acme/MEMORY.md"]
    assert out[1]["score"] == pytest.approx(STUB_WEIGHT)


def test_a_memory_md_ranks_after_every_note_of_its_folder_that_matches():
    index = row("projects/atlas/MEMORY.md", 1.0, "# Atlas\n\n- plans.md has the schedule and the budget.\n- notes/ status")
    plans = row("projects/atlas/plans.md", 0.5)
    status = row("projects/atlas/notes/2026-03-02.md", 0.45)  # in a subfolder: still of its folder
    other = row("projects/billing/plan.md", 0.7)  # another folder's note: no reason to yield to it
    out = [r["path"] for r in memory_md_yield([index, other, plans, status])]
    assert out == ["projects/billing/plan.md", "projects/atlas/plans.md", "projects/atlas/notes/2026-03-02.md",
                   "projects/atlas/MEMORY.md"]
    # a summary that names no note yields all the same (the pointer after the note) ...
    summary = row("projects/atlas/MEMORY.md", 1.0, "# Atlas\n\nThe migration off Hadoop; cutover in June.")
    assert [r["path"] for r in memory_md_yield([summary, plans])] == [plans["path"], summary["path"]]
    # ... but still ranks first when no note of its folder matches: a note far weaker, or none at all
    weak = row("projects/atlas/plans.md", 0.1)
    assert memory_md_yield([summary, other, weak])[0] is summary
    assert memory_md_yield([summary, other])[0] is summary
    # a note matching far less than the MEMORY.md does not pull it below itself
    out = [r["path"] for r in memory_md_yield([index, plans, weak | {"path": "projects/atlas/old.md"}])]
    assert out == ["projects/atlas/plans.md", "projects/atlas/MEMORY.md", "projects/atlas/old.md"]


def test_a_question_asking_which_folder_is_answered_by_its_memory_md():
    for q in ("which folder holds the beacon how-tos", "What directory has my tax notes?", "in which subfolder are the logs",
              "where did I write down the problems we fixed", "where are the pollen session logs kept",
              "Where would I find the recipes for the servers?", "where do I look for crashes we debugged",
              "where are the day by day notes of my work on ledgerly", "Where is my journal from the trip?"):
        assert asks_for_folder(q), q
    for q in ("where are we sleeping on the Portugal trip", "what did we file in the folder of receipts",
              "which warehouse did we choose", "the folder structure of the repo", "where do the nightly backups go",
              "where is the container image published", "Where did Deborah get her cats?",
              "where are the keys", "where is the notebook I lent Sam"):
        assert not asks_for_folder(q), q
    summary = row("people/MEMORY.md", 1.0, "# People\n\nColleagues, one file each.")
    note = row("people/priya.md", 0.7)
    stub = row("clients/MEMORY.md", 0.9, index_text("clients").strip())
    asked = [r["path"] for r in reshape([summary, stub, note], "which folder has the notes about colleagues")]
    assert asked == ["people/MEMORY.md", "people/priya.md", "clients/MEMORY.md"]  # a stub is still no answer
    told = [r["path"] for r in reshape([summary, stub, note], "what do I know about my colleagues")]
    assert told == ["people/priya.md", "people/MEMORY.md", "clients/MEMORY.md"]


def test_a_folder_question_lifts_the_memory_md_files_and_the_deepest_that_matches_comes_first():
    project = row("projects/beacon/MEMORY.md", 1.0, "# Beacon\n\n- bugs/: the scoring failures\n- logs/: sessions")
    bugs = row("projects/beacon/bugs/MEMORY.md", 0.6, "# Bugs\n\nEvery failure of the scoring job, one file each.")
    note = row("projects/beacon/bugs/scoring-oom.md", 0.4)
    stub = row("clients/MEMORY.md", 0.95, index_text("clients").strip())
    other = row("people/MEMORY.md", 0.05, "# People\n\nColleagues.")
    rows = [project, stub, bugs, note, other]
    asked = reshape(rows, "where did I keep the failures of the scoring job")
    # every written pointer gains FOLDER_GAIN x the best (a weak one too), the parent yields to its subfolder's, and
    # both stay above a note that matches far less; a stub is still no answer
    assert [r["path"] for r in asked] == ["projects/beacon/bugs/MEMORY.md", "projects/beacon/MEMORY.md",
                                          "projects/beacon/bugs/scoring-oom.md", "people/MEMORY.md", "clients/MEMORY.md"]
    assert asked[0]["score"] == pytest.approx(0.6 + FOLDER_GAIN * 1.0)
    # a note matching nearly as well as a raised pointer (FOLDER_NOTE_FLOOR of it) holds the answer: it comes first
    strong = dict(note, score=0.6 * (0.6 + FOLDER_GAIN) + 0.01)
    asked = reshape([project, stub, bugs, strong, other], "where did I keep the failures of the scoring job")
    assert [r["path"] for r in asked][:3] == ["projects/beacon/bugs/scoring-oom.md", "projects/beacon/bugs/MEMORY.md",
                                              "projects/beacon/MEMORY.md"]
    # the same rows asked about the failure itself: every pointer yields to the note
    told = [r["path"] for r in reshape(rows, "why did the scoring job fail")]
    assert told.index("projects/beacon/bugs/scoring-oom.md") < told.index("projects/beacon/bugs/MEMORY.md")
    assert told.index("projects/beacon/bugs/scoring-oom.md") < told.index("projects/beacon/MEMORY.md")


@pytest.mark.slow
def test_which_folder_finds_the_folder_with_the_real_model(examples_copy, tmp_path, real_embedder):
    """On examples/memory, "which folder ..." and "where ... kept" get the folder's MEMORY.md first."""
    with MemoryIndex(examples_copy, db=tmp_path / "db", embedder=real_embedder) as index:
        index.sync()
        for question, folder in (("which folder holds the meeting notes", "notes"),
                                 ("which folder has the notes about the people I work with", "people")):
            assert index.search(question, k=3)[0].path == f"{folder}/MEMORY.md", question
        # the same words without the question of a folder: the notes first, as before
        assert index.search("the meeting notes", k=3)[0].path != "notes/MEMORY.md"
        # "where ... kept": the folder's summary, the most specific one (a website decision, a note, came first before)
        for question, folder in (("where are the dated meeting notes kept", "notes"),
                                 ("which folder has the deeper Atlas material", "projects/atlas")):
            assert index.search(question, k=3)[0].path == f"{folder}/MEMORY.md", question
        # ... unless a note holds what is asked for nearly as well: the incident log, its folder's summary next
        found = [h.path for h in index.search("where did I write down the Atlas incidents", k=3)]
        assert found[:2] == ["projects/atlas/incidents.md", "projects/atlas/MEMORY.md"], found


def test_latest_questions_prefer_the_newest_relevant_dated_note():
    old = row("notes/2026-03-02.md", 1.0, date="2026-03-02")
    new = row("notes/2026-03-23.md", 0.9, date="2026-03-23")
    unrelated = row("journal/2026-04-01.md", 0.2, date="2026-04-01")  # newer but not relevant
    assert [r["path"] for r in latest_boost([old, new, unrelated], "latest load test")][:2] == [new["path"], old["path"]]
    assert latest_boost([old, new, unrelated], "load test") == [old, new, unrelated]
    assert reshape([old, new], "what did we note last week")[0] is old


def test_weak_keyword_evidence_raises_the_vector_weight():
    rows = [row("infra/deploy/rollbacks.md", 3.0, "Roll back with make rollback ENV=prod")]
    assert keyword_coverage("roll back the release", rows) == pytest.approx(2 / 3)
    assert vector_weight("roll back the release", keyword=rows) == VECTOR_WEIGHT
    assert keyword_coverage("how do I undo a bad deploy", rows) == 0.0
    assert vector_weight("how do I undo a bad deploy", keyword=rows) == pytest.approx(WEAK_KEYWORD_VECTOR_WEIGHT)
    assert vector_weight("how do I undo a bad deploy") == VECTOR_WEIGHT  # no keyword rows given
    assert vector_weight("undo atlas-00042", keyword=rows) < VECTOR_WEIGHT  # identifiers keep their weight


@pytest.mark.slow
def test_agent_written_tree_end_to_end(tmp_path, real_embedder):
    """A tree written through the memory tool, searched with the real model: notes before MEMORY.md, newest first."""
    root = tmp_path / "mem"
    root.mkdir()
    with MemoryIndex(root, db=tmp_path / "db", embedder=real_embedder) as index:
        box = ToolBox(root, index=index, writable=True)
        write = lambda **kw: box.call("memory", kw)  # noqa: E731
        write(command="create", path="/memories/clients/acme/contract.md",
              file_text="# Acme contract\n\n- Renewal notice period: 90 days before 2028-11-04, in writing.\n")
        write(command="create", path="/memories/projects/atlas/plans.md",
              file_text="# Atlas plans\n\n- Cutover weekend is 2026-06-13.\n- Approved spend: EUR 180k.\n")
        stub = (root / "projects/atlas/MEMORY.md").read_text().strip()
        write(command="str_replace", path="/memories/projects/atlas/MEMORY.md", old_str=stub,
              new_str="# Atlas\n\n- plans.md has the schedule and the budget.\n- notes/ holds the status notes.")
        for day, ms in (("2026-03-02", 420), ("2026-03-09", 380), ("2026-03-16", 290)):
            write(command="create", path=f"/memories/projects/atlas/notes/{day}.md",
                  file_text=f"# Atlas status {day}\n\n- Load test: p95 latency {ms} ms.\n")
        assert index.search("acme renewal notice period", k=3)[0].path == "clients/acme/contract.md"
        top = index.search("what is the atlas schedule and budget", k=3)
        assert top[0].path == "projects/atlas/plans.md"
        assert top[0].memory_md is not None and top[0].memory_md.path == "projects/atlas/MEMORY.md"
        assert index.search("latest atlas load test latency", k=3)[0].path == "projects/atlas/notes/2026-03-16.md"
