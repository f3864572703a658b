"""Every command a CLI message names carries the real memory root, shell-quoted by one rule
(:func:`memsearch.errors.shell_word`, :func:`memsearch.errors.naming_root`), so it can be pasted into a shell as
shown: a root with a space and a quote comes back whole from ``shlex.split``. ``index``, ``status``, ``stop``,
``check`` and ``watch`` name it as ``search``, ``read``, ``ls`` and ``core`` do."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from memsearch.errors import HINTS, Hint, IndexLocked, naming_root, shell_word

#: A memory root a shell would split in two (the space) and end a quoted string in (the quote).
ODD = "my memory's notes"


def commands(text: str) -> list[list[str]]:
    """The ``memsearch ...`` commands a message names (in backticks, or a read hint in parentheses), as a shell
    splits them."""
    found = re.findall(r"`(memsearch [^`]*)`", text) + re.findall(r"\((memsearch read [^)]*)\)", text)
    assert found, text
    return [shlex.split(command) for command in found]


@pytest.fixture
def odd_root(make_tree, tmp_path):
    from tests.conftest import build

    return build(tmp_path / ODD, {"MEMORY.md": "# M\n\nm\n", "notes/MEMORY.md": "# N\n\nn\n", "notes/a.md": "# A\n"})


@pytest.mark.parametrize("action", sorted(a for a, words in HINTS.items() if "memsearch" in words["cli"]
                                          and "ROOT" in words["cli"]))
def test_each_cli_hint_names_the_root_as_a_shell_takes_it(tmp_path, action):
    root = tmp_path / ODD
    text = naming_root(f"it failed; {Hint(action, 'my notes').render('cli')}", root)
    for argv in commands(text):
        assert argv[:1] == ["memsearch"] and argv[2] == str(root), text
        if "{path}" in HINTS[action]["cli"]:
            assert "my notes" in argv[3:], text  # the memory path (rebuild_model: the model's name) too, one word


def test_an_unknown_root_stays_the_placeholder_and_tools_keep_their_wording():
    assert shell_word(None) == "ROOT" and naming_root("see `memsearch status ROOT`", None) == "see `memsearch status ROOT`"
    assert Hint("list", "my notes").render("tools") == "see what is there with memory_list(path='my notes')"


@pytest.mark.parametrize("argv", [["index", "{root}"], ["index", "{root}", "--rebuild"], ["status", "{root}"],
                                  ["stop", "{root}", "--timeout", "1"], ["check", "{root}", "--repair"],
                                  ["watch", "{root}", "--wait", "2"], ["search", "{root}", "atlas", "--local"]])
def test_the_root_of_every_command_is_known_to_its_error_line(tmp_path, argv):
    from memsearch.cli.app import _root_of

    root = str(tmp_path / ODD)
    assert str(_root_of([root if a == "{root}" else a for a in argv])) == root


def test_a_busy_index_refused_to_index_names_the_root_in_its_hint(odd_root, capsys):
    from memsearch.engine.storage.lock import WriterLock
    from tests.conftest import run_cli

    lock = WriterLock(odd_root / ".memsearch", "watch").acquire(timeout=0)
    try:
        code, _, err = run_cli(["index", str(odd_root)], capsys)
    finally:
        lock.release()
    assert code != 0 and "ROOT" not in err, err
    assert ["memsearch", "stop", str(odd_root)] in commands(err)


def test_status_names_the_root_in_the_commands_it_suggests(odd_root, tmp_path, capsys):
    from tests.conftest import run_cli

    code, out, _ = run_cli(["status", str(odd_root)], capsys)
    assert code == 0 and {("index", str(odd_root)), ("watch", str(odd_root))} <= {tuple(c[1:]) for c in commands(out)}
    empty = tmp_path / "no memory's here"
    empty.mkdir()
    code, out, _ = run_cli(["status", str(empty)], capsys)
    assert code == 0 and ["memsearch", "validate", str(empty)] in commands(out), out


def test_check_names_the_root_in_its_fixes(tmp_path, capsys, monkeypatch):
    from memsearch.cli.check import print_check
    from memsearch.engine.check import CheckReport, Finding

    monkeypatch.setenv("NO_COLOR", "1")
    root = tmp_path / ODD
    print_check(CheckReport(rows=3, files=1, findings=(Finding("a.md", "a.md", "vector not finite"),),
                            stale=("b.md",)), root, as_json=False, location="here")
    found = commands(capsys.readouterr().out)
    assert ["memsearch", "check", str(root), "--repair"] in found and ["memsearch", "index", str(root), "--rebuild"] in found
    assert ["memsearch", "index", str(root)] in found  # the stale files' fix


def test_a_daemon_refused_start_names_the_root(odd_root):
    from memsearch.engine.storage.lock import WriterLock
    from memsearch.service.process import detach

    lock = WriterLock(odd_root / ".memsearch", "index").acquire(timeout=0)
    try:
        with pytest.raises(IndexLocked) as refused:
            detach(odd_root)
    finally:
        lock.release()
    found = commands(str(refused.value))
    assert ["memsearch", "status", str(odd_root)] in found and ["memsearch", "stop", str(odd_root)] in found


def test_the_hooks_cut_context_names_the_root(odd_root):
    from memsearch.harness.hooks import session_context

    text = session_context(odd_root, limit=5)
    assert ["memsearch", "core", str(odd_root)] in commands(text), text


@pytest.mark.parametrize("started", [dict(), dict(already=True, serving=True, socket="/s"), dict(reported=False)],
                         ids=["started", "already", "not-reported"])
def test_watch_detach_names_the_root_in_the_commands_it_suggests(tmp_path, capsys, monkeypatch, started):
    """What ``memsearch watch --detach`` prints (the daemon itself is started end to end in tests/service)."""
    from memsearch.cli import watch
    from memsearch.service import process

    root = tmp_path / ODD
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setattr(process, "detach", lambda *a, **k: process.Started(
        pid=1, root=root, db=root / ".memsearch", log=root / ".memsearch" / "daemon.log", **started))
    watch._detach(root, None, None, None, 0.0, None)
    captured = capsys.readouterr()
    found = commands(captured.out + captured.err)
    assert ["memsearch", "status", str(root)] in found
    assert started.get("reported", True) is False or ["memsearch", "stop", str(root)] in found


def test_a_watch_refused_for_a_root_the_service_keeps_names_the_root(tmp_path, monkeypatch):
    from memsearch.cli import watch
    from memsearch.service import process

    root = tmp_path / ODD
    root.mkdir()
    monkeypatch.setattr(process, "verified_holder", lambda *a: {"pid": 7, "purpose": "watch"})
    monkeypatch.setattr(process, "service_status", lambda *a: {"pid": 7})
    with pytest.raises(IndexLocked) as refused:
        watch._refuse_if_served(root, None)
    assert [["memsearch", "stop", str(root)], ["memsearch", "watch", str(root)]] == commands(str(refused.value))
    monkeypatch.setattr(process, "service_status", lambda *a: None)  # a watch daemon of its own
    monkeypatch.setattr(process, "silent_service", lambda *a: None)
    with pytest.raises(IndexLocked) as refused:
        watch._refuse_if_served(root, None)
    assert [["memsearch", "status", str(root)], ["memsearch", "stop", str(root)]] == commands(str(refused.value))


@pytest.mark.parametrize("argv", [["read", "NOTES/a.md"], ["read", "notes/gone/deeper/a.md"], ["read", "notes/a.md/b.md"],
                                  ["ls", "gone/deeper"], ["ls", "notes/gone/deeper"]])
def test_the_folder_a_missing_path_is_told_to_list_exists(odd_root, capsys, argv):
    """A missing path's hint listed its parent even when that was missing too (`memsearch read ROOT NOTES/a.md` ->
    `memsearch ls ROOT NOTES`, itself an error): it lists the deepest memory folder of the path that exists."""
    from tests.conftest import run_cli

    command, path = argv
    code, _, err = run_cli([command, str(odd_root), path], capsys)
    assert code == 2 and err.startswith("error: "), err
    (hint,) = commands(err)
    assert hint[:3] == ["memsearch", "ls", str(odd_root)], hint
    code, out, err = run_cli(hint[1:], capsys)
    assert code == 0 and not err, err


@pytest.mark.parametrize("own_db", [False, True])
def test_an_index_locked_raised_by_the_python_api_names_the_root_in_its_hint(odd_root, tmp_path, own_db):
    """``MemoryIndex.sync`` while another process holds the writer lock: the hint's ``memsearch stop`` names the real
    root (and the index, with ``--db``, when it is not ``ROOT/.memsearch``), not the ``ROOT`` only the CLI fills in;
    over the service's socket the hint keeps them (``to_dict`` / ``from_dict``)."""
    from memsearch.engine.embed.embedder import HashEmbedder
    from memsearch.engine.index import MemoryIndex
    from tests.engine.test_concurrency import _holder

    db = tmp_path / "own db" if own_db else odd_root / ".memsearch"
    index = MemoryIndex(odd_root, db=db if own_db else None, embedder=HashEmbedder())
    holder = _holder(db)
    try:
        with pytest.raises(IndexLocked) as busy:
            index.sync(wait=0.0)
    finally:
        holder.kill()
        holder.wait()
    expected = ["memsearch", "stop", str(odd_root.resolve())] + (["--db", str(db)] if own_db else [])
    assert commands(str(busy.value)) == [expected]
    assert "ROOT" not in str(busy.value)
    assert str(Hint.from_dict(busy.value.hint.to_dict()).render("cli")) == busy.value.hint.render("cli")


