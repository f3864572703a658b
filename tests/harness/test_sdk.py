"""The SDKs' tool runners with memsearch: the real `anthropic` SDK (tool_runner with memsearch as Claude's memory)
and the real OpenAI Agents SDK (memsearch's function tools), each against a stub of its API on loopback that
returns recorded tool-call turns; no network. The stub records what the SDK sends back: the tools' results."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

FILES = {"MEMORY.md": "# Ada's memory\nAda leads the Atlas project.\n",
         "projects/MEMORY.md": "# Projects\nOne file per project.\n",
         "projects/atlas.md": "# Atlas\nWe chose ClickHouse as the Atlas warehouse.\n"}
NOTE = "/memories/notes/2026-09-01.md"
NOTE_TEXT = "# Launch\nThe Atlas launch moved to Friday because of the Kafka upgrade.\n"


class Stub:
    """A real HTTP server on 127.0.0.1 answering each POST with the next recorded reply, recording the bodies."""

    def __init__(self, replies: list[dict]):
        self.replies, self.requests = list(replies), []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's name
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                stub.requests.append((self.path, body))
                data = json.dumps(stub.replies.pop(0)).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def claude_turn(n: int, content: list[dict], stop: str = "tool_use") -> dict:
    return {"id": f"msg_{n}", "type": "message", "role": "assistant", "model": "claude-stub", "content": content,
            "stop_reason": stop, "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 5}}


def tool_use(n: int, name: str, arguments: dict) -> dict:
    return {"type": "tool_use", "id": f"toolu_{n}", "name": name, "input": arguments}


def tool_results(body: dict) -> dict:
    """{tool_use_id: (text, is_error)} of the last user message the SDK sent."""
    results = {}
    for block in body["messages"][-1]["content"]:
        if block.get("type") == "tool_result":
            content = block["content"]
            text = content if isinstance(content, str) else "".join(c.get("text", "") for c in content)
            results[block["tool_use_id"]] = (text, bool(block.get("is_error")))
    return results


@pytest.mark.slow
def test_anthropic_tool_runner_uses_memsearch_as_claudes_memory(make_tree):
    anthropic = pytest.importorskip("anthropic")
    from memsearch.harness.anthropic_sdk import memory_tools

    root = make_tree(FILES)
    stub = Stub([
        claude_turn(1, [tool_use(1, "memory", {"command": "create", "path": NOTE, "file_text": NOTE_TEXT})]),
        claude_turn(2, [tool_use(2, "memory_search", {"query": "why did the Atlas launch move", "k": 3})]),
        claude_turn(3, [tool_use(3, "memory", {"command": "view", "path": "/memories/nope.md"}),
                        tool_use(4, "memory", {"command": "view", "path": "/memories"})]),
        claude_turn(4, [{"type": "text", "text": "Noted."}], stop="end_turn"),
    ])
    try:
        client = anthropic.Anthropic(api_key="test-key", base_url=stub.url, max_retries=0)
        runner = client.beta.messages.tool_runner(
            model="claude-stub", max_tokens=1024, tools=memory_tools(root),
            messages=[{"role": "user", "content": "Remember that the launch moved to Friday."}])
        final = runner.until_done()
    finally:
        stub.close()
    assert final.content[0].text == "Noted." and len(stub.requests) == 4
    path, first = stub.requests[0]
    assert path.startswith("/v1/messages")
    tools = {t["name"]: t for t in first["tools"]}
    assert tools["memory"] == {"type": "memory_20250818", "name": "memory"}
    assert set(tools) == {"memory", "memory_search", "memory_read", "memory_list", "memory_core"}
    assert tools["memory_search"]["input_schema"]["required"] == ["query"]

    created, is_error = tool_results(stub.requests[1][1])["toolu_1"]
    assert not is_error and created.startswith("File created successfully")
    assert (root / "notes" / "2026-09-01.md").read_text() == NOTE_TEXT
    assert (root / "notes" / "MEMORY.md").exists()  # the new directory stays valid Agent Memory

    found, is_error = tool_results(stub.requests[2][1])["toolu_2"]
    assert not is_error and json.loads(found)["hits"][0]["path"] == "notes/2026-09-01.md"  # searchable on return

    results = tool_results(stub.requests[3][1])
    missing, is_error = results["toolu_3"]
    assert is_error and "does not exist" in missing and str(root) not in missing
    listing, is_error = results["toolu_4"]
    assert not is_error and "notes" in listing and "projects" in listing


@pytest.mark.slow
def test_a_view_cut_to_the_budget_tells_claude_how_to_read_on(make_tree):
    """Claude's memory tool returns only text: a view cut to the budget says so, with the view_range that reads on.
    Before: the note was dropped, and the file seemed to end where the cut was."""
    anthropic = pytest.importorskip("anthropic")
    from memsearch.harness.anthropic_sdk import MemsearchMemoryTool
    from memsearch.tools import ToolBox

    long = "# Long\n" + "".join(f"Line {i} of a long note about the Atlas warehouse.\n" for i in range(2, 200))
    root = make_tree(dict(FILES, **{"projects/long.md": long}))
    path = "/memories/projects/long.md"
    stub = Stub([claude_turn(1, [tool_use(1, "memory", {"command": "view", "path": path})]),
                 claude_turn(2, [{"type": "text", "text": "Read."}], stop="end_turn")])
    try:
        client = anthropic.Anthropic(api_key="test-key", base_url=stub.url, max_retries=0)
        runner = client.beta.messages.tool_runner(
            model="claude-stub", max_tokens=1024, tools=[MemsearchMemoryTool(box=ToolBox(root, writable=True, budget=300))],
            messages=[{"role": "user", "content": "Read the long note."}])
        runner.until_done()
    finally:
        stub.close()
    shown, is_error = tool_results(stub.requests[1][1])["toolu_1"]
    last = int(shown.split("\n\n(")[0].splitlines()[-1].split("\t")[0])
    assert not is_error and 1 < last < 199
    assert shown.endswith(f"call view with view_range [{last + 1}, -1] for the rest)")


def chat_turn(n: int, calls: list[tuple[str, dict]] | None = None, text: str | None = None) -> dict:
    message = {"role": "assistant", "content": text}
    if calls:
        message["tool_calls"] = [{"id": f"call_{n}_{i}", "type": "function",
                                  "function": {"name": name, "arguments": json.dumps(args)}}
                                 for i, (name, args) in enumerate(calls)]
    return {"id": f"chatcmpl-{n}", "object": "chat.completion", "created": 0, "model": "gpt-stub",
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}


@pytest.mark.slow
def test_openai_agents_runner_uses_memsearch_function_tools(make_tree):
    agents = pytest.importorskip("agents")
    from openai import AsyncOpenAI

    from memsearch.harness.agents_sdk import memory_function_tools

    root = make_tree(FILES)
    stub = Stub([
        chat_turn(1, [("memory", {"command": "create", "path": NOTE, "file_text": NOTE_TEXT})]),
        chat_turn(2, [("memory_search", {"query": "why did the Atlas launch move", "k": 3}),
                      ("memory_read", {"path": "../etc/passwd"})]),
        chat_turn(3, text="Noted."),
    ])
    try:
        model = agents.OpenAIChatCompletionsModel(
            model="gpt-stub", openai_client=AsyncOpenAI(api_key="test-key", base_url=f"{stub.url}/v1", max_retries=0))
        agent = agents.Agent(name="memory", instructions="Use your memory.", model=model,
                             tools=memory_function_tools(root, writable=True))
        result = agents.Runner.run_sync(agent, "Remember that the launch moved to Friday.",
                                        run_config=agents.RunConfig(tracing_disabled=True))
    finally:
        stub.close()
    assert result.final_output == "Noted." and len(stub.requests) == 3
    first = stub.requests[0][1]
    assert {t["function"]["name"] for t in first["tools"]} == {"memory", "memory_search", "memory_read",
                                                              "memory_list", "memory_core"}

    def outputs(body):
        return {m["tool_call_id"]: m["content"] for m in body["messages"] if m.get("role") == "tool"}

    assert json.loads(outputs(stub.requests[1][1])["call_1_0"])["result"].startswith("File created successfully")
    later = outputs(stub.requests[2][1])
    assert json.loads(later["call_2_0"])["hits"][0]["path"] == "notes/2026-09-01.md"
    refused = json.loads(later["call_2_1"])
    assert refused["error"]["type"] == "PathOutsideRoot" and str(root) not in later["call_2_1"]
