"""Route Claude's native memory tool (``memory_20250818``) to memsearch, then search what was written.

A harness that offers Claude its built-in memory tool receives ``tool_use`` blocks such as
``{"type": "tool_use", "name": "memory", "input": {"command": "create", "path": "/memories/...",
"file_text": "..."}}`` and must answer each with a ``tool_result``. Here those calls go to
``ToolBox(root, writable=True).dispatch("memory", input)``: the same commands and arguments, but
every write keeps the tree valid Agent Memory (a new folder gets its MEMORY.md, core memory keeps
its budget, nothing lands outside the root) and is searchable the moment it returns.

No network and no API key: the assistant turns below are a scripted transcript, the exact JSON
Claude sends (ids shortened). Run it::

    python examples/claude_memory_tool.py            # on a temporary copy of examples/memory
    python examples/claude_memory_tool.py ROOT       # on your own memory (it writes there!)

With the real API you would pass ``tools=[NATIVE_MEMORY_TOOL, *anthropic_tools()]`` (the
``memory_20250818`` definition plus memsearch's read tools) to ``client.beta.messages.create``
and feed each ``tool_use`` block to :func:`answer` the same way.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from pathlib import Path
from typing import Callable

from memsearch.harness.memory_tool import NATIVE_MEMORY_TOOL
from memsearch.tools import ToolBox, anthropic_tools

HERE = Path(__file__).resolve().parent

#: What Claude sent, turn by turn: each assistant message's tool_use blocks (memory_20250818 calls).
TRANSCRIPT: list[dict] = [
    {"type": "tool_use", "id": "toolu_01", "name": "memory", "input": {"command": "view", "path": "/memories"}},
    {"type": "tool_use", "id": "toolu_02", "name": "memory",
     "input": {"command": "create", "path": "/memories/customers/acme/2026-11-20-call.md",
               "file_text": "# Call with Acme, 2026-11-20\n\n- They will renew if SSO ships by January.\n"
                            "- Their admin, Keiko Tanaka, wants audit logs exported to S3.\n"}},
    {"type": "tool_use", "id": "toolu_03", "name": "memory",
     "input": {"command": "str_replace", "path": "/memories/customers/acme/2026-11-20-call.md",
               "old_str": "if SSO ships by January", "new_str": "if SAML single sign-on ships by 15 January"}},
    {"type": "tool_use", "id": "toolu_04", "name": "memory",
     "input": {"command": "insert", "path": "/memories/customers/acme/2026-11-20-call.md", "insert_line": 4,
               "insert_text": "- Next step: Priya sends the SSO timeline by Friday."}},
    {"type": "tool_use", "id": "toolu_05", "name": "memory",
     "input": {"command": "view", "path": "/memories/customers/acme/2026-11-20-call.md", "view_range": [1, -1]}},
    # Refused: the directory still holds the call notes, so its MEMORY.md stays.
    {"type": "tool_use", "id": "toolu_06", "name": "memory",
     "input": {"command": "delete", "path": "/memories/customers/acme/MEMORY.md"}},
    # Refused: outside the memory directory.
    {"type": "tool_use", "id": "toolu_07", "name": "memory",
     "input": {"command": "create", "path": "/etc/cron.d/backdoor.md", "file_text": "no"}},
    {"type": "tool_use", "id": "toolu_08", "name": "memory",
     "input": {"command": "rename", "old_path": "/memories/customers/acme/2026-11-20-call.md",
               "new_path": "/memories/customers/acme/calls/2026-11-20.md"}},
]

#: After the writes, the agent looks its notes up again (memsearch's own read tool).
QUESTION = "what does Acme need before they renew"


def answer(toolbox: ToolBox, block: dict) -> dict:
    """The ``tool_result`` block for one ``tool_use`` block of Claude's memory tool."""
    result = toolbox.dispatch(block["name"], block["input"])
    if "error" in result:
        return {"type": "tool_result", "tool_use_id": block["id"], "content": result["error"]["message"], "is_error": True}
    return {"type": "tool_result", "tool_use_id": block["id"], "content": result["result"]}


def run(root: str | Path, *, toolbox: ToolBox | None = None, out: Callable[[str], None] = print) -> dict:
    """Replay :data:`TRANSCRIPT` on ``root``, then search; return the tool results and the hits."""
    toolbox = toolbox or ToolBox(root, writable=True)
    tools = [NATIVE_MEMORY_TOOL, *anthropic_tools()]
    out(f"tools offered to Claude: {json.dumps([t.get('type', t['name']) for t in tools])}")
    results = []
    for block in TRANSCRIPT:
        out(f"\n>>> tool_use {json.dumps(block['input'], ensure_ascii=False)}")
        reply = answer(toolbox, block)
        results.append(reply)
        out(("<<< tool_result (is_error) " if reply.get("is_error") else "<<< tool_result ") + reply["content"])
    search = toolbox.dispatch("memory_search", {"query": QUESTION, "k": 3})
    out(f"\n>>> memory_search {QUESTION!r}")
    for hit in search.get("hits", []):
        out(f"<<< {hit['path']}:{hit['start_line']}-{hit['end_line']}  {hit['snippet'].splitlines()[-1]}")
    return {"results": results, "hits": search.get("hits", [])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root", nargs="?", help="a memory root to write to (default: a temporary copy of examples/memory)")
    args = parser.parse_args()
    if args.root:
        run(args.root)
        return
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "memory"
        shutil.copytree(HERE / "memory", root, ignore=shutil.ignore_patterns(".memsearch"))
        run(root)


if __name__ == "__main__":
    main()
