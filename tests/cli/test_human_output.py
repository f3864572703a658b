"""The CLI's human output: counts read as English, hints name the real root, memory text cannot drive the terminal."""

from __future__ import annotations

import subprocess
import sys

import pytest

from memsearch.cli import render, watch


def run(*args: str):
    return subprocess.run([sys.executable, "-m", "memsearch", *args], capture_output=True, text=True, timeout=300)


def test_counted_is_singular_for_one():
    assert render.counted(1, "file") == "1 file"
    assert render.counted(0, "file") == "0 files"
    assert render.counted(1024, "chunk") == "1,024 chunks"
    assert render.counted(1, "memory directory", "memory directories") == "1 memory directory"
    assert render.counted(2, "memory directory", "memory directories") == "2 memory directories"


def test_core_footer_says_one_core_file(capsys):
    render.print_core({"rendered": "# M", "files": ["MEMORY.md"], "total_tokens": 1, "encoding": "cl100k_base"})
    assert "1 core file, 1 token (cl100k_base)" in capsys.readouterr().err


def test_service_status_counts_one_root_in_the_singular(capsys, monkeypatch):
    from memsearch.service import process

    root = {"root": "/m", "files": 1, "chunks": 1, "memory_bytes": 1e6, "pending": 0, "state": "watching",
            "phase": "watching", "model": "all-MiniLM-L6-v2"}
    monkeypatch.setattr(process, "service_status", lambda: {"pid": 7, "socket": "/s", "roots": [root]})
    watch._service_status(False)
    assert "/m: 1 file, 1 chunk, 0 pending" in capsys.readouterr().out


@pytest.mark.slow
def test_status_of_a_one_file_root_says_one_file(make_tree, autostart):
    root = make_tree({"MEMORY.md": "# Memory\n", "notes/a.md": "# A\n\none short line\n"})
    assert run("index", str(root)).returncode == 0
    status = run("status", str(root))
    assert status.returncode == 0, status.stderr
    assert ": 1 file, 1 chunk," in status.stdout
    assert "1 files" not in status.stdout and "1 chunks" not in status.stdout
    assert run("stop", "--all").returncode == 0
