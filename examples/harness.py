"""A minimal agent harness over memsearch: no LLM, a scripted agent instead.

It follows the four rules of the Agent Memory harness contract:

1. Load root Markdown: the system prompt holds all of core memory (``ToolBox.system_prompt``).
2. Defer nested Markdown: nothing below the root is in the prompt, only the root's child
   directories with the first paragraph of their MEMORY.md.
3. Surface deferred memory: the agent gets memory_search and memory_list.
4. Support selective reads: the agent gets memory_read (a file or a line range).

The "agent" is a generator that asks for tools the way a model would (search, then list the
folder of the best hit, then read the hit) and sees each result; swap it for your model's
tool-calling loop. Run it::

    python examples/harness.py                       # examples/memory, a sample question
    python examples/harness.py ROOT "your question" [--db DIR]

The first run indexes the memory (the index goes to ROOT/.memsearch, or --db).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Callable, Generator

from memsearch.tools import ToolBox, anthropic_tools, openai_tools

HERE = Path(__file__).resolve().parent
ToolCall = tuple[str, dict]


def scripted_agent(question: str) -> Generator[ToolCall, dict, str]:
    """Stands in for the model: yields tool calls, receives their results, returns an answer."""
    found = yield "memory_search", {"query": question, "k": 3}
    if not found.get("hits"):
        return "I found nothing about that in memory."
    top = found["hits"][0]
    folder = (top["memory_md"]["path"].rpartition("/")[0] or ".") if top["memory_md"] else "."
    yield "memory_list", {"path": folder}  # what else lives next to the best hit?
    passage = yield "memory_read", {"path": top["path"], "start_line": top["start_line"], "end_line": top["end_line"]}
    return f"From {passage['path']} lines {passage['start_line']}-{passage['end_line']}: {top['heading']}."


def run(root: str | Path, question: str, *, toolbox: ToolBox | None = None, db: str | None = None,
        out: Callable[[str], None] = print) -> list[dict]:
    """Run the scripted agent against ``root``; print what it sees; return the transcript."""
    toolbox = toolbox or ToolBox(root, db=db)

    # Rules 1-3: core memory and the first layer of directories go into the system prompt.
    system = toolbox.system_prompt()
    out("=== system prompt (what the model always sees) ===")
    out(system)

    # The tools, in the shape your API wants: anthropic_tools() or openai_tools("chat"/"responses").
    tools = anthropic_tools()
    assert [t["name"] for t in tools] == [t["function"]["name"] for t in openai_tools()]
    out("\n=== tools offered ===")
    for tool in tools:
        out(f"- {tool['name']}({', '.join(tool['input_schema']['properties'])})")

    transcript: list[dict] = [{"role": "system", "content": system}, {"role": "user", "content": question}]
    out(f"\n=== user ===\n{question}")
    agent = scripted_agent(question)
    try:
        call = next(agent)
        while True:
            name, arguments = call
            out(f"\n=== tool call: {name} {json.dumps(arguments, ensure_ascii=False)} ===")
            # Rules 3-4 at run time: one dispatcher; bad calls come back as {"error": ...}, never raise.
            result = toolbox.dispatch(name, arguments)
            out(json.dumps(result, ensure_ascii=False, indent=2))
            transcript.append({"role": "assistant", "tool_call": {"name": name, "arguments": arguments}})
            transcript.append({"role": "tool", "name": name, "content": result})
            call = agent.send(result)
    except StopIteration as done:
        answer = done.value
    transcript.append({"role": "assistant", "content": answer})
    out(f"\n=== assistant ===\n{answer}")
    return transcript


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", nargs="?", default=str(HERE / "memory"), help="memory root (default: examples/memory)")
    parser.add_argument("question", nargs="?", default="How do we keep the latest grid values fast to query in ClickHouse?")
    parser.add_argument("--db", help="index directory (default: ROOT/.memsearch)")
    args = parser.parse_args()
    run(args.root, args.question, db=args.db)


if __name__ == "__main__":
    main()
