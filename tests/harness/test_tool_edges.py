"""The tools' edges as a model meets them (the audit of the harness tools): an unknown tool's error names the tools
this toolbox offers, a call with no arguments at all gets the memory tool's error, memory_read's line errors name
start_line and end_line, a search answered while the memory is still being indexed says so in its ``note`` (kept
when the result is cut), and the ``anthropic`` SDK's memory tool answers a bad call with memsearch's error, not
a Python exception. No model loads here: the search's hits come from a stub of the router."""

from __future__ import annotations

import shutil

import pytest

from memsearch.service import route
from memsearch.tools import ToolBox
from tests.conftest import EXAMPLES

PARTIAL = "partial results: the memory is still being indexed, so the hits marked partial were found by their words"


class NoIndex:
    """An index that fails the test when touched: refused calls never load the model."""

    def __getattr__(self, name):
        raise AssertionError(f"the index was touched ({name}) by a call that should have been refused")


@pytest.fixture
def root(tmp_path):
    dest = tmp_path / "memory"
    shutil.copytree(EXAMPLES, dest, ignore=shutil.ignore_patterns(".memsearch"))
    return dest


def _error(result: dict) -> tuple[str, str]:
    assert set(result) == {"error"}, result
    return result["error"]["type"], result["error"]["message"]


def test_an_unknown_tool_names_the_tools_this_toolbox_offers(root):
    writable = ToolBox(root, index=NoIndex(), writable=True, sync=False)
    kind, message = _error(writable.dispatch("memory_write", {"path": "/memories/x.md"}))
    assert kind == "UnknownTool" and message.endswith("memory_search, memory_read, memory_list, memory_core, memory")
    kind, message = _error(ToolBox(root, index=NoIndex()).dispatch("memory_write", {}))
    assert message.endswith("memory_search, memory_read, memory_list, memory_core")


@pytest.mark.parametrize("arguments", [None, "", "  "])
def test_the_memory_tool_without_arguments_asks_for_a_command(root, arguments):
    box = ToolBox(root, index=NoIndex(), writable=True, sync=False)
    kind, message = _error(box.dispatch("memory", arguments))  # was AttributeError: 'NoneType' has no 'get'
    assert kind == "InvalidArgument" and message.startswith("memory: missing 'command': one of view, create")


def test_memory_read_line_errors_name_its_arguments(root):
    box = ToolBox(root, index=NoIndex())
    total = len((root / "projects/atlas.md").read_text().splitlines())
    _, message = _error(box.dispatch("memory_read", {"path": "projects/atlas.md", "start_line": 9, "end_line": 3}))
    assert message.startswith("memory_read: end_line 3 is before start_line 9") and "start_line <= end_line" in message
    _, message = _error(box.dispatch("memory_read", {"path": "projects/atlas.md", "start_line": 5000}))
    assert message == (f"memory_read: 'projects/atlas.md' has {total} lines; line 5000 is past the end: "
                       f"give a start_line from 1 to {total}")


def _hit(i: int, partial: bool) -> dict:
    return {"path": f"notes/n{i}.md", "start_line": 1, "end_line": 9, "heading": "H", "date": None,
            "score": 1.0 - i / 10, "text": "word " * 300, "stale": False, "partial": partial,
            "memory_md": {"path": "notes/MEMORY.md", "title": "Notes", "summary": "Dated notes."}}


@pytest.mark.parametrize("partial", [True, False])
def test_a_search_answered_while_indexing_says_it_is_partial_even_when_cut(root, monkeypatch, partial):
    monkeypatch.setattr(route, "search", lambda *a, **kw: [_hit(i, partial and i == 0) for i in range(5)])
    result = ToolBox(root, index=NoIndex(), sync=False, budget=400).call("memory_search", {"query": "deploy"})
    assert result["hits"][0]["partial"] is partial
    assert "note" in result and "budget" in result["note"]  # cut: five long snippets are over the budget
    assert result["note"].startswith(PARTIAL) is partial
    whole = ToolBox(root, index=NoIndex(), sync=False, budget=100_000).call("memory_search", {"query": "deploy"})
    assert whole.get("note", "").startswith(PARTIAL) is partial and (partial or "note" not in whole)


def test_the_sdk_memory_tool_answers_a_bad_call_with_memsearchs_error(root):
    pytest.importorskip("anthropic")
    from anthropic.lib.tools import ToolError

    from memsearch.harness.anthropic_sdk import MemsearchMemoryTool

    tool = MemsearchMemoryTool(box=ToolBox(root, index=NoIndex(), writable=True, sync=False))
    for given, said in [({"command": "forget", "path": "/memories/x.md"}, "unknown memory command 'forget'"),
                        ({}, "memory: missing 'command'"),
                        ({"command": "view"}, "view needs 'path'")]:
        with pytest.raises(ToolError) as caught:  # was NotImplementedError('Unknown command: forget') for "forget"
            tool.call(given)
        assert said in str(caught.value.content)
    assert "Here's the content of /memories/MEMORY.md" in tool.call({"command": "view", "path": "/memories/MEMORY.md"})


