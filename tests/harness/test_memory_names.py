"""Names through the real ``memsearch serve --writable`` server and the ``mcp`` client, with the default model:
a file named in one Unicode form (NFD, as macOS writes it) is found by memory_search and opened (memory tool
and memory_read) by the model typing the other form (NFC); a look-alike is never created; a name holding
control characters shows escaped in ``view`` and opens in that form (memory/names.py)."""

from __future__ import annotations

import json
import sys

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from tests.conftest import REPO, build
from tests.harness.test_mcp import ENV

NFC, NFD = "caf\u00e9", "cafe\u0301"
BASE = {"MEMORY.md": "# Memory\n\nCore.\n", "notes/MEMORY.md": "# Notes\n\nPlaces and people.\n"}


@pytest.mark.slow
def test_lookalike_and_odd_names_end_to_end(tmp_path):
    root = build(tmp_path / "memory", BASE)
    (root / "notes" / "odd\n1K\tforged.md").write_text("# Odd\n\nThe heron nests by the mill pond.\n")
    params = StdioServerParameters(command=sys.executable, env=ENV, cwd=str(REPO),
                                   args=["-m", "memsearch", "serve", str(root), "--db", str(tmp_path / "index"), "--writable"])
    seen: dict[str, object] = {}

    async def call(client, name: str, arguments: dict) -> dict:
        result = await client.call_tool(name, arguments)
        return json.loads(result.content[0].text)

    async def session() -> None:
        with anyio.fail_after(300):
            async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
                await client.initialize()
                made = await call(client, "memory", {"command": "create", "path": f"/memories/notes/{NFD}.md",
                                                     "file_text": "# Corner cafe\n\nThe corner cafe roasts its own beans.\n"})
                assert "error" not in made, made
                hits = (await call(client, "memory_search", {"query": "who roasts their own coffee beans", "k": 3}))["hits"]
                seen["hit"] = hits[0]["path"]
                seen["read"] = await call(client, "memory_read", {"path": f"notes/{NFC}.md"})
                seen["view"] = await call(client, "memory", {"command": "view", "path": f"/memories/notes/{NFC}.md"})
                seen["twin"] = await call(client, "memory", {"command": "create", "path": f"/memories/notes/{NFC}.md",
                                                             "file_text": "# twin\n"})
                seen["listing"] = await call(client, "memory", {"command": "view", "path": "/memories/notes"})
                seen["odd"] = await call(client, "memory", {"command": "view", "path": "/memories/notes/odd\\x0a1K\\x09forged.md"})

    anyio.run(session)
    assert seen["hit"] == f"notes/{NFD}.md"  # the search names the file as it is on disk ...
    assert "roasts its own beans" in seen["view"]["result"]  # ... and the form the model types opens it
    assert seen["read"]["path"] == f"notes/{NFD}.md" and "roasts its own beans" in seen["read"]["text"]
    assert seen["twin"]["error"]["type"] == "MemoryFileExists"
    assert f"a file named '{NFD}.md' already exists in /memories/notes" in seen["twin"]["error"]["message"]
    assert sorted(p.name for p in (root / "notes").iterdir()) == sorted(["MEMORY.md", f"{NFD}.md", "odd\n1K\tforged.md"])
    rows = seen["listing"]["result"].split("\n")[2:]
    assert [row.split("\t")[1] for row in rows] == ["/memories/notes/MEMORY.md", f"/memories/notes/{NFD}.md",
                                                    "/memories/notes/odd\\x0a1K\\x09forged.md"]
    assert "The heron nests" in seen["odd"]["result"]
