"""One error, two readers: the same refusal names shell commands through the CLI and the model's tools through
ToolBox (and so MCP). The hint travels as data on the error (``err.hint``); each edge words it."""

from __future__ import annotations

import pytest

from memsearch.cli.app import main
from memsearch.errors import HINTS, Hint, IndexDamaged, MemoryFileNotFound
from memsearch.memory.contract import list_dir, read
from memsearch.tools import ToolBox
from tests.conftest import build

FILES = {"MEMORY.md": "# Root\n", "notes/MEMORY.md": "# Notes\n", "notes/a.md": "# A\n\nthe heron at dawn\n"}


class NoIndex:
    def __getattr__(self, name):
        raise AssertionError(f"the index was touched ({name})")


@pytest.fixture
def root(tmp_path):
    return build(tmp_path / "memory", FILES)


@pytest.mark.parametrize(
    "call, tool, arguments, shell, model",
    [
        (
            lambda r: read(r, "notes/zz.md"),
            "memory_read",
            {"path": "notes/zz.md"},
            "`memsearch ls ROOT notes`",
            "memory_list(path='notes')",
        ),
        (  # a folder read as a file: it is a folder, list it (before: "not a Markdown file")
            lambda r: read(r, "notes"),
            "memory_read",
            {"path": "notes"},
            "it is a directory: list it with `memsearch ls ROOT notes`",
            "it is a directory: list it with memory_list(path='notes')",
        ),
        (
            lambda r: read(r, "."),
            "memory_read",
            {"path": "."},
            "`memsearch ls ROOT .`",
            "memory_list(path='.')",
        ),
        (
            lambda r: list_dir(r, "nowhere"),
            "memory_list",
            {"path": "nowhere"},
            "`memsearch ls ROOT .`",
            "memory_list(path='.')",
        ),
    ],
)
def test_the_library_names_commands_and_the_tools_name_tools(root, call, tool, arguments, shell, model):
    with pytest.raises(MemoryFileNotFound) as raised:
        call(root)
    assert raised.value.hint is not None and shell in str(raised.value) and "memory_list" not in str(raised.value)
    error = ToolBox(root, index=NoIndex()).dispatch(tool, arguments)["error"]
    assert model in error["message"] and "memsearch" not in error["message"] and "`" not in error["message"]
    assert error["message"] == raised.value.render("tools")


@pytest.mark.parametrize("path", ["notes/zz.md", "notes", "notes/"])
def test_the_cli_prints_the_commands(root, capsys, path):
    try:
        code = main(["read", str(root), path, "--local"])
    except SystemExit as exc:
        code = exc.code
    err = capsys.readouterr().err
    assert code != 0 and f"`memsearch ls {root} notes`" in err and "memory_list" not in err  # the root given
    assert "Markdown" not in err


def test_a_folder_link_or_a_plain_file_is_still_refused_as_not_markdown(root):
    (root / "data.txt").write_text("not memory\n")
    (root / "elsewhere").symlink_to(root / "notes", target_is_directory=True)
    for path in ("data.txt", "elsewhere"):
        error = ToolBox(root, index=NoIndex()).dispatch("memory_read", {"path": path})["error"]
        assert "not a Markdown" in error["message"] and "memory_list" not in error["message"], path


def test_every_hint_has_both_wordings_and_the_model_s_names_no_shell_step_it_could_take():
    for action, words in HINTS.items():
        assert set(words) == {"cli", "tools"}, action
        text = Hint(action, "notes").render("tools")
        assert "memsearch ls" not in text
    damaged = IndexDamaged("the index is damaged", hint=Hint("rebuild"))
    assert "--rebuild" in str(damaged) and "memory_read" in damaged.render("tools")
    assert Hint("list", "x" * 500).path == "."  # a huge path is never echoed into a hint


def test_a_hint_crosses_the_daemon_socket_as_data(root):
    """A daemon's error keeps its hint as data (real Server, real Unix socket), so a model's client words it for the
    model and the CLI's for the shell, as if the call had run in-process."""
    from memsearch.engine.embed.embedder import HashEmbedder
    from memsearch.engine.index import MemoryIndex
    from memsearch.service.client import Client
    from memsearch.service.server import Server

    index = MemoryIndex(root, embedder=HashEmbedder())
    index.sync()
    server = Server(index).start()
    try:
        with pytest.raises(MemoryFileNotFound) as remote:
            Client(root).call("read", path="notes/zz.md")
    finally:
        server.close()
    with pytest.raises(MemoryFileNotFound) as here:
        read(root, "notes/zz.md")
    assert remote.value.hint is not None and str(remote.value) == str(here.value)
    assert remote.value.render("tools") == here.value.render("tools") and "memory_list(path='notes')" in str(
        remote.value.render("tools")
    )


def test_a_busy_index_names_the_shell_steps_to_the_shell_only(root, tmp_path):
    """A real second process holds the writer lock: the shell is told how to wait or stop it, a model is not."""
    import subprocess
    import sys

    from memsearch.engine.storage.lock import WriterLock
    from memsearch.errors import IndexLocked
    from tests.conftest import REPO

    db = tmp_path / "db"
    db.mkdir()
    code = ("import sys; from memsearch.engine.storage.lock import WriterLock; "
            f"lock = WriterLock({str(db)!r}).acquire(timeout=0); print('held', flush=True); sys.stdin.read()")
    holder = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                              cwd=REPO)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(IndexLocked) as busy:
            WriterLock(db).acquire(timeout=0)
    finally:
        holder.communicate("", timeout=30)
    shell, model = str(busy.value), busy.value.render("tools")
    assert f"process {holder.pid}" in shell and "`memsearch stop ROOT`" in shell and "--wait" in shell
    assert f"process {holder.pid}" in model and "`" not in model and "--wait" not in model and "memory_read" in model
