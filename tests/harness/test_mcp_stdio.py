"""memsearch/harness/stdio.py (the stdio MCP server without the SDK) answers every request as the SDK's server
(:func:`memsearch.harness.mcp.build_server` on the SDK's stdio transport) does: the same JSON, request by request.
Real clients against it: tests/harness/test_mcp.py and tests/harness/test_mcp_thin.py (the ``mcp`` SDK's client)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time

import pytest

from tests.conftest import EXAMPLES, REPO

ENV = dict(os.environ, HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false", MEMSEARCH_AUTOSTART="0")
SDK_SERVER = """
import io, sys, anyio
from mcp.server.stdio import stdio_server
from memsearch.harness.bounds import screen_message
from memsearch.harness.mcp import build_server
from memsearch.harness.tools import ToolBox
box = ToolBox(sys.argv[1], daemon=False, writable=True)
server = build_server(box)
class Screened:  # each line screened, as memsearch's stdio server does
    def __init__(self):
        self.lines = anyio.wrap_file(io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace"))
    def __aiter__(self):
        return self.screened()
    async def screened(self):
        async for line in self.lines:
            if screen_message(line):
                yield screen_message(line)
async def main():
    async with stdio_server(stdin=Screened()) as (read, write):
        await server.run(read, write, server.create_initialization_options())
anyio.run(main)
"""


def _init(ident, version):
    return {"jsonrpc": "2.0", "id": ident, "method": "initialize",
            "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}


def _call(ident, name, arguments=None):
    params = {"name": name} | ({"arguments": arguments} if arguments is not None else {})
    return {"jsonrpc": "2.0", "id": ident, "method": "tools/call", "params": params}


REQUESTS = [
    _init(1, "2025-06-18"),
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    {"jsonrpc": "2.0", "id": 3, "method": "resources/list"},
    {"jsonrpc": "2.0", "id": 4, "method": "resources/templates/list"},
    {"jsonrpc": "2.0", "id": 5, "method": "resources/read", "params": {"uri": "memory://core"}},
    {"jsonrpc": "2.0", "id": 6, "method": "resources/read", "params": {"uri": "memory://file/projects/MEMORY.md"}},
    {"jsonrpc": "2.0", "id": 7, "method": "resources/read", "params": {"uri": "memory://file/../x.md"}},
    {"jsonrpc": "2.0", "id": "eight", "method": "resources/read", "params": {"uri": "memory://nothing"}},
    _call(9, "memory_read", {"path": "projects/atlas/MEMORY.md", "start_line": 2, "end_line": 6}),
    _call(10, "memory_read", {"path": "nope.md"}),
    _call(11, "memory_list", {"path": "projects"}),
    _call(12, "memory_core"),
    _call(13, "memory_search", {"query": "x", "k": "many"}),
    _call(14, "memory_nope", {}),
    _call(15, "memory", {"command": "view", "path": "/memories/projects"}),
    _call(16, "memory", {"command": "delete", "path": "/memories/projects/MEMORY.md"}),
    {"jsonrpc": "2.0", "id": 17, "method": "ping"},
    {"jsonrpc": "2.0", "id": 18, "method": "prompts/list"},
    _init(19, "1999-01-01"),
    _call(20, "memory_read", {"path": "a" * 5, "nested": json.loads("[" * 40 + "]" * 40)}),
]


def _exchange(command: list[str], root, requests: list[dict] | None = None) -> list[dict]:
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            env=ENV, cwd=str(REPO))
    replies = []
    try:
        for request in REQUESTS if requests is None else requests:
            proc.stdin.write((json.dumps(request) + "\n").encode())
            proc.stdin.flush()
            if "id" in request:
                replies.append(json.loads(proc.stdout.readline()))
        proc.stdin.write(b"this is not json\n")
        proc.stdin.write((json.dumps({"jsonrpc": "2.0", "id": 99, "method": "ping"}) + "\n").encode())
        proc.stdin.flush()
        reply = json.loads(proc.stdout.readline())
        if reply["id"] is None:  # ours answers the bad line with JSON-RPC's parse error; the SDK's stdio, nothing
            assert reply["error"]["code"] == -32700, reply
            reply = json.loads(proc.stdout.readline())
        replies.append(reply)  # still serving after a bad line
    finally:
        proc.stdin.close()
        assert proc.wait(timeout=60) == 0
    return replies


@pytest.mark.slow
def test_each_reply_is_the_sdk_servers(tmp_path):
    root = tmp_path / "memory"
    shutil.copytree(EXAMPLES, root, ignore=shutil.ignore_patterns(".memsearch"))
    ours = _exchange([sys.executable, "-m", "memsearch", "serve", str(root), "--no-warm", "--writable"], root)
    sdk = _exchange([sys.executable, "-c", SDK_SERVER, str(root)], root)
    assert len(ours) == len(sdk) == len([r for r in REQUESTS if "id" in r]) + 1
    for mine, theirs in zip(ours, sdk):
        assert mine == theirs
    errors = {r["id"]: r for r in ours if "error" in r or r.get("result", {}).get("isError")}
    assert set(errors) == {7, "eight", 10, 13, 14, 16, 18, 20}


@pytest.mark.slow
def test_a_request_holding_a_lone_surrogate_is_answered(tmp_path):
    """JSON's unpaired '\\ud800' escape parses to a lone surrogate, which UTF-8 cannot hold; a reply that echoes it
    (a search's query, a resource's uri) goes back escaped as it came. Before: the reply failed to encode in its worker
    and was dropped, so the client waited for it forever."""
    import select
    import time

    root = tmp_path / "memory"
    shutil.copytree(EXAMPLES, root, ignore=shutil.ignore_patterns(".memsearch"))
    requests = [_init(1, "2025-06-18"), {"jsonrpc": "2.0", "method": "notifications/initialized"},
                _call(2, "memory_search", {"query": "atlas \ud800", "k": 1, "mode": "keyword"}),
                {"jsonrpc": "2.0", "id": 3, "method": "resources/read", "params": {"uri": "memory://file/\udcff.md"}},
                {"jsonrpc": "2.0", "id": 4, "method": "ping"}]
    proc = subprocess.Popen([sys.executable, "-m", "memsearch", "serve", str(root), "--no-warm"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=ENV, cwd=str(REPO))
    replies, deadline = {}, time.monotonic() + 60
    try:
        proc.stdin.write("".join(json.dumps(r) + "\n" for r in requests).encode())  # ensure_ascii: '\ud800' as sent
        proc.stdin.flush()
        while len(replies) < 4 and time.monotonic() < deadline:
            if select.select([proc.stdout], [], [], 1)[0]:
                line = proc.stdout.readline()
                if not line:
                    break
                reply = json.loads(line)
                replies[reply["id"]] = reply
    finally:
        proc.stdin.close()
        assert proc.wait(timeout=60) == 0
    assert sorted(replies) == [1, 2, 3, 4], replies.keys()
    found = json.loads(replies[2]["result"]["content"][0]["text"])
    assert found["query"] == "atlas \ud800" and found["hits"][0]["path"].startswith("projects/atlas")
    assert "not valid UTF-8" in replies[3]["error"]["message"]


def _served(root, lines: list[str]) -> dict:
    """The replies of memsearch's stdio server, run in this process on ``lines``, by id (``None``: the id-less)."""
    import io

    from memsearch.harness.stdio import serve
    from memsearch.harness.tools import ToolBox

    out = io.BytesIO()
    serve(ToolBox(root, daemon=False, sync=False), warm=False, stdin=io.BytesIO("".join(lines).encode()), stdout=out)
    replies: dict = {}
    for line in out.getvalue().splitlines():
        reply = json.loads(line)
        replies.setdefault(reply["id"], []).append(reply)
    return replies


def test_a_number_too_long_to_convert_is_answered_and_a_line_that_is_not_json_too(tmp_path):
    """An integer of over 4,300 digits made json.loads raise, and the server dropped the request ('not a JSON-RPC
    message (ignored)'): the client waited forever. Now it gets the argument error ToolBox gives for the same call, with
    its id; a line that is no JSON gets the parse error (-32700, id null); a request whose id is such a number, an
    invalid request (-32600, id null)."""
    from memsearch.harness.tools import ToolBox

    root = tmp_path / "memory"
    shutil.copytree(EXAMPLES, root, ignore=shutil.ignore_patterns(".memsearch"))
    huge = "1" + "0" * 5000
    lines = [json.dumps(_init(1, "2025-06-18")) + "\n",
             '{"jsonrpc":"2.0","id":18,"method":"tools/call","params":{"name":"memory_list","arguments":{"offset":%s}}}\n'
             % huge,
             "this is not json\n",
             '{"jsonrpc":"2.0","id":%s,"method":"ping"}\n' % huge,
             json.dumps({"jsonrpc": "2.0", "id": 19, "method": "ping"}) + "\n"]
    replies = _served(root, lines)
    expected = ToolBox(root, daemon=False, sync=False).dispatch("memory_list", {"offset": 10**5000})
    assert expected["error"]["type"] == "InvalidArgument" and "out of range" in expected["error"]["message"]
    [listed] = replies[18]
    assert listed["result"]["isError"] and listed["result"]["structuredContent"] == expected
    assert sorted(r["error"]["code"] for r in replies[None]) == [-32700, -32600], replies[None]
    assert replies[19] == [{"jsonrpc": "2.0", "id": 19, "result": {}}]  # still serving


def test_over_http_a_number_too_long_to_convert_reaches_the_server_cut_to_its_stand_in():
    """The streamable HTTP transport parses with the SDK (pydantic), which refuses a number of over 4,300 digits as
    a parse error: the body goes on with it cut (bounds.BoundedBodies), so the call gets the same argument error."""
    import asyncio

    from mcp.types import JSONRPCRequest

    from memsearch.harness.bounds import BoundedBodies

    body = ('{"jsonrpc":"2.0","id":18,"method":"tools/call","params":{"name":"memory_list","arguments":{"offset":1%s}}}'
            % ("0" * 5000)).encode()
    seen = []

    async def app(scope, receive, send):
        seen.append(((await receive())["body"], dict(scope["headers"])))

    async def receive():
        return {"type": "http.request", "body": body, "more_body": False}

    scope = {"type": "http", "method": "POST", "headers": [(b"content-length", str(len(body)).encode())]}
    asyncio.run(BoundedBodies(app)(scope, receive, lambda message: None))
    [(passed, headers)] = seen
    message = JSONRPCRequest.model_validate_json(passed)  # as the SDK reads the body: no "number out of range"
    assert message.id == 18 and message.params["arguments"]["offset"] > 10**15
    assert headers[b"content-length"] == str(len(passed)).encode()


NOT_OBJECTS = [("memory_read", json.dumps({"path": "projects/MEMORY.md"})),  # JSON text, as OpenAI sends arguments
               ("memory_read", ["projects/MEMORY.md"]), ("memory_list", 3), ("memory_core", "not json"),
               ("memory_nope", "{}")]


def _http_replies(url: str, requests: list[dict]) -> list[dict]:
    """Each request POSTed in one MCP session over streamable HTTP: the JSON-RPC replies (from the SSE events)."""
    import urllib.request

    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    replies = []
    for request in requests:
        post = urllib.request.Request(url, data=json.dumps(request).encode(), headers=headers, method="POST")
        with urllib.request.urlopen(post, timeout=60) as answer:
            headers.setdefault("mcp-session-id", answer.headers.get("mcp-session-id"))
            text = answer.read().decode()
        replies += [json.loads(line[5:]) for line in text.splitlines() if line.startswith("data:")]
    return replies


@pytest.mark.slow
def test_arguments_that_are_no_object_get_the_tool_s_answer_over_http_as_over_stdio(tmp_path):
    """Before: over streamable HTTP the SDK refused a call whose ``arguments`` were JSON text, an array or a number
    with a bare "Invalid request parameters" (``data: ""``): nothing the model could fix its call by, where the stdio
    server gave the tool's own argument error (and ran a call whose arguments were JSON text). Real servers."""
    from tests.support.tenants import free_port

    root = tmp_path / "memory"
    shutil.copytree(EXAMPLES, root, ignore=shutil.ignore_patterns(".memsearch"))
    calls = [_call(100 + i, name, arguments) for i, (name, arguments) in enumerate(NOT_OBJECTS)]
    stdio = [sys.executable, "-m", "memsearch", "serve", str(root)]
    over_stdio = {r["id"]: r for r in _exchange(stdio, root, REQUESTS[:2] + calls)}
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "memsearch", "serve", str(root), "--http", "--port", str(port),
                               "--no-warm"], env=ENV, cwd=str(REPO), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while True:  # until it listens
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert server.poll() is None, "memsearch serve --http exited"
                time.sleep(0.1)
        replies = _http_replies(f"http://127.0.0.1:{port}/mcp", [_init(1, "2025-06-18"), *calls])
        over_http = {r["id"]: r for r in replies}
    finally:
        server.terminate()
        server.wait(timeout=30)
    for request in calls:
        ident = request["id"]
        assert "error" not in over_http[ident], over_http[ident]  # a tool result, never "Invalid request parameters"
        assert over_http[ident]["result"]["structuredContent"] == over_stdio[ident]["result"]["structuredContent"]
    assert "text" in over_http[100]["result"]["structuredContent"]  # JSON text arguments: the call runs
    assert over_http[101]["result"]["structuredContent"]["error"]["message"] == \
        "memory_read: arguments must be a JSON object, got array"
