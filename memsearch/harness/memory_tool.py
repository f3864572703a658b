"""The ``memory`` tool of a writable :class:`~memsearch.harness.tools.ToolBox`: Claude's commands, and its handler.

The input schema has the commands and argument names of Claude's ``memory_20250818`` tool, so a
harness can route Claude's native memory-tool calls (``{"command": "create", "path":
"/memories/...", "file_text": ...}``) straight to :meth:`ToolBox.dispatch("memory", input)`, and
any other model gets the same tool as a function. Its arguments go through the tools' one pipeline
(bounds, then each command's check, :data:`~memsearch.memory.commands.CHECK_SCHEMA`; a model is shown the
flat :data:`MEMORY_SCHEMA`: both generated from :mod:`memsearch.memory.commands`). The result is
:meth:`EditResult.to_dict` (``result`` is the text for the model), cut to the toolbox's token budget
by :meth:`memsearch.harness.budget.Budget.memory`.
"""

from __future__ import annotations

from ..memory.commands import MEMORY_SCHEMA  # generated from the one definition of the commands; what a model is shown
from ..memory.placement import require_memories

__all__ = [
    "MEMORY_TOOL_NAME",
    "MEMORY_DESCRIPTION",
    "MEMORY_SCHEMA",
    "WRITE_INSTRUCTIONS",
    "NATIVE_MEMORY_TOOL",
    "run_memory",
]

MEMORY_TOOL_NAME = "memory"
#: Claude's built-in definition, for ``tools=[...]`` of the Messages API (the model knows its schema).
NATIVE_MEMORY_TOOL = {"type": "memory_20250818", "name": MEMORY_TOOL_NAME}

MEMORY_DESCRIPTION = (
    "Write and inspect your persistent memory: Markdown files under /memories (paths start with /memories). "
    "Commands: view (a file with line numbers, or a directory two levels deep), create (a new file), "
    "str_replace (replace text that occurs exactly once), insert (add text after line insert_line; 0 = top), "
    "delete, rename. Put notes in folders (e.g. /memories/projects/atlas/decisions.md): every folder gets a "
    "MEMORY.md saying what it holds, created for you when you write into a new one, and writes in folders are "
    "searchable with memory_search as soon as they return. Files directly in /memories are core memory: short, "
    "under a token budget, in your context from the next session on (memory_core shows them now), and not "
    "searched by memory_search. New files are .md."
)

WRITE_INSTRUCTIONS = """\
You can also write memory with the memory tool (view, create, str_replace, insert, delete, rename on /memories/...).
Put notes in folders, where memory_search finds them as soon as they are written; files directly in /memories are
core memory: keep them short (a pointer at most), they reach your context in the next session."""


def run_memory(editor, arguments: dict) -> dict:
    """Run one memory-tool call (arguments already through the tool pipeline, ``command`` in them) on ``editor``."""
    args = dict(arguments)
    command = args.pop("command")
    for name in ("path", "old_path", "new_path"):
        if args.get(name) is not None:
            require_memories(args[name])  # Claude's memory tool takes /memories paths only
    return editor.run(command, **args).to_dict()
