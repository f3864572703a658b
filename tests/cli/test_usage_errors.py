"""Usage mistakes as a new user makes them: one line ``error: ...`` naming the command's ``--help``, exit 2;
output piped into a reader that stops early ends quietly; a mistyped ``--scope`` is an error, not "no hits"."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import time

import pytest

from tests.conftest import stop_service

MEMORY = {"MEMORY.md": "# Memory\n\nCore.\n", "notes/MEMORY.md": "# Notes\n\nDaily notes.\n",
          "notes/a.md": "# Atlas\n\nWe chose ClickHouse for the warehouse.\n"}


def run(*args: str, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "memsearch", *args], capture_output=True, text=True, env=env,
                          timeout=300)


def one_error_line(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


def test_an_unknown_option_names_the_one_meant_never_a_hidden_one(make_tree):
    root = make_tree(MEMORY)
    message = one_error_line(run("search", str(root), "atlas", "--k", "3"))
    assert "--k" in message and "did you mean -k?" in message and "`memsearch search --help`" in message
    assert "--asked" not in message  # the fast path's hidden mark is no option of the user's
    message = one_error_line(run("stop", "--al"))
    assert "did you mean --all?" in message and "`memsearch stop --help`" in message


@pytest.mark.parametrize("args, words", [
    (("search",), "Missing argument 'root'"),
    (("serch", "x"), "No such command 'serch'"),
    (("search", "{root}", "atlas", "-k", "0"), "'-k'"),
    (("index", "{root}", "--wait", "-1"), "'--wait'"),
    (("validate", "{root}", "--budget", "many"), "'--budget'"),
])
def test_usage_mistakes_get_one_line(make_tree, args, words):
    root = make_tree(MEMORY)
    message = one_error_line(run(*(a.format(root=root) for a in args)))
    assert words in message and "--help`" in message


def test_exit_statuses_and_help_are_kept(make_tree):
    invalid = make_tree({"notes/a.md": "a"})
    assert run("validate", str(invalid)).returncode == 1
    assert run("validate", str(make_tree(MEMORY))).returncode == 0
    bare = run()
    assert bare.returncode == 2 and "Usage" in bare.stdout + bare.stderr and "Traceback" not in bare.stderr
    helped = run("search", "--help")
    assert helped.returncode == 0 and "--scope" in helped.stdout


def test_a_scope_that_is_no_folder_is_an_error(make_tree):
    root = make_tree(MEMORY)
    message = one_error_line(run("search", str(root), "atlas", "--scope", "notse", "--no-daemon"))
    assert "scope 'notse' is not a directory" in message and "memsearch ls" in message
    message = one_error_line(run("search", str(root), "atlas", "--scope", "notes/a.md", "--no-daemon"))
    assert "is not a directory" in message


def closed_reader(*args: str, env=None) -> subprocess.CompletedProcess:
    """``memsearch ARGS | true``: stdout's reader is gone before the command writes."""
    read, write = os.pipe()
    os.close(read)
    try:
        proc = subprocess.run([sys.executable, "-m", "memsearch", *args], stdout=write, stderr=subprocess.PIPE,
                              text=True, env=env, timeout=300)
    finally:
        os.close(write)
    return proc


@pytest.mark.parametrize("command", [("core",), ("ls",), ("read", "notes/a.md"), ("validate",)])
def test_a_reader_that_went_away_ends_the_command_quietly(make_tree, command):
    root = make_tree(MEMORY)
    result = closed_reader(command[0], str(root), *command[1:])
    assert result.stderr == "" and result.returncode == 1


@pytest.mark.slow
def test_service_answered_commands_keep_those_rules(make_tree, autostart, private_service):
    """Through the running service (the fast path): a mistyped scope is refused, a closed pipe is quiet."""
    root = make_tree(MEMORY)
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    first = run("search", str(root), "clickhouse warehouse", env=env)
    assert first.returncode == 0 and "notes/a.md" in first.stdout, first.stderr
    try:
        deadline = time.monotonic() + 120
        while str(root) not in run("status", "--json", env=env).stdout:  # served: the fast path answers
            assert time.monotonic() < deadline, "the service did not load the root"
            time.sleep(0.5)
        message = one_error_line(run("search", str(root), "atlas", "--scope", "notse", env=env))
        assert "scope 'notse' is not a directory" in message
        message = one_error_line(run("search", str(root), "atlas", "--model", "nope", env=env))  # no "refused" warning
        assert message.startswith("error: unknown model 'nope'"), message
        for args in (("search", str(root), "clickhouse warehouse", "-k", "1"), ("core", str(root))):
            result = closed_reader(*args, env=env)
            assert result.stderr == "" and result.returncode == 1
    finally:
        stop_service(private_service)