def test_no_hits_under_a_date_filter_suggests_widening_it(root, monkeypatch):
    monkeypatch.setattr(route, "search", lambda *a, **kw: [])
    box = ToolBox(root, index=NoIndex(), sync=False)
    dated = box.call("memory_search", {"query": "deploy", "since": "2026-08-01", "until": "2026-08-01"})
    assert dated["hits"] == [] and "a wider since/until" in dated["note"]
    assert "since/until" not in box.call("memory_search", {"query": "deploy"})["note"]


def test_a_bug_reaches_the_model_as_an_error_saying_what_to_do(root, monkeypatch, caplog):
    from memsearch.harness.mcp import run_tool

    def broken(*args, **kwargs):
        raise RuntimeError(f"boom in {root}/projects")

    monkeypatch.setattr(route, "search", broken)
    result = run_tool(ToolBox(root, index=NoIndex(), sync=False), "memory_search", {"query": "deploy"})
    kind, message = _error(result)
    assert kind == "RuntimeError" and message.startswith("memsearch failed on this call (RuntimeError: boom in projects)")
    assert "not of the call: call it once more, or go on with memory_list and memory_read" in message
    assert str(root) not in message and "Traceback" not in message
    assert "memsearch tool memory_search failed" in caplog.text  # the operator's log has the traceback


def test_a_number_too_long_to_convert_gets_the_argument_error_as_text_or_object(root):
    """An integer of over 4,300 digits is valid JSON that Python's json.loads cannot convert. Before: its JSON text was
    'not valid JSON' (and a stdio MCP request holding it got no reply at all: test_mcp_stdio.py)."""
    box = ToolBox(root, index=NoIndex(), sync=False)
    digits = "1" + "0" * 5000
    as_text = box.dispatch("memory_list", '{"offset": %s}' % digits)
    assert as_text == box.dispatch("memory_list", {"offset": 10**5000}) == box.dispatch("memory_list", {"offset": 10**20})
    kind, message = _error(as_text)
    assert kind == "InvalidArgument" and "a number argument is out of range" in message
    kind, message = _error(box.dispatch("memory_read", '{"path": "notes/MEMORY.md", "start_line": -%s}' % digits))
    assert "out of range" in message


def test_a_hidden_scope_is_refused_as_memory_list_refuses_it(root):
    """Before: memory_search(scope='.memsearch') answered "no hits: try other words", while memory_list('.memsearch')
    said it is a hidden directory: now one rule (memory/tree.py refuse_other_dir), one sentence."""
    (root / ".memsearch").mkdir()
    box = ToolBox(root, index=NoIndex(), sync=False)
    for scope in (".memsearch", "skills"):
        kind, searched = _error(box.dispatch("memory_search", {"query": "atlas", "scope": scope}))
        listed = _error(box.dispatch("memory_list", {"path": scope}))[1]
        assert kind == "NotMemoryFile" and searched == f"memory_search: scope {listed}", (searched, listed)


def test_a_root_removed_while_served_is_named_and_the_user_told(root):
    """Before: "memory root 'ROOT' does not exist: pass the path of a memory directory": a placeholder for the path,
    and advice a model cannot act on. A shell or Python caller still gets the advice to pass another path."""
    from memsearch.errors import NotAMemoryRoot
    from memsearch.harness.mcp import read_resource_text

    box = ToolBox(root, index=NoIndex(), sync=False, writable=True, daemon=False)
    shutil.rmtree(root)
    calls = [("memory_list", {}), ("memory_read", {"path": "projects/atlas.md"}), ("memory_core", {}),
             ("memory", {"command": "view", "path": "/memories"})]
    for name, arguments in calls:
        kind, message = _error(box.dispatch(name, arguments))
        assert kind == "NotAMemoryRoot" and f"memory root {str(root)!r} does not exist" in message, (name, message)
        assert "removed or moved" in message and "restores" in message and "'ROOT'" not in message, (name, message)
    with pytest.raises(NotAMemoryRoot) as raised:
        read_resource_text(box, "memory://core")  # the MCP resource read words it for the model
    assert "removed or moved" in raised.value.render("tools")
    assert str(raised.value).endswith("does not exist: pass the path of a memory directory")  # the CLI's words