@pytest.mark.parametrize("argv, hint", [
    (["check", "{root}"], "build it with `memsearch index {root}`"),
    (["check", "{root}", "--json"], "build it with `memsearch index {root}`"),
    (["search", "{root}", "atlas", "--scope", "nope", "--local"], "see what is there with `memsearch ls {root} .`"),
    (["search", "{root}", "atlas", "--scope", ".hidden", "--local"], "see what is there with `memsearch ls {root} .`"),
])
def test_a_hint_the_library_gave_the_root_names_it_as_given(make_tree, tmp_path, monkeypatch, capsys, argv, hint):
    """Docs (commands.md): hints name the memory root you gave. A hint the library raised with the root it knew
    (no index to check, a scope that is no folder) named it resolved: `memsearch index /tmp/.../memory0` for `m`."""
    from tests.conftest import run_cli

    root = make_tree({"MEMORY.md": "# M\n\nm\n", "notes/MEMORY.md": "# N\n\nn\n", "notes/a.md": "# A\n\natlas\n"})
    monkeypatch.chdir(root.parent)
    code, _, err = run_cli([root.name if a == "{root}" else a for a in argv], capsys)
    assert code == 2 and hint.format(root=root.name) in err and str(root) + "`" not in err, err
    assert not (root / ".memsearch").exists() or argv[0] == "search"


