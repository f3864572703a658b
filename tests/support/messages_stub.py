"""A loopback stub of the Anthropic Messages API for driving the real Claude Code CLI in tests.

It records every request (:attr:`MessagesStub.requests`) and answers as the model would, by script, streamed
as server-sent events (https://platform.claude.com/docs/build-with-claude/streaming: ``message_start``, then per
content block ``content_block_start``, ``content_block_delta`` (``text_delta`` or ``input_json_delta``) and
``content_block_stop``, then ``message_delta`` with the ``stop_reason`` and ``message_stop``). The script of a
conversation that offers tools (Claude Code's main loop):

1. the user's prompt: when ``mcp__memsearch__memory_search`` is deferred (Claude Code 2.1 offers MCP tools through
   its ``ToolSearch`` tool, and a tool it loaded comes with ``defer_loading``), call ``ToolSearch`` with
   ``select:mcp__memsearch__memory_search``; when it is offered whole, go to 2;
2. once ``ToolSearch`` answered with the tool (its result is a ``tool_reference``), call
   ``mcp__memsearch__memory_search`` with :attr:`MessagesStub.query`; while it answers that the MCP server is
   "still connecting" (the first prompt of a session on a busy machine), wait a second and call ``ToolSearch``
   again, as a model would, up to :data:`TOOL_SEARCH_TRIES` times. Claude Code 2.1.332 sends the result of such a
   second ``ToolSearch`` as "[Tool result missing due to internal error]", followed by "Tool loaded." and the tool
   in the request's tools: once the tool is offered and an answer was not "still connecting", it is called;
3. once that answered, reply with text and end the turn.

Which step is due is read from the tool results anywhere in the conversation (Claude Code appends system
reminders after them).

Any other request (a title, a summary, a quota probe) gets a short text answer.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

__all__ = ["MessagesStub", "SEARCH_TOOL", "TOOL_SEARCH"]

SEARCH_TOOL = "mcp__memsearch__memory_search"
TOOL_SEARCH = "ToolSearch"
_IDS = {TOOL_SEARCH: "toolu_stub_toolsearch", SEARCH_TOOL: "toolu_stub_memsearch"}
#: What ``ToolSearch`` answers while the MCP server is still connecting.
CONNECTING = "still connecting"
#: How many times the script asks ``ToolSearch`` for the memory tool before calling it anyway.
TOOL_SEARCH_TRIES = 60


def _tool_names(body: dict) -> list[str]:
    return [t.get("name", "") for t in body.get("tools") or [] if isinstance(t, dict)]


def _results(message: dict) -> dict[str, dict]:
    """The tool_result blocks of one message, by tool_use_id."""
    content = message.get("content")
    if not isinstance(content, list):
        return {}
    return {b.get("tool_use_id"): b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"}


class MessagesStub:
    """The stub server on ``127.0.0.1:port``; ``query``: what the scripted ``memory_search`` call asks."""

    def __init__(self, query: str, answer: str = "Done: the memory says so."):
        self.query, self.answer = query, answer
        self.requests: list[dict] = []  # every request body, in order
        self.paths: list[str] = []  # every request's method and path
        self._lock = threading.Lock()
        self._numbers = itertools.count(1)
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # quiet
                pass

            def do_HEAD(self):
                stub.paths.append(f"HEAD {self.path}")
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_GET(self):
                stub.paths.append(f"GET {self.path}")
                self._json(404, {"type": "error", "error": {"type": "not_found_error", "message": "stub"}})

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                stub.paths.append(f"POST {self.path}")
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {}
                if not self.path.split("?")[0].endswith("/v1/messages"):
                    if self.path.split("?")[0].endswith("/count_tokens"):
                        return self._json(200, {"input_tokens": 100})
                    return self._json(404, {"type": "error", "error": {"type": "not_found_error", "message": "stub"}})
                with stub._lock:
                    stub.requests.append(body)
                blocks, stop = stub.reply(body)
                if body.get("stream"):
                    self._stream(body, blocks, stop)
                else:
                    self._json(200, stub.message(body, blocks, stop))

            def _json(self, status: int, data: dict) -> None:
                payload = json.dumps(data).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def _stream(self, body: dict, blocks: list[dict], stop: str) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                for event in stub.events(body, blocks, stop):
                    self.wfile.write(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode())
                    self.wfile.flush()
                self.close_connection = True

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self.server.serve_forever, name="messages-stub", daemon=True)

    def __enter__(self) -> "MessagesStub":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    # The script.
    def reply(self, body: dict) -> tuple[list[dict], str]:
        """The content blocks and stop reason the model answers ``body`` with."""
        tools = _tool_names(body)
        if SEARCH_TOOL not in tools and TOOL_SEARCH not in tools:
            return [{"type": "text", "text": "Memory search session"}], "end_turn"
        answered = {key: block for message in body.get("messages") or [] for key, block in _results(message).items()}
        offered = {t.get("name"): t for t in body.get("tools") or [] if isinstance(t, dict)}.get(SEARCH_TOOL)
        if _IDS[SEARCH_TOOL] in answered:
            return [{"type": "text", "text": self.answer}], "end_turn"
        searches = [key for key in answered if key.startswith(_IDS[TOOL_SEARCH])]
        found = any(SEARCH_TOOL in json.dumps(answered[key].get("content")) for key in searches) or (
            offered is not None and any(CONNECTING not in json.dumps(answered[key].get("content")) for key in searches))
        if found or len(searches) >= TOOL_SEARCH_TRIES or (offered is not None and not offered.get("defer_loading")):
            return [self._call(SEARCH_TOOL, {"query": self.query})], "tool_use"
        if searches:
            time.sleep(1.0)  # the server is still connecting: ask again in a moment
        call = self._call(TOOL_SEARCH, {"query": f"select:{SEARCH_TOOL}", "max_results": 1})
        return [dict(call, id=f"{_IDS[TOOL_SEARCH]}_{len(searches)}" if searches else call["id"])], "tool_use"

    @staticmethod
    def _call(name: str, arguments: dict) -> dict:
        return {"type": "tool_use", "id": _IDS[name], "name": name, "input": arguments}

    def message(self, body: dict, blocks: list[dict], stop: str) -> dict:
        """One answer as a Messages API message. Each has an id of its own: Claude Code merges the streamed
        messages that share an id into one turn, and so paired a second ``ToolSearch`` call with the first's
        result ("[Tool result missing due to internal error]" for the rest) while every reply was ``msg_stub``."""
        with self._lock:
            number = next(self._numbers)
        return {"id": f"msg_stub_{number}", "type": "message", "role": "assistant", "model": body.get("model", "stub"),
                "content": blocks, "stop_reason": stop, "stop_sequence": None,
                "usage": {"input_tokens": 100, "output_tokens": 20}}

    def events(self, body: dict, blocks: list[dict], stop: str) -> list[dict]:
        """The server-sent events of one streamed answer."""
        start = self.message(body, [], None) | {"usage": {"input_tokens": 100, "output_tokens": 1}}
        events = [{"type": "message_start", "message": start}]
        for index, block in enumerate(blocks):
            if block["type"] == "text":
                events += [{"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}},
                           {"type": "content_block_delta", "index": index,
                            "delta": {"type": "text_delta", "text": block["text"]}}]
            else:
                opening = {k: v for k, v in block.items() if k != "input"} | {"input": {}}
                events += [{"type": "content_block_start", "index": index, "content_block": opening},
                           {"type": "content_block_delta", "index": index,
                            "delta": {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}}]
            events.append({"type": "content_block_stop", "index": index})
        events += [{"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                    "usage": {"output_tokens": 20}},
                   {"type": "message_stop"}]
        return events

    # What reached the model.
    def conversations(self) -> list[dict]:
        """The requests of Claude Code's main loop (those that offer tools)."""
        return [r for r in self.requests if {SEARCH_TOOL, TOOL_SEARCH} & set(_tool_names(r))]

    def tool_result(self, name: str) -> str | None:
        """The text of the last result of tool ``name`` the model was sent (``ToolSearch`` may have been asked again)."""
        last = None
        for body in self.conversations():
            for message in body.get("messages") or []:
                for key, block in _results(message).items():
                    if key.startswith(_IDS[name]):
                        content = block.get("content")
                        last = content if isinstance(content, str) else json.dumps(content)
        return last
