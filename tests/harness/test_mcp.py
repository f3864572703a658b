"""``memsearch serve`` as MCP clients see it: a real SDK client session over stdio (and one
over streamable HTTP) against a copy of examples/memory; memory files are never written."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

from memsearch.memory.contract import load_core
from memsearch.tools import TOOLS
from tests.conftest import EXAMPLES, REPO, wait_for_port

ENV = {"HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"} | {
    k: v for k, v in os.environ.items() if k.startswith(("MEMSEARCH_", "TIKTOKEN_", "HF_")) and k != "MEMSEARCH_DB"}


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    dest = tmp_path_factory.mktemp("mcp") / "memory"
    shutil.copytree(EXAMPLES, dest, ignore=shutil.ignore_patterns(".memsearch"))
    return dest


def snapshot(root) -> dict[str, str]:
    """Hash of every file of the memory (the index directory aside)."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and ".memsearch" not in p.parts}


def payload(result) -> dict:
    """A tool result's JSON: the text block and structuredContent must agree."""
    data = json.loads(result.content[0].text)
    assert result.structured_content == data
    assert result.is_error == ("error" in data)
    return data


@pytest.mark.slow
def test_stdio_session_lists_tools_and_resources_and_calls_search_and_read(root, tmp_path):
    before = snapshot(root)
    db = tmp_path / "index"
    params = StdioServerParameters(command=sys.executable, args=["-m", "memsearch", "serve", str(root), "--db", str(db)],
                                   env=ENV | {"XDG_RUNTIME_DIR": os.environ["XDG_RUNTIME_DIR"]}, cwd=str(REPO))
    # XDG_RUNTIME_DIR: this test's own (tests.conftest.private_service), never the shared /tmp/memsearch-UID where
    # another test's service may run and take over the first build, whose first answer would then be partial

    async def session() -> None:
        with anyio.fail_after(120):
            await _session()

    async def _session() -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
            init = await client.initialize()
            assert init.server_info.name == "memsearch" and init.capabilities.tools and init.capabilities.resources

            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert list(tools) == [t.name for t in TOOLS]
            for spec in TOOLS:
                assert tools[spec.name].input_schema == spec.parameters
                assert tools[spec.name].description == spec.description
                assert tools[spec.name].annotations.read_only_hint is True

            resources = {r.uri: r for r in (await client.list_resources()).resources}
            assert set(resources) == {"memory://core", "memory://file/MEMORY.md", "memory://file/notes/MEMORY.md",
                                      "memory://file/people/MEMORY.md", "memory://file/projects/MEMORY.md",
                                      "memory://file/projects/atlas/MEMORY.md"}
            assert resources["memory://file/projects/atlas/MEMORY.md"].title == "Atlas: deeper memory"
            core = await client.read_resource("memory://core")
            assert core.contents[0].text == load_core(root).render()
            atlas = await client.read_resource("memory://file/projects/atlas/MEMORY.md")
            assert atlas.contents[0].text == (root / "projects/atlas/MEMORY.md").read_text()
            with pytest.raises(MCPError, match="leaves the memory root"):
                await client.read_resource("memory://file/../outside.md")
            templates = (await client.list_resource_templates()).resource_templates
            assert [t.uri_template for t in templates] == ["memory://file/{path}"]

            found = payload(
                await client.call_tool(
                    "memory_search", {"query": "materialized view that keeps the newest grid value", "k": 3}
                )
            )
            top = found["hits"][0]
            assert top["path"] == "projects/atlas/schema.md"  # nested two levels down
            assert (
                top["memory_md"]["path"] == "projects/atlas/MEMORY.md"
                and top["memory_md"]["title"] == "Atlas: deeper memory"
            )
            assert "Detail for the Atlas pipeline" in top["memory_md"]["summary"]

            passage = payload(
                await client.call_tool(
                    "memory_read", {"path": top["path"], "start_line": top["start_line"], "end_line": top["end_line"]}
                )
            )
            lines = (root / top["path"]).read_text().splitlines(keepends=True)
            assert passage["text"] == "".join(lines[top["start_line"] - 1 : top["end_line"]])
            assert passage["total_lines"] == len(lines)

            listing = payload(await client.call_tool("memory_list", {"path": "projects"}))
            assert listing["dirs"][0]["memory_md"] == "projects/atlas/MEMORY.md"
            assert payload(await client.call_tool("memory_core", {}))["rendered"] == load_core(root).render()

            escape = await client.call_tool("memory_read", {"path": "../../etc/passwd"})
            assert escape.is_error and payload(escape)["error"]["type"] == "PathOutsideRoot"
            bad = payload(await client.call_tool("memory_search", {"query": "x", "k": "many"}))
            assert bad["error"]["type"] == "InvalidArgument" and "'k' must be an integer" in bad["error"]["message"]
            unknown = payload(await client.call_tool("memory_write", {"path": "MEMORY.md"}))
            assert unknown["error"]["type"] == "UnknownTool"

    anyio.run(session)
    assert (db / "writer.lock").exists() and not (root / ".memsearch").exists()  # the index went to --db
    assert snapshot(root) == before  # memory is never written


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_streamable_http_on_loopback(root):
    from mcp import Client

    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "memsearch", "serve", str(root), "--http", "--port", str(port), "--no-warm"],
        env=os.environ | ENV,
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        wait_for_port(port, server, "the HTTP server", timeout=30)

        async def session() -> None:
            async with Client(f"http://127.0.0.1:{port}/mcp") as client:
                assert [t.name for t in (await client.list_tools()).tools] == [t.name for t in TOOLS]
                result = await client.call_tool("memory_read", {"path": "people/MEMORY.md", "end_line": 1})
                assert not result.is_error and result.structured_content["text"] == "# People\n"

        anyio.run(session)
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_http_refuses_a_non_loopback_host(root):
    result = subprocess.run(
        [sys.executable, "-m", "memsearch", "serve", str(root), "--http", "--host", "0.0.0.0"],
        capture_output=True,
        text=True,
        env=os.environ | ENV,
        cwd=REPO,
        timeout=60,
    )
    assert result.returncode == 2 and "not a loopback address" in result.stderr and "Traceback" not in result.stderr
