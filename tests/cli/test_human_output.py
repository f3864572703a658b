"""The CLI's human output: counts read as English, hints name the real root, memory text cannot drive the terminal."""

from __future__ import annotations

import io
import subprocess
import sys
import time

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


def test_service_status_tells_two_indexes_of_one_root_apart(capsys, monkeypatch):
    """After ``memsearch search ROOT atlas --db OTHER`` the service listed ROOT twice, with nothing to tell which line
    was which index: one that is not the root's own ``ROOT/.memsearch`` is named on its line."""
    from memsearch.service import process

    rows = [{"root": "/m", "db": db, "files": 1, "chunks": 1, "memory_bytes": 1e6, "pending": 0, "state": "watching",
             "phase": "watching", "model": "m"} for db in ("/m/.memsearch", "/elsewhere/db")]
    monkeypatch.setattr(process, "service_status", lambda: {"pid": 7, "socket": "/s", "roots": rows})
    watch._service_status(False)
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].startswith("  /m: 1 file") and lines[2].startswith("  /m (index /elsewhere/db): 1 file")


@pytest.mark.slow
def test_an_index_asked_with_db_is_named_by_status_and_stop(make_tree, tmp_path, autostart):
    root = make_tree({"MEMORY.md": "# Memory\n", "notes/MEMORY.md": "# Notes\n", "notes/a.md": "# A\n\natlas\n"})
    other = tmp_path / "other-db"

    def served() -> list[str]:
        return sorted(line.split(":")[0] for line in run("status").stdout.splitlines() if line.startswith(f"  {root}"))

    for extra, wanted in (((), [f"  {root}"]), (("--db", str(other)), [f"  {root}", f"  {root} (index {other})"])):
        deadline = time.monotonic() + 240  # a search loads the index into the service once it listens
        while served() != wanted:
            assert run("search", str(root), "atlas", "-k", "1", *extra).returncode == 0
            assert time.monotonic() < deadline, served()
            time.sleep(0.5)
    stopped = run("stop", str(root), "--db", str(other))
    assert stopped.stdout.strip().endswith(f"no longer serves {root} (index {other})"), stopped
    assert [line.split(":")[0] for line in run("status").stdout.splitlines() if str(root) in line] == [f"  {root}"]
    assert run("stop", "--all").returncode == 0


@pytest.mark.slow
def test_status_of_a_one_file_root_says_one_file(make_tree, autostart):
    root = make_tree({"MEMORY.md": "# Memory\n", "notes/a.md": "# A\n\none short line\n"})
    assert run("index", str(root)).returncode == 0
    status = run("status", str(root))
    assert status.returncode == 0, status.stderr
    assert ": 1 file, 1 chunk," in status.stdout
    assert "1 files" not in status.stdout and "1 chunks" not in status.stdout
    assert run("stop", "--all").returncode == 0


HOSTILE = "clip\x1b]52;c;cm0gLXJmIH4=\x07 clear\x1b[2J link\x1b]8;;http://x\x1b\\ c1\x9b31m nul\x00 del\x7f"
SHOWN = "clip^[]52;c;cm0gLXJmIH4=^G clear^[[2J link^[]8;;http://x^[\\ c1<U+009B>31m nul^@ del^?"


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_visible_shows_controls_and_bidi_overrides_and_keeps_newlines_and_tabs():
    assert render.visible(HOSTILE) == SHOWN
    assert render.visible("a\tb\nc") == "a\tb\nc"
    assert render.visible("evil\u202egpj.md \u2066x\u2069") == "evil<U+202E>gpj.md <U+2066>x<U+2069>"
    assert render.escape("[b]\x1b[2J") == "\\[b]^[[2J"


def test_hits_listings_and_errors_never_write_escape_codes(capsys, monkeypatch):
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    hit = {"path": "n/\x1b[2Jx.md", "start_line": 1, "end_line": 2, "score": 0.5, "heading": HOSTILE, "date": None,
           "memory_md": {"path": "n/MEMORY.md", "title": HOSTILE}, "text": HOSTILE, "stale": False, "partial": False}
    render.print_hits([hit])
    render.print_listing({"path": ".", "title": HOSTILE, "summary": HOSTILE, "dirs": [],
                          "files": [{"path": "\u202eevil.md", "tokens": 3, "title": HOSTILE}]})
    render.print_error(ValueError("no memory file 'a\x1b]52;c;x\x07.md'"))
    out, err = capsys.readouterr()
    assert "\x1b" not in out + err and "\x07" not in out + err and "\u202e" not in out
    assert SHOWN in out and "n/^[[2Jx.md:1-2" in out and "<U+202E>evil.md" in out
    assert "no memory file 'a^[]52;c;x.md'" in err  # bell and the like are dropped, as rich dropped them