def test_status_of_a_folder_that_is_no_memory_root_says_so(tmp_path, make_tree):
    folder = tmp_path / "code"
    folder.mkdir()
    result = run("status", str(folder))
    assert result.returncode == 0 and "has no MEMORY.md" in result.stdout, result.stdout
    assert f"`memsearch validate {folder}`" in result.stdout and "memsearch index" not in result.stdout
    assert list(folder.iterdir()) == []  # asking wrote nothing there
    root = make_tree(MEMORY)
    assert f"`memsearch index {root}`" in run("status", str(root)).stdout  # a memory root not indexed yet


@pytest.mark.parametrize("args", [("search", "warehouse choice", "{root}"), ("read", "notes/a.md", "{root}"),
                                  ("ls", "notes", "{root}")])
def test_the_root_given_second_is_answered_with_the_order(make_tree, args):
    """`memsearch search 'atlas' ~/memory`: the memory root comes first, and the error says so as a command."""
    root = make_tree(MEMORY).resolve()
    message = one_error_line(run(*(a.format(root=root) for a in args)))
    expected = shlex.join(["memsearch", args[0], str(root), args[1]])
    assert message.endswith(f"the memory root comes first: `{expected}`"), message
    assert "comes first" not in run("ls", "nope").stderr  # no folder after it: the plain refusal


@pytest.mark.slow
def test_watch_of_a_root_the_service_keeps_names_the_service_and_the_hand_over(make_tree, autostart, private_service):
    """The README's order: a search (which starts the service), then `memsearch watch ROOT`. It used to name
    "process N (watch, ...)" and `memsearch stop ROOT` for a daemon; it names the service and the two commands."""
    root = make_tree(MEMORY).resolve()
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    assert run("search", str(root), "clickhouse", env=env).returncode == 0
    try:
        deadline = time.monotonic() + 120
        while str(root) not in run("status", "--json", env=env).stdout:
            assert time.monotonic() < deadline, "the service did not load the root"
            time.sleep(0.5)
        last = one_error_line(run("watch", str(root), env=env))  # before loading a model: no log line before it
        assert last.startswith("error: the memsearch service (pid ") and f"`memsearch stop {root}`" in last, last
        assert f"`memsearch watch {root}`" in last
    finally:
        stop_service(private_service)


@pytest.mark.parametrize(("raised", "code", "said"), [(KeyboardInterrupt, 130, ""),
                                                      (EOFError, 1, "error: aborted: nothing was written")])
def test_ctrl_c_exits_130_and_only_a_prompt_without_input_says_nothing_was_written(make_tree, monkeypatch, capsys,
                                                                                   raised, code, said):
    """Ctrl-C during a command (an index's batches may be committed already) is exit 130 and no claim about what
    was written; end of input at a prompt (click's Abort) is exit 1 saying nothing was written."""
    from memsearch.cli.app import main
    from memsearch.memory import validator

    def interrupted(*args, **kwargs):
        raise raised

    monkeypatch.setattr(validator, "validate", interrupted)
    assert main(["validate", str(make_tree(MEMORY))]) == code
    assert capsys.readouterr().err.strip() == said


def test_a_search_with_no_query_says_it_is_missing_not_that_two_were_given(make_tree):
    """``memsearch search ROOT`` alone used to say ``give either a QUERY or --queries FILE.jsonl (not both)``."""
    root = make_tree(MEMORY)
    message = one_error_line(run("search", str(root)))
    assert "not both" not in message and "no QUERY given" in message
    assert f"`memsearch search {shlex.quote(str(root))} 'some words'`" in message
    assert "not both" in one_error_line(run("search", str(root), "atlas", "--queries", str(root / "q.jsonl")))


