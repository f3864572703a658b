"""Every MCP tool declares an ``outputSchema``, and what it returns as ``structuredContent`` validates against it:
the real ``mcp`` client library against the real ``memsearch serve --writable`` server, with results whole and
cut to a small budget. Errors reach the model in its own terms: the tools it has, never a shell command."""

from __future__ import annotations

import shutil
import sys

import anyio
import jsonschema
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from memsearch.harness.outputs import ERROR_SCHEMA
from memsearch.tools import MEMORY_TOOL, TOOLS
from tests.conftest import EXAMPLES, REPO
from tests.harness.test_mcp import ENV
from tests.harness.test_writes import anthropic_acceptable

#: (tool, arguments): every tool, with results that fit and results cut to the budget.
CALLS = [
    ("memory_core", {}),
    ("memory_list", {"path": "."}),
    ("memory_list", {"path": "projects"}),
    ("memory_read", {"path": "projects/atlas/MEMORY.md"}),
    ("memory_read", {"path": "notes/MEMORY.md", "start_line": 1, "end_line": 2}),
    ("memory_search", {"query": "materialized view that keeps the newest grid value", "k": 10}),
    ("memory_search", {"query": "zzzz qqqq", "mode": "keyword"}),
    ("memory_search", {"query": "how did the atlas migration go", "mode": "timeline", "k": 3}),
    ("memory", {"command": "view", "path": "/memories"}),
    (
        "memory",
        {
            "command": "create",
            "path": "/memories/trips/lisbon.md",
            "file_text": "# Lisbon\n\nThe tram leaves at nine.\n",
        },
    ),
    (
        "memory",
        {
            "command": "insert",
            "path": "/memories/trips/lisbon.md",
            "insert_line": 1,
            "insert_text": "".join(f"line {i} of a long insert\n" for i in range(3000)),
        },
    ),
    ("memory", {"command": "view", "path": "/memories/trips/lisbon.md"}),
    ("memory", {"command": "str_replace", "path": "/memories/trips/lisbon.md", "old_str": "nine", "new_str": "ten"}),
    ("memory", {"command": "rename", "old_path": "/memories/trips", "new_path": "/memories/travel"}),
    ("memory", {"command": "delete", "path": "/memories/travel"}),
]
#: Bad calls whose error names the model's tools (before: "check the path with `memsearch ls ROOT DIR`").
ERRORS = [
    ("memory_read", {"path": "notes/2030-01-01.md"}, "memory_list(path='notes')"),
    ("memory_search", {"query": "atlas", "scope": "nowhere"}, "memory_list(path='.')"),
    ("memory_list", {"path": "nowhere"}, "memory_list(path='.')"),
]


@pytest.mark.slow
def test_every_tool_result_validates_against_its_declared_output_schema(tmp_path):
    root = tmp_path / "memory"
    shutil.copytree(EXAMPLES, root, ignore=shutil.ignore_patterns(".memsearch"))
    params = StdioServerParameters(
        command=sys.executable,
        env=ENV,
        cwd=str(REPO),
        args=["-m", "memsearch", "serve", str(root), "--db", str(tmp_path / "index"), "--writable", "--budget", "300"],
    )
    seen: dict[str, set] = {}

    async def session() -> None:
        with anyio.fail_after(300):
            async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
                await client.initialize()
                tools = {t.name: t for t in (await client.list_tools()).tools}
                assert list(tools) == [t.name for t in TOOLS + (MEMORY_TOOL,)]
                for spec in TOOLS + (MEMORY_TOOL,):
                    anthropic_acceptable(tools[spec.name].input_schema)  # Claude Code forwards it to the API
                    declared = tools[spec.name].output_schema
                    assert declared == spec.output and declared["type"] == "object"
                    jsonschema.Draft202012Validator.check_schema(declared)
                for name, arguments in CALLS:
                    result = await client.call_tool(name, arguments)  # the client validates too
                    assert not result.is_error, (name, result.structured_content)
                    jsonschema.validate(result.structured_content, tools[name].output_schema)
                    seen.setdefault(name, set()).add(bool(result.structured_content.get("truncated")))
                for name, arguments, words in ERRORS:
                    result = await client.call_tool(name, arguments)
                    assert result.is_error
                    jsonschema.validate(result.structured_content, ERROR_SCHEMA)
                    message = result.structured_content["error"]["message"]
                    assert words in message and "memsearch ls" not in message and "`" not in message, message

    anyio.run(session)
    assert set(seen) == {t.name for t in TOOLS + (MEMORY_TOOL,)}
    assert seen["memory"] == {True, False} and seen["memory_core"] == {True}  # whole and cut results both checked
