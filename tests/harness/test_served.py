"""Tool calls, MCP resources and memory-tool writes forwarded to the process serving the index
(memsearch/harness/forward.py -> memsearch/harness/served.py): the same results and errors as in-process.

A real socket server (HashEmbedder index) in this process; tests/harness/test_mcp_thin.py runs the same
paths end to end with the real model, a real daemon and a real MCP client."""

from __future__ import annotations

import subprocess
import sys

import pytest

from memsearch import errors
from memsearch.engine.embed.embedder import HashEmbedder
from memsearch.engine.index import MemoryIndex
from memsearch.harness import forward
from memsearch.harness.bounds import MAX_WRITE_REQUEST_CHARS
from memsearch.harness.edit import edit
from memsearch.harness.mcp import memory_resources, resource_text
from memsearch.harness.served import Served
from memsearch.harness.tools import ToolBox
from memsearch.service import protocol
from memsearch.service.server import Refused, Server
from tests.service.test_service import ENV, TREE

CALLS = [
    ("memory_search", {"query": "vendor late", "k": 3}),
    ("memory_search", {"query": "kayaks", "mode": "keyword"}),
    ("memory_search", {"query": "x", "scope": "nowhere"}),
    ("memory_search", {"query": "  "}),
    ("memory_read", {"path": "notes/atlas.md", "start_line": 3, "end_line": 5}),
    ("memory_read", {"path": "../outside.md"}),
    ("memory_read", {"path": "notes/missing.md"}),
    ("memory_list", {"path": "."}),
    ("memory_list", {"path": "notes", "offset": 99}),
    ("memory_core", {}),
    ("memory_nope", {}),
    ("memory", {"command": "view", "path": "/memories"}),
]


@pytest.fixture
def served(make_tree):
    """A root, its index (HashEmbedder, synced) and a server answering the forwarded methods."""
    root = make_tree(TREE)
    index = MemoryIndex(root, embedder=HashEmbedder())
    index.sync()
    syncs = []

    def sync(paths):
        syncs.append(paths)
        return {"files": len(paths), "chunks_embedded": index.sync(only=paths).chunks_embedded}

    methods = Served(index, sync, refuse=Refused).methods()
    server = Server(index, sync=sync, methods=methods).start()
    yield root, index, server, syncs
    server.close()


def test_every_tool_call_is_answered_by_the_server_as_in_process(served):
    root, index, server, _ = served
    thin, local = ToolBox(root, model="hash-test"), ToolBox(root, index=index, sync=False)
    for name, arguments in CALLS:
        before = server.requests
        assert thin.dispatch(name, arguments) == local.dispatch(name, arguments), name
        assert server.requests == before + 1, f"{name} was not forwarded"


def test_a_forwarded_error_is_worded_for_the_model_and_raised_typed(served):
    root, *_ = served
    with pytest.raises(errors.MemoryFileNotFound) as caught:
        ToolBox(root).call("memory_read", {"path": "notes/missing.md"})
    assert "memory_list(path='notes')" in str(caught.value) and "memsearch ls" not in str(caught.value)


def test_the_memory_tool_writes_through_the_server_and_is_searchable(served):
    root, index, server, syncs = served
    thin = ToolBox(root, writable=True, model="hash-test")
    result = thin.dispatch("memory", {"command": "create", "path": "/memories/notes/otter.md",
                                      "file_text": "# Otter\n\nThe otter census is on Tuesday.\n"})
    assert result["changed"] == ["notes/otter.md"] and syncs == [["notes/otter.md"]]
    assert result["index"]["synced"] is True and result["index"]["via"] == "daemon"
    assert [h.path for h in index.search("otter census", k=1)] == ["notes/otter.md"]
    again = {"command": "create", "path": "/memories/notes/otter.md", "file_text": "# Otter\n"}
    local = ToolBox(root, index=index, sync=False, writable=True)
    assert thin.dispatch("memory", again) == local.dispatch("memory", again)
    assert thin.dispatch("memory", again)["error"]["type"] == "MemoryFileExists"