def test_a_queries_file_not_in_utf8_is_one_error_line_naming_the_fix(make_tree, tmp_path):
    """A UTF-16 ``--queries`` file (what Windows editors save) ended in a UnicodeDecodeError traceback, exit 1."""
    root = make_tree(MEMORY)
    utf16 = tmp_path / "q16.jsonl"
    utf16.write_bytes('{"qid": "a", "query": "atlas"}\n'.encode("utf-16"))
    message = one_error_line(run("search", str(root), "--queries", str(utf16), "--no-daemon"))
    assert f"{utf16} is not UTF-8" in message and f"`iconv -f UTF-16 -t UTF-8 {utf16} > queries.jsonl`" in message
    latin = tmp_path / "latin.jsonl"
    latin.write_bytes('{"qid": "a", "query": "caf\u00e9"}\n'.encode("latin-1"))
    message = one_error_line(run("search", str(root), "--queries", str(latin), "--no-daemon"))
    assert f"{latin} is not UTF-8 (byte 0xe9 at offset 26)" in message and "re-save it as UTF-8" in message


def test_a_queries_line_refused_names_its_line_and_qid_before_any_hit(make_tree, tmp_path):
    """A bad ``scope`` on one line said only ``scope 'nope' is not a directory``: which of the lines? Every line is
    checked before the first is searched, so no hits of the others come before the error."""
    root = make_tree(MEMORY)
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"qid": "ok", "query": "atlas"}\n\n{"qid": "q3", "query": "atlas", "scope": "nope"}\n',
                       encoding="utf-8")
    result = run("search", str(root), "--queries", str(queries), "--no-daemon")
    message = one_error_line(result)
    assert message.startswith(f"error: {queries}:3 (qid 'q3'): scope 'nope' is not a directory of the memory")
    assert f"`memsearch ls {root} .`" in message and result.stdout == ""
    queries.write_text('\ufeff{"qid": 1, "query": "ClickHouse", "scope": "notes"}\n', encoding="utf-8")  # a BOM
    result = run("search", str(root), "--queries", str(queries), "--no-daemon")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["qid"] == 1 and json.loads(result.stdout)["hits"][0]["path"] == "notes/a.md"


def _root_commands():
    """(command words, click command) of every ``memsearch`` command that takes a ROOT argument."""
    import typer

    from memsearch.cli.app import app

    found, todo = [], [((), typer.main.get_command(app))]
    while todo:
        words, command = todo.pop()
        for name, sub in getattr(command, "commands", {}).items():
            todo.append(((*words, name), sub))
        if any(p.name == "root" and p.param_type_name == "argument" for p in command.params):
            found.append((words, command))
    return sorted(found, key=lambda item: item[0])


def test_every_root_argument_refuses_an_empty_root():
    """``memsearch COMMAND ''``: typer made ``""`` into ``Path(".")``, so each command worked on the working
    directory; each ROOT argument is now parsed by one rule (the library's), which refuses it before anything runs."""
    from memsearch.errors import NotAMemoryRoot

    commands = _root_commands()
    names = {" ".join(words) for words, _ in commands}
    assert {"search", "index", "ls", "read", "core", "status", "validate", "watch", "stop", "edit", "check",
            "mcp-config", "serve", "claude-code install"} <= names
    for words, command in commands:
        with pytest.raises(NotAMemoryRoot, match="no memory root given"):
            command.make_context(words[-1], [""])  # parsing only: nothing runs


@pytest.mark.parametrize("args", [("search", "", "ClickHouse warehouse"), ("ls", ""), ("index", ""), ("status", "")])
def test_an_empty_root_is_one_error_line_not_the_working_directory(make_tree, args):
    """Run inside a memory tree, ``memsearch search '' QUERY`` answered from the working directory (the fast path
    hands the empty root to the full CLI, which refuses it)."""
    root = make_tree(MEMORY)
    result = subprocess.run([sys.executable, "-m", "memsearch", *args], capture_output=True, text=True, cwd=root,
                            timeout=300)
    message = one_error_line(result)
    assert "no memory root given ('')" in message and "`.` for the working directory" in message
    assert not (root / ".memsearch").exists()


