"""The ``memory`` tool of a writable :class:`~memsearch.harness.tools.ToolBox`: Claude's memory-tool commands as a JSON-Schema tool, and its handler.

The input schema has the commands and argument names of Claude's ``memory_20250818`` tool, so a
harness can route Claude's native memory-tool calls (``{"command": "create", "path":
"/memories/...", "file_text": ...}``) straight to :meth:`ToolBox.dispatch("memory", input)`, and
any other model gets the same tool as a function. The result is :meth:`EditResult.to_dict`
(``result`` is the text for the model); a long ``view`` is cut to the toolbox's token budget with
a note saying which ``view_range`` reads on.
"""

from __future__ import annotations

import json
from typing import Any

from ..errors import InvalidArgument
from ..memory.commands import COMMANDS
from ..memory.placement import require_memories
from ..memory.tokens import count_tokens

__all__ = ["MEMORY_TOOL_NAME", "MEMORY_DESCRIPTION", "MEMORY_SCHEMA", "WRITE_INSTRUCTIONS", "NATIVE_MEMORY_TOOL",
           "parse_arguments", "run_memory"]

MEMORY_TOOL_NAME = "memory"
#: Claude's built-in definition, for ``tools=[...]`` of the Messages API (the model knows its schema).
NATIVE_MEMORY_TOOL = {"type": "memory_20250818", "name": MEMORY_TOOL_NAME}

MEMORY_DESCRIPTION = (
    "Write and inspect your persistent memory: Markdown files under /memories. Commands: "
    "view (a file with line numbers, or a directory two levels deep), create (a new file), "
    "str_replace (replace text that occurs exactly once), insert (add text after line insert_line; 0 = top), "
    "delete, rename. Files directly in /memories are core memory, always in your context, and have a token budget: "
    "put detail in subdirectories (e.g. /memories/projects/atlas/decisions.md); every directory gets a MEMORY.md "
    "saying what it holds, created for you when you write into a new one. Only .md files; writes are searchable "
    "with memory_search as soon as they return."
)

_TEXT = {"type": "string"}
MEMORY_SCHEMA: dict = {
    "type": "object",
    "properties": {
        "command": {"type": "string", "enum": list(COMMANDS), "description": "The operation: " + ", ".join(COMMANDS) + "."},
        "path": dict(_TEXT, description="view, create, str_replace, insert, delete: the file or directory, e.g. "
                                        "'/memories/notes/2026-08-12.md' ('/memories' is the root)."),
        "view_range": {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2,
                       "description": "view, optional: [start_line, end_line] of a file, 1-based; end -1 means the last line."},
        "file_text": dict(_TEXT, description="create: the whole content of the new file."),
        "old_str": dict(_TEXT, description="str_replace: the exact text to replace; it must occur exactly once."),
        "new_str": dict(_TEXT, description="str_replace: the text that replaces old_str (may be empty)."),
        "insert_line": {"type": "integer", "minimum": 0, "description": "insert: the line to insert after; 0 inserts before the first line."},
        "insert_text": dict(_TEXT, description="insert: the text to insert."),
        "old_path": dict(_TEXT, description="rename: the file or directory to move."),
        "new_path": dict(_TEXT, description="rename: where it goes; must not exist yet."),
    },
    "required": ["command"],
    "additionalProperties": False,
}

WRITE_INSTRUCTIONS = """\
You can also write memory with the memory tool (view, create, str_replace, insert, delete, rename on /memories/...).
Keep core memory small: put details in subdirectories and keep a short pointer at most in a root file."""


def parse_arguments(arguments: Any) -> dict:
    """The tool input as a dict: a dict, the JSON text OpenAI sends, or None/"" for none."""
    if arguments is None or arguments == "":
        return {}
    if isinstance(arguments, (str, bytes)):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            raise InvalidArgument('memory: arguments are not valid JSON: send one JSON object, e.g. '
                                  '{"command": "view", "path": "/memories"}') from None
    if not isinstance(arguments, dict):
        raise InvalidArgument(f"memory: arguments must be a JSON object, got {type(arguments).__name__}")
    return arguments


def run_memory(editor, arguments: Any, *, budget: int, encoding: str) -> dict:
    """Run one memory-tool call on ``editor``; a ``view`` longer than ``budget`` tokens is cut with a note."""
    args = dict(parse_arguments(arguments))
    if "command" not in args:
        raise InvalidArgument(f"memory: missing 'command': one of {', '.join(COMMANDS)}, e.g. "
                              '{"command": "view", "path": "/memories"}')
    command = args.pop("command")
    for name in ("path", "old_path", "new_path"):
        if name in args and args[name] is not None:
            require_memories(args[name])
    result = editor.run(command, **args).to_dict()
    if command == "view" and count_tokens(json.dumps(result, ensure_ascii=False), encoding) > budget:
        _cut_view(result, budget, encoding)
    return result


def _cut_view(result: dict, budget: int, encoding: str) -> None:
    lines = result["result"].split("\n")
    room = budget - count_tokens(json.dumps(dict(result, result=""), ensure_ascii=False), encoding) - 80
    kept, used = [lines[0]], count_tokens(lines[0], encoding)
    for line in lines[1:]:
        used += count_tokens(line, encoding) + 1
        if used > room:
            break
        kept.append(line)
    result["result"] = "\n".join(kept)
    result["truncated"] = True
    numbered = [line.split("\t", 1)[0].strip() for line in kept[1:]]
    if numbered and numbered[-1].isdigit():
        last = int(numbered[-1])
        result["note"] = (f"cut to fit the {budget}-token budget after line {last}; call view with "
                          f"view_range [{last + 1}, -1] for the rest")
    else:
        result["note"] = f"listing cut to fit the {budget}-token budget; view a subdirectory to see the rest"