def test_read_and_core_are_exact_through_a_pipe_and_visible_on_a_terminal(capsys, monkeypatch):
    render.print_read({"text": HOSTILE})
    render.print_core({"rendered": HOSTILE, "files": ["MEMORY.md"], "total_tokens": 5, "encoding": "cl100k_base"})
    assert capsys.readouterr().out == HOSTILE + "\n" + HOSTILE + "\n"
    terminal = Terminal()
    monkeypatch.setattr(sys, "stdout", terminal)
    render.print_read({"text": HOSTILE})
    render.print_core({"rendered": HOSTILE, "files": ["MEMORY.md"], "total_tokens": 5, "encoding": "cl100k_base"})
    assert terminal.getvalue() == SHOWN + "\n" + SHOWN + "\n"


@pytest.mark.slow
def test_search_shows_escape_codes_and_json_keeps_them(make_tree, autostart):
    import json

    root = make_tree({"MEMORY.md": "# Memory\n", "notes/MEMORY.md": "# Notes\n",
                      "notes/evil.md": f"# Atlas\n\natlas deploy notes {HOSTILE}\n"})
    assert run("index", str(root)).returncode == 0
    human = run("search", str(root), "atlas deploy")
    assert human.returncode == 0, human.stderr
    assert "notes/evil.md" in human.stdout and "\x1b" not in human.stdout and "^[]52;c;" in human.stdout
    exact = json.loads(run("search", str(root), "atlas deploy", "--json").stdout)
    assert any(HOSTILE in hit["text"] for hit in exact["hits"])
    assert run("read", str(root), "notes/evil.md").stdout.endswith(f"{HOSTILE}\n")  # a pipe: the file as written
    assert run("stop", "--all").returncode == 0


def test_hints_name_the_root_given_shell_quoted(capsys, monkeypatch):
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    long = {"path": "my notes/a.md", "start_line": 3, "end_line": 12, "score": 0.5, "heading": "h", "date": None,
            "memory_md": None, "text": "\n".join(f"line {n}" for n in range(9)), "stale": False, "partial": False}
    render.print_hits([long], "/home/me/my memory")
    assert "(memsearch read '/home/me/my memory' 'my notes/a.md' --lines 3:12)" in capsys.readouterr().out
    render.print_error(ValueError("no memory file 'n': see what is there with `memsearch ls ROOT n`"), "/m")
    assert "`memsearch ls /m n`" in capsys.readouterr().err


def test_a_refused_read_names_the_real_root(make_tree, capsys):
    from tests.conftest import run_cli

    root = make_tree({"MEMORY.md": "# M\n", "notes/MEMORY.md": "# N\n", "notes/a.md": "a\n"})
    code, _, err = run_cli(["read", str(root), "notes", "--local"], capsys)
    assert code == 2 and f"`memsearch ls {root} notes`" in err and "ROOT" not in err


def test_every_count_of_index_and_status_groups_its_thousands(make_tree, capsys, monkeypatch):
    """`memsearch index` printed `260 embedded, 2692 reused, 3380 in the index` (only the first count grouped),
    and `status` its last sync and pending counts ungrouped, beside `3,380 chunks` on the next line."""
    from memsearch.cli import indexing
    from memsearch.engine.ingest.sync import IndexReport
    from memsearch.engine.jobs import IndexJob
    from memsearch.service import process, route
    from tests.conftest import run_cli

    root = make_tree({"MEMORY.md": "# M\n\nm\n"})
    report = IndexReport(files_added=1200, files_changed=1300, files_removed=1400, files_unchanged=1500,
                         chunks_embedded=2600, chunks_reused=2692, chunks_total=3380)
    monkeypatch.setattr(route, "write", lambda *a, **k: None)
    monkeypatch.setattr(indexing, "_in_process", lambda where, **k: IndexJob(str(root), str(where.state), report))
    code, out, _ = run_cli(["index", str(root)], capsys)
    assert code == 0
    assert "files: 1,200 added, 1,300 changed, 1,400 removed, 1,500 unchanged" in out, out
    assert "chunks: 2,600 embedded, 2,692 reused, 3,380 in the index" in out, out
    info = {"root": str(root), "db": "/d", "running": False, "pid": None, "since": None, "state": "not running",
            "serving": False, "socket": "/s", "writer": None, "last_sync": report.to_dict() | {"at": "t"},
            "last_compaction": None, "error": None, "log": None, "indexed": True, "files": 5000, "chunks": 9000,
            "model": "m", "disk_bytes": 0, "pending": {"added": 1001, "changed": 1002, "removed": 1003, "total": 3006},
            "partial_files": 0, "partial_chunks": 0, "by": None}
    monkeypatch.setattr(watch, "daemon_status", lambda *a: info)
    code, out, _ = run_cli(["status", str(root)], capsys)
    assert code == 0
    assert "1,200 added, 1,300 changed, 1,400 removed; 2,600 chunks embedded, 2,692 reused" in out, out
    assert "3,006 changes not yet indexed (1,001 added, 1,002 changed, 1,003 removed)" in out, out
    row = {"root": "/m", "files": 5000, "chunks": 9000, "memory_bytes": 1e6, "pending": 1234, "state": "watching",
           "phase": "watching", "model": "m"}
    monkeypatch.setattr(process, "service_status", lambda: {"pid": 7, "socket": "/s", "roots": [row]})
    watch._service_status(False)
    assert "/m: 5,000 files, 9,000 chunks, 1,234 pending" in capsys.readouterr().out