def test_a_query_that_starts_with_a_dash_is_told_to_go_after_double_dash(make_tree):
    """``memsearch search ROOT "-x fails"`` got click's "No such option: -x" alone; now the line shows the command
    with the query after ``--`` (exit 2 kept), and that command, pasted, searches."""
    root = make_tree(MEMORY)
    message = one_error_line(run("search", str(root), "-x ClickHouse", "-k", "3", "--mode", "keyword", "--local"))
    assert "No such option: -x" in message and "`memsearch search --help`" in message
    [suggested] = [c for c in re.findall(r"`(memsearch search [^`]*)`", message) if c != "memsearch search --help"]
    argv = shlex.split(suggested)
    assert argv[-2:] == ["--", "-x ClickHouse"] and argv[2] == str(root)
    pasted = run(*argv[1:])
    assert pasted.returncode == 0 and "notes/a.md" in pasted.stdout, (pasted.stdout, pasted.stderr)
    message = one_error_line(run("status", "--bogus"))  # a command with a ROOT alone: a mistyped option
    assert "--`" not in message and "`memsearch status --help`" in message


@pytest.mark.parametrize("args, option", [
    (("watch", "{root}", "--debounce", "-5"), "--debounce"),
    (("watch", "{root}", "--debounce", "0"), "--debounce"),
    (("watch", "{root}", "--idle-exit", "-5"), "--idle-exit"),
    (("service", "--idle-exit", "-1"), "--idle-exit"),
    (("validate", "{root}", "--budget", "-5"), "--budget"),
    (("validate", "{root}", "--window", "-5"), "--window"),
    (("validate", "{root}", "--window", "1000", "--share", "2"), "--share"),
    (("validate", "{root}", "--window", "1000", "--share", "2.5"), "--share"),
    (("serve", "{root}", "--budget", "-3"), "--budget"),
    (("serve", "{root}", "--budget", "199"), "--budget"),
])
def test_a_bad_value_of_an_option_names_the_option(make_tree, args, option):
    """``memsearch watch ROOT --debounce -5`` said ``debounce -5 is not valid: debounce_ms accepts ...`` (the
    setting's name, not what the user typed), ``validate --budget -5`` said ``core budget must be a positive number``,
    ``validate --window -5`` ``context window must be ...`` and ``serve --budget -3`` ``budget must be ...``; each
    numeric option is checked by the library's rule for it as it is parsed, before anything starts, and named as
    typed."""
    root = make_tree(MEMORY)
    message = one_error_line(run(*(a.format(root=root) for a in args)))
    value = args[-1]  # as typed: typer made --share 2 a float, and it was shown as 2.0
    assert message.startswith(f"error: {option} {value} is not valid: {option} accepts "), message
    assert "debounce_ms" not in message and "MEMSEARCH_" not in message and "core budget" not in message


def test_a_share_without_a_window_names_both_options(make_tree):
    """``validate --share 0.5`` alone said ``pass window= (e.g. --window 200000)``, the Python API's words."""
    message = one_error_line(run("validate", str(make_tree(MEMORY)), "--share", "0.5"))
    assert "--share" in message and "--window 200000 --share 0.15" in message and "window=" not in message


def commands_in(text: str) -> list[list[str]]:
    return [shlex.split(c) for c in re.findall(r"`(memsearch [^`]*)`", text)]


def test_stop_takes_either_a_root_or_all_never_both(make_tree):
    root = make_tree(MEMORY)
    message = one_error_line(run("stop", str(root), "--all"))
    assert "give either ROOT or --all, not both" in message
    assert f"`memsearch stop {root}`" in message and "`memsearch stop --all`" in message
    message = one_error_line(run("stop"))
    assert "name the memory root" in message and "`memsearch stop ROOT`" in message


@pytest.mark.parametrize("extra", [(), ("--repair",), ("--json",)])
def test_check_of_a_root_never_indexed_says_so_and_creates_nothing(make_tree, tmp_path, extra):
    """``memsearch check`` of a root never indexed said ``checked 0 rows of 0 files ...: ok``, exit 0, and left an
    empty ``.memsearch`` behind: now there is nothing to check, which is said with the command that builds it."""
    root = make_tree(MEMORY)
    message = one_error_line(run("check", str(root), *extra))
    assert message == (f"error: no index yet at {root / '.memsearch'}, so nothing to check: build it with "
                       f"`memsearch index {root}`")
    assert not (root / ".memsearch").exists()
    db = tmp_path / "elsewhere"
    message = one_error_line(run("check", str(root), "--db", str(db), *extra))
    assert f"no index yet at {db}" in message and f"`memsearch index {root} --db {db}`" in message
    assert not db.exists() and not (root / ".memsearch").exists()
