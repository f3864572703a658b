"""The validator: every valid and invalid configuration of the spec, and the warnings."""

from __future__ import annotations

import pytest

from memsearch.errors import InvalidArgument
from memsearch.memory.validator import core_budget, validate

VALID = {
    "first example": {
        "MEMORY.md": "# Memory\n", "persona.md": "p", "human.md": "h",
        "projects/MEMORY.md": "# Projects", "projects/project.md": "x",
        "notes/MEMORY.md": "# Notes", "notes/2026-08-12.md": "n",
    },
    "single root index with collapsed logs": {
        "MEMORY.md": "# M", "example-repository-name/MEMORY.md": "# R",
        "example-repository-name/03082026.md": "a", "example-repository-name/03092026.md": "b",
    },
    "core only": {"MEMORY.md": "# M", "SOUL.md": "s", "USER.md": "u"},
    "smallest": {"MEMORY.md": ""},
    "several levels": {"MEMORY.md": "# M", "projects/MEMORY.md": "# P", "projects/project-1/MEMORY.md": "# 1"},
}


@pytest.mark.parametrize("name", VALID)
def test_valid_configurations(make_tree, name):
    report = validate(make_tree(VALID[name]))
    assert report.valid, report.errors
    assert report.errors == ()


def test_root_without_index_is_invalid(make_tree):
    root = make_tree({
        "project-1/MEMORY.md": "", "project-1/user_preferences.md": "", "project-1/bad_bugs.md": "",
        "project-2/MEMORY.md": "", "project-2/memories_03082026.md": "", "project-2/memories_03092026.md": "",
    })
    report = validate(root)
    assert not report.valid
    assert [(e.code, e.path) for e in report.errors] == [("missing-root-index", ".")]


def test_nested_dir_without_index_is_invalid(make_tree):
    report = validate(make_tree({"MEMORY.md": "", "notes/2026-08-12.md": "x"}))
    assert [(e.code, e.path) for e in report.errors] == [("missing-index", "notes")]
    assert "notes/MEMORY.md" in report.errors[0].message


def test_every_violation_is_reported(make_tree):
    report = validate(make_tree({"a/b/c/note.md": "x", "d/x.md": "y", "e/MEMORY.md": ""}))
    codes = [(e.code, e.path) for e in report.errors]
    assert codes == [("missing-root-index", "."), ("missing-index", "a"), ("missing-index", "a/b"),
                     ("missing-index", "a/b/c"), ("missing-index", "d")]
    assert report.memory_dirs == ("a", "a/b", "a/b/c", "d", "e")


def test_parent_of_memory_dir_needs_index(make_tree):
    report = validate(make_tree({"MEMORY.md": "", "projects/atlas/MEMORY.md": "# Atlas"}))
    assert [(e.code, e.path) for e in report.errors] == [("missing-index", "projects")]


def test_foreign_and_hidden_need_no_index(make_tree):
    report = validate(make_tree({"MEMORY.md": "", "skills/pdf/SKILL.md": "s", ".git/x.md": "x", "notes/.cache/a.md": "x"}))
    assert report.valid
    assert report.foreign_dirs == ("skills",)


def test_oversized_core_warns_but_stays_valid(make_tree):
    root = make_tree({"MEMORY.md": "word " * 40_000})
    report = validate(root)
    assert report.valid
    assert [w.code for w in report.warnings] == ["core-over-budget"]
    assert report.core_tokens > 30_000
    assert validate(root, budget=100_000).warnings == ()
    assert validate(root, window=1_000_000).core_budget == 150_000
    assert validate(root, window=200_000, share=0.1).core_budget == 20_000


def test_nested_content_does_not_count_to_core(make_tree):
    report = validate(make_tree({"MEMORY.md": "tiny", "notes/MEMORY.md": "# Notes", "notes/big.md": "word " * 40_000}))
    assert report.warnings == ()
    assert report.core_tokens < 10


def test_encoding_and_name_warnings(make_tree):
    report = validate(make_tree({
        "MEMORY.md": "", "notes/MEMORY.md": "", "notes/latin.md": "caf\xe9".encode("latin-1"),
        "docs/memory.md": "x",
    }))
    codes = {(w.code, w.path) for w in report.warnings}
    assert ("not-utf8", "notes/latin.md") in codes
    assert ("misnamed-index", "docs/memory.md") in codes
    assert ("empty-index", "notes/MEMORY.md") in codes
    assert [(e.code, e.path) for e in report.errors] == [("missing-index", "docs")]


def test_budget_arguments():
    assert core_budget() == 30_000
    assert core_budget(window=200_000) == 30_000
    with pytest.raises(InvalidArgument):
        core_budget(share=0.2)
    with pytest.raises(InvalidArgument):
        core_budget(-5)
