"""Request bounds of the tools and the MCP server: oversized or deeply nested calls get an error,
and no result or error exceeds the token budget or echoes a huge input back."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys

import pytest

from memsearch.engine.embed.embedder import HashEmbedder
from memsearch.engine.index import MemoryIndex
from memsearch.tools import ToolBox
from tests.conftest import EXAMPLES, REPO, build, wait_for_port


def _nested(depth: int):
    value: object = "x"
    for _ in range(depth):
        value = {"a": value}
    return value


def _nested_list_text(depth: int) -> str:
    return "[" * depth + "]" * depth


#: (tool, arguments) a hostile or broken client may send.
REQUESTS = {
    "100,000-deep object": ("memory_read", {"path": _nested(100_000)}),
    "100,000-deep JSON text": ("memory_read", '{"path": ' + _nested_list_text(100_000) + "}"),
    "17-deep object": ("memory_list", {"path": _nested(17)}),
    "1.2 MB query": ("memory_search", {"query": "heron " * 200_000}),
    "1 MB path": ("memory_read", {"path": "a/" * 500_000}),
    "10,000 unknown keys": ("memory_search", {"query": "x"} | {f"k{i}": i for i in range(10_000)}),
    "100,000-character scope": ("memory_search", {"query": "x", "scope": "s" * 100_000}),
    "1 MB JSON text": ("memory_core", json.dumps({"pad": "p" * 1_000_000})),
    "1 MB tool name": ("t" * 1_000_000, {}),
    "huge list": ("memory_read", {"path": ["p"] * 100_000}),
    "huge integer": ("memory_read", {"path": "notes/a.md", "start_line": 10 ** 5000}),
    "invalid UTF-8 JSON bytes": ("memory_read", b'{"path": "\xff\xfe"}'),
    "lone surrogate path": ("memory_read", {"path": "notes/\ud800.md"}),
    "9,999-character query": ("memory_search", {"query": "heron " * 1666}),
}


@pytest.fixture(scope="module")
def toolbox(tmp_path_factory):
    root = build(tmp_path_factory.mktemp("bounds") / "memory", {
        "MEMORY.md": "# Root\n", "notes/MEMORY.md": "# Notes\n", "notes/a.md": "# A\nthe heron at dawn\n" * 50})
    index = MemoryIndex(root, db=tmp_path_factory.mktemp("db"), embedder=HashEmbedder())
    index.sync()
    return ToolBox(root, index=index, sync=False)


@pytest.mark.parametrize("case", list(REQUESTS))
def test_oversized_and_deep_requests(toolbox, case):
    name, arguments = REQUESTS[case]
    result = toolbox.dispatch(name, arguments)
    text = json.dumps(result, ensure_ascii=False)
    assert toolbox.tokens(result) <= toolbox.budget
    assert len(text) < 20_000, len(text)
    assert str(toolbox.root) not in text
    if case == "9,999-character query":
        assert "hits" in result  # under the limit: answered
    else:
        assert "error" in result and result["error"]["type"] in ("InvalidArgument", "UnknownTool", "PathOutsideRoot"), result


@pytest.mark.slow
def test_mcp_stdio_answers_deep_and_huge_requests(tmp_path):
    env = {"HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", "PATH": os.environ.get("PATH", "")}
    env |= {k: v for k, v in os.environ.items() if k.startswith(("TIKTOKEN_", "HF_", "XDG_RUNTIME_DIR"))}
    # XDG_RUNTIME_DIR: the service this session may start is the test's own, stopped at teardown (not left running)
    proc = subprocess.Popen([sys.executable, "-m", "memsearch", "serve", str(EXAMPLES), "--db", str(tmp_path / "db")],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=str(REPO), env=env)

    def send(text: str) -> None:
        proc.stdin.write(text.encode() + b"\n")
        proc.stdin.flush()

    def reply(timeout: float = 60.0) -> dict:
        ready, _, _ = select.select([proc.stdout], [], [], timeout)
        assert ready, "no reply"
        return json.loads(proc.stdout.readline())

    try:
        send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}))
        assert reply()["id"] == 1
        send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        calls = [
            '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"memory_read","arguments":{"path":'
            + _nested_list_text(100_000) + "}}}",
            json.dumps({"jsonrpc": "2.0", "id": "three", "method": "tools/call",
                        "params": {"name": "memory_search", "arguments": {"query": "q" * 1_200_000}}}),
            json.dumps({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
                        "params": {"name": "memory_search", "arguments": {"query": "x"} | {f"k{i}": i for i in range(10_000)}}}),
        ]
        for call in calls:
            send(call)
            answer = reply()
            assert (
                answer["id"] == json.loads(call[: call.index(',"method"')] + "}")["id"]
                if call.startswith('{"jsonrpc":"2.0","id":2')
                else True
            )
            body = json.dumps(answer)
            assert answer["result"]["isError"] is True and len(body) < 10_000, body[:300]
        send(json.dumps({"jsonrpc": "2.0", "id": 5, "method": "tools/list"}))
        assert reply()["id"] == 5  # still serving
    finally:
        proc.kill()
        proc.wait(10)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _Reply:
    def __init__(self, status: int, headers, text: str) -> None:
        self.status_code, self.headers, self.text = status, headers, text

    def json(self) -> dict:
        return json.loads(self.text)


def _post(port: int, headers: dict, body, *, chunked: bool = False) -> _Reply:
    """One POST over a fresh loopback connection (stdlib ``http.client``: chunked when asked)."""
    import http.client

    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        data = json.dumps(body).encode() if isinstance(body, dict) else body
        if chunked:
            whole = data
            data = (whole[start : start + (1 << 20)] for start in range(0, len(whole), 1 << 20))
        connection.request("POST", "/mcp", body=data, headers=headers, encode_chunked=chunked)
        response = connection.getresponse()
        return _Reply(response.status, {k.lower(): v for k, v in response.getheaders()}, response.read().decode())
    finally:
        connection.close()


def _rpc(response: _Reply) -> dict:
    """The JSON-RPC message of an HTTP reply: a JSON body, or the data of an SSE event."""
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        data = [line[5:].strip() for line in response.text.splitlines() if line.startswith("data:")]
        return json.loads([d for d in data if d][-1])
    return response.json()


@pytest.mark.slow
def test_mcp_http_answers_deep_and_huge_requests(tmp_path):
    """``serve --http``: a 100,000-deep call, a 20 MB body (declared or chunked) and a deep notification
    each get a short error (a tool error with the same id, or 413/400), and the server keeps serving."""
    env = {"HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", "PATH": os.environ.get("PATH", "")}
    env |= {k: v for k, v in os.environ.items() if k.startswith(("TIKTOKEN_", "HF_", "XDG_RUNTIME_DIR"))}
    port = _free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "memsearch",
            "serve",
            str(EXAMPLES),
            "--db",
            str(tmp_path / "db"),
            "--http",
            "--port",
            str(port),
            "--no-warm",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        cwd=str(REPO),
        env=env,
    )
    headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    try:
        wait_for_port(port, proc, "the HTTP server")
        init = _post(
            port,
            headers,
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"},
                },
            },
        )
        assert _rpc(init)["id"] == 1
        headers["mcp-session-id"] = init.headers["mcp-session-id"]
        headers["mcp-protocol-version"] = "2025-06-18"
        assert _post(port, headers, {"jsonrpc": "2.0", "method": "notifications/initialized"}).status_code == 202

        deep = (
            '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"memory_read","arguments":{"path":'
            + _nested_list_text(100_000)
            + "}}}"
        ).encode()
        answer = _post(port, headers, deep)
        assert answer.status_code == 200 and len(answer.text) < 10_000, answer.text[:300]
        message = _rpc(answer)
        assert message["id"] == 2 and message["result"]["isError"] is True
        assert "nested deeper" in message["result"]["structuredContent"]["error"]["message"]

        huge = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": "three",
                "method": "tools/call",
                "params": {"name": "memory_search", "arguments": {"query": "q" * 20_000_000}},
            }
        ).encode()
        for chunked in (False, True):  # declared, or streamed in with no content-length: capped either way
            answer = _post(port, headers, huge, chunked=chunked)
            assert answer.status_code == 413 and len(answer.text) < 1_000, answer.text[:300]
            assert answer.json()["id"] == "three" and "over the limit" in answer.json()["error"]["message"]

        note = (
            '{"jsonrpc":"2.0","method":"notifications/progress","params":' + _nested_list_text(100_000) + "}"
        ).encode()
        answer = _post(port, headers, note)
        assert answer.status_code == 400 and len(answer.text) < 1_000, answer.text[:300]

        listed = _post(port, headers, {"jsonrpc": "2.0", "id": 5, "method": "tools/list"})
        assert _rpc(listed)["id"] == 5 and _rpc(listed)["result"]["tools"]  # still serving
        assert proc.poll() is None
    finally:
        proc.terminate()
        proc.wait(10)