def test_status_of_a_root_never_indexed_names_it_as_given(make_tree, monkeypatch, capsys):
    """`memsearch status m` said `memsearch index /tmp/.../m` (the resolved root) in its next steps."""
    from tests.conftest import run_cli

    root = make_tree({"MEMORY.md": "# M\n\nm\n", "notes/MEMORY.md": "# N\n\nn\n"})
    monkeypatch.chdir(root.parent)
    code, out, _ = run_cli(["status", root.name], capsys)
    assert code == 0 and f"(`memsearch index {root.name}` or `memsearch watch {root.name}`)" in out, out


def test_a_watch_refused_names_the_root_as_given(tmp_path, monkeypatch):
    """`memsearch watch m` of a root the service keeps named `memsearch stop /tmp/.../m`, the resolved root."""
    from memsearch.cli import watch
    from memsearch.service import process

    (tmp_path / "m").mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(process, "verified_holder", lambda *a: {"pid": 7, "purpose": "watch"})
    monkeypatch.setattr(process, "service_status", lambda *a: {"pid": 7})
    with pytest.raises(IndexLocked) as refused:
        watch._refuse_if_served(Path("m"), "m/.memsearch")
    assert commands(str(refused.value)) == [["memsearch", "stop", "m", "--db", "m/.memsearch"],
                                            ["memsearch", "watch", "m", "--db", "m/.memsearch"]]
