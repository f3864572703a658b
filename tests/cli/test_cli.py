"""The CLI as a user runs it: exit codes, JSON shapes, one-line errors and no tracebacks."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import EXAMPLES


def run(*args: str, cwd=None):
    return subprocess.run([sys.executable, "-m", "memsearch", *args], capture_output=True, text=True, cwd=cwd)


@pytest.mark.slow
def test_validate_exit_codes(make_tree, tmp_path):
    good = make_tree({"MEMORY.md": "# M", "notes/MEMORY.md": "# N", "notes/a.md": "a"})
    bad = make_tree({"MEMORY.md": "# M", "notes/a.md": "a"})
    assert run("validate", str(good)).returncode == 0
    result = run("validate", str(bad))
    assert result.returncode == 1
    assert "notes/MEMORY.md" in result.stdout
    missing = run("validate", str(tmp_path / "nope"))
    assert missing.returncode == 2
    assert "Traceback" not in missing.stderr and "does not exist" in missing.stderr
    assert len(missing.stderr.strip().splitlines()) == 1
    (tmp_path / "plain.txt").write_text("x")
    assert run("validate", str(tmp_path / "plain.txt")).returncode == 2


def test_validate_json_shape(make_tree):
    root = make_tree({"a/b.md": "x"})
    result = run("validate", str(root), "--json")
    data = json.loads(result.stdout)
    assert set(data) >= {"valid", "errors", "warnings", "core_tokens", "memory_dirs"}
    assert data["valid"] is False
    assert data["errors"] == [
        {"code": "missing-root-index", "path": ".", "message": data["errors"][0]["message"]},
        {"code": "missing-index", "path": "a", "message": data["errors"][1]["message"]},
    ]
    assert data["memory_dirs"] == ["a"]


@pytest.mark.slow
def test_core_ls_read(make_tree):
    root = make_tree({"MEMORY.md": "# Root\nhello core\n", "notes/MEMORY.md": "# Notes\n\nDaily.\n", "notes/a.md": "one\ntwo\nthree\n"})
    core = run("core", str(root))
    assert core.returncode == 0 and "hello core" in core.stdout and "one" not in core.stdout
    data = json.loads(run("core", str(root), "--json").stdout)
    assert data["files"][0]["path"] == "MEMORY.md" and data["total_tokens"] > 0
    ls = json.loads(run("ls", str(root), "--json").stdout)
    assert ls["dirs"][0]["path"] == "notes" and ls["dirs"][0]["summary"] == "Daily."
    assert "notes/a.md" in run("ls", str(root), "notes").stdout
    assert run("read", str(root), "notes/a.md", "--lines", "2:3").stdout == "two\nthree\n"


@pytest.mark.parametrize("args", [
    ("read", "{root}", "../x.md"),
    ("read", "{root}", "notes/a.md", "--lines", "x"),
    ("read", "{root}", "notes/zzz.md"),
    ("ls", "{root}", "nope"),
    ("core", "{root}/missing"),
])
def test_user_mistakes_get_one_line(make_tree, args):
    root = make_tree({"MEMORY.md": "# M", "notes/MEMORY.md": "# N", "notes/a.md": "a"})
    result = run(*(a.format(root=root) for a in args))
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("error: ")


def test_a_bad_line_range_names_lines(make_tree):
    """``read --lines x`` said ``line range 'x' is not of the form A:B``: it now names the option's word."""
    root = make_tree({"MEMORY.md": "# M", "notes/MEMORY.md": "# N", "notes/a.md": "a"})
    for lines in ("x", "5:2"):
        result = run("read", str(root), "notes/a.md", "--lines", lines)
        assert result.returncode == 2 and result.stderr.startswith(f"error: lines '{lines}' "), result.stderr


def test_examples_memory_is_valid():
    result = run("validate", str(EXAMPLES), "--json")
    data = json.loads(result.stdout)
    assert result.returncode == 0, data["errors"]
    assert len(data["memory_dirs"]) >= 4
    assert data["warnings"] == []