def test_a_whole_file_write_as_large_as_the_tool_takes_is_forwarded_not_redone_in_process(served, caplog):
    """Before, a write over 1 MiB was refused by the server (its request line limit): the thin client wrote it
    in-process, opening the index there (a session's MCP server went from 37 MB to 200 MB, and took 10 s)."""
    root, _, _, syncs = served
    text = "# Big\n\n" + ("capybara census " * 60 + "\n\n") * 2000  # about 2 MB
    result = ToolBox(root, writable=True, model="hash-test").dispatch(
        "memory", {"command": "create", "path": "/memories/notes/big.md", "file_text": text})
    assert result["index"]["via"] == "daemon" and syncs == [["notes/big.md"]]
    assert "refused" not in caplog.text and (root / "notes/big.md").read_text() == text
    assert protocol.MAX_LINE_BYTES >= 4 * MAX_WRITE_REQUEST_CHARS  # any write the memory tool takes, in UTF-8


def test_edit_runs_in_the_server_with_the_same_result_and_errors(served):
    root, index, _, syncs = served
    result = edit(root, "create", path="/memories/people/ann.md", file_text="# Ann\n\nAnn rows boats.\n")
    assert result.changed == ("people/ann.md",) and result.index["via"] == "daemon" and syncs == [["people/ann.md"]]
    assert [h.path for h in index.search("rows boats", k=1)] == ["people/ann.md"]
    with pytest.raises(errors.MemoryFileExists, match="already exists"):
        edit(root, "create", path="/memories/people/ann.md", file_text="# Ann\n")
    with pytest.raises(errors.EditRefused):
        edit(root, "delete", path="/memories/people/MEMORY.md")
    assert syncs == [["people/ann.md"]]


def test_resources_come_from_the_server(served):
    root, _, server, _ = served
    box = ToolBox(root)
    before = server.requests
    assert forward.resource(box, None) == memory_resources(root)
    assert forward.resource(box, "memory://core") == resource_text(root, "memory://core")
    assert server.requests == before + 2
    with pytest.raises(errors.PathOutsideRoot):
        forward.resource(box, "memory://file/../x.md")


def test_an_older_server_without_the_methods_leaves_the_call_in_process(make_tree, caplog):
    root = make_tree(TREE)
    index = MemoryIndex(root, embedder=HashEmbedder())
    index.sync()
    with Server(index):
        result = ToolBox(root).dispatch("memory_read", {"path": "people/bob.md"})
    assert result["text"] == "# Bob\n\nBob likes kayaks.\n"
    assert "UnknownMethod" in caplog.text


def test_a_write_the_server_took_but_did_not_confirm_is_not_done_twice(make_tree):
    root = make_tree(TREE)
    index = MemoryIndex(root, embedder=HashEmbedder())

    def broken(**params):
        raise RuntimeError("a bug after the write")

    with Server(index, methods={"tool": broken}):
        result = ToolBox(root, writable=True).dispatch(
            "memory", {"command": "create", "path": "/memories/notes/x.md", "file_text": "# X\n"})
    assert result["error"]["type"] == "MemoryBusy" and "view the file" in result["error"]["message"]
    assert not (root / "notes/x.md").exists()


def test_a_search_for_another_model_is_refused_so_the_client_searches_in_process(served):
    _, index, _, _ = served
    with pytest.raises(Refused) as caught:
        Served(index, None, refuse=Refused).tool("memory_search", {"query": "x"}, model="another-model")
    assert caught.value.kind == "WrongModel"
    assert "WrongModel" in forward.NOT_RUN


def test_the_thin_mcp_server_imports_nothing_heavy():
    code = ("import sys, memsearch.cli.serve, memsearch.harness.mcp, memsearch.harness.stdio, memsearch.harness.forward, "
            "memsearch.harness.tools; print([m for m in ('torch', 'lancedb', 'pyarrow', 'sentence_transformers', "
            "'tiktoken', 'numpy', 'mcp', 'pydantic', 'starlette') if m in sys.modules])")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=ENV)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
