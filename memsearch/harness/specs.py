"""The memory tools as data: each tool's name, description for a model, input schema, output schema and request bounds.

:data:`TOOLS` holds the four read tools (``memory_search``, ``memory_read``, ``memory_list``,
``memory_core``); :data:`MEMORY_TOOL` is the write tool of a writable toolbox (Claude's memory-tool
commands, its schema generated from :mod:`memsearch.memory.commands`). :func:`openai_tools` and
:func:`anthropic_tools` export them in the exact shapes of those APIs; :meth:`ToolSpec.validate`
runs a call's arguments through the one pipeline (:func:`memsearch.harness.arguments.prepare`).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Callable

from ..argcheck import DATE_PATTERN, validator_for
from ..engine.search.args import MODES
from ..engine.search.timeline_budget import describe as describe_timeline
from ..errors import Hint, InvalidArgument, UnknownTool, shown
from ..memory.commands import EXAMPLE, check_call
from .arguments import prepare
from .bounds import MAX_REQUEST_CHARS, MAX_STRING_CHARS, MAX_WRITE_REQUEST_CHARS
from .memory_tool import MEMORY_DESCRIPTION, MEMORY_SCHEMA, MEMORY_TOOL_NAME
from .outputs import OUTPUT_SCHEMAS

__all__ = [
    "ToolSpec",
    "TOOLS",
    "TOOL_NAMES",
    "MEMORY_TOOL",
    "MAX_K",
    "MEMORY_INSTRUCTIONS",
    "specs_for",
    "spec_of",
    "openai_tools",
    "anthropic_tools",
    "validate_arguments",
]

MAX_K = 50


@dataclass(frozen=True)
class ToolSpec:
    """One tool: its name, a description for the model, the JSON Schema of its arguments (``parameters``)
    and of its result (``output``), the bounds on what a call may send, ``check``: the tool's own
    validation of a parsed call (default: ``parameters`` with jsonschema, worded generically), and ``example``:
    a good call's arguments as JSON, which an error shows where it has none to correct."""

    name: str
    description: str
    parameters: dict = field(hash=False)
    output: dict | None = field(default=None, hash=False, compare=False)
    max_chars: int = MAX_REQUEST_CHARS
    max_string: int | None = MAX_STRING_CHARS
    check: Callable[[Any], dict] | None = field(default=None, hash=False, compare=False)
    example: str = field(default="{}", compare=False)

    def schema(self) -> dict:
        return copy.deepcopy(self.parameters)

    def output_schema(self) -> dict | None:
        return copy.deepcopy(self.output)

    def openai(self, api: str = "chat") -> dict:
        """OpenAI function tool: Chat Completions (nested) or Responses (flat) shape."""
        if api == "chat":
            return {
                "type": "function",
                "function": {"name": self.name, "description": self.description, "parameters": self.schema()},
            }
        if api == "responses":  # strict defaults to true there, which forbids optional arguments
            return {
                "type": "function",
                "name": self.name,
                "description": self.description,
                "parameters": self.schema(),
                "strict": False,
            }
        raise InvalidArgument(f"unknown OpenAI API {api!r}: choose 'chat' (Chat Completions) or 'responses'")

    def anthropic(self) -> dict:
        """Anthropic Messages API tool definition."""
        return {"name": self.name, "description": self.description, "input_schema": self.schema()}

    @cached_property
    def validator(self):
        """The jsonschema validator of :attr:`parameters` (built on first use: compiling is the slow part)."""
        return validator_for(self.parameters)

    def validate(self, arguments: Any) -> dict:
        """``arguments`` (dict, JSON text, bytes or None) through the one pipeline: bounds, then the schema.

        Raises :class:`~memsearch.errors.InvalidArgument` naming the argument and what it accepts.
        """
        return prepare(self, arguments)


def _obj(properties: dict, required: tuple[str, ...] = ()) -> dict:
    schema = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        schema["required"] = list(required)
    return schema


TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "memory_search",
        "Search your long-term memory: the Markdown files below the memory root that are NOT in your context. "
        "Use it before answering about past work, people, projects, decisions or dates that core memory does not "
        "cover. "
        "Returns ranked hits, each with the file path, line range, section heading, a snippet, the file's date when "
        "it has one, "
        "and the nearest MEMORY.md (title and summary) that explains the folder the hit is in. "
        "To see more of a hit, call memory_read with its path, start_line and end_line. "
        "For a question whose answer is spread over many sessions or notes (summarise how X went, in which "
        "order things happened, everything about X, what the user asked you to always or never do), the default "
        "mode already brings the best passages of other sessions among its first hits, best first; mode "
        "'timeline' gives the best passages of each file or dated session on the topic, oldest first.",
        _obj(
            {
                "query": {
                    "type": "string",
                    "minLength": 1,
                    "description": (
                        "What to look for: a question or keywords, e.g. 'why did we move billing to Stripe'."
                    ),
                },
                "k": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_K,
                    "default": 5,
                    "description": "How many hits to return (default 5); in mode timeline, how long the timeline is.",
                },
                "scope": {
                    "type": "string",
                    "description": (
                        "Only search this memory directory and below, relative to the memory root, e.g. "
                        "'projects/atlas'."
                    ),
                },
                "mode": {
                    "type": "string",
                    "enum": list(MODES),
                    "default": "hybrid",
                    "description": (
                        "hybrid (default) combines meaning and exact words; keyword for exact names, ids "
                        "and error codes; vector for paraphrases; timeline for questions that span memory "
                        "(a summary, an order of events, everything about a topic, standing instructions): "
                        "the best passages of the files or dated sessions on the topic, oldest first, "
                        f"{describe_timeline()} in all (raise k for a longer history)."
                    ),
                },
                "since": {
                    "type": "string",
                    "pattern": DATE_PATTERN,
                    "description": "Only dated files (e.g. notes/2026-08-12.md) on or after this day, YYYY-MM-DD.",
                },
                "until": {
                    "type": "string",
                    "pattern": DATE_PATTERN,
                    "description": "Only dated files on or before this day, YYYY-MM-DD.",
                },
            },
            ("query",),
        ),
        OUTPUT_SCHEMAS["memory_search"],
        example='{"query": "why did we move billing to Stripe"}',
    ),
    ToolSpec(
        "memory_read",
        "Read one memory file, or a range of its lines, by its path relative to the memory root "
        "(as given by memory_search or memory_list). Lines are 1-based and inclusive. "
        "Long files are cut to fit; the result then says which start_line reads on.",
        _obj(
            {
                "path": {
                    "type": "string",
                    "minLength": 1,
                    "description": "A memory file relative to the memory root, e.g. 'projects/atlas/MEMORY.md'.",
                },
                "start_line": {"type": "integer", "minimum": 1, "description": "First line to read (default 1)."},
                "end_line": {
                    "type": "integer",
                    "minimum": 1,
                    "description": "Last line to read (default: the end of the file).",
                },
            },
            ("path",),
        ),
        OUTPUT_SCHEMAS["memory_read"],
        example='{"path": "projects/atlas/MEMORY.md", "start_line": 1}',
    ),
    ToolSpec(
        "memory_list",
        "Browse memory one level at a time. Lists a memory directory: its MEMORY.md title and summary, its child "
        "directories (each with the summary of its own MEMORY.md) and its files (title and size in tokens). "
        "Start at '.' (the root) and follow the MEMORY.md summaries toward what you need; then memory_read a file.",
        _obj(
            {
                "path": {
                    "type": "string",
                    "default": ".",
                    "description": "A memory directory relative to the memory root; '.' is the root (default).",
                },
                "offset": {
                    "type": "integer",
                    "minimum": 0,
                    "default": 0,
                    "description": (
                        "Skip this many entries (directories first, then files); use the offset a cut listing suggests."
                    ),
                },
            }
        ),
        OUTPUT_SCHEMAS["memory_list"],
        example='{"path": "."}',
    ),
    ToolSpec(
        "memory_core",
        "Return core memory: every Markdown file directly in the memory root, as placed in your system prompt, "
        "with its size in tokens. Use it to re-read core memory after it may have changed.",
        _obj({}),
        OUTPUT_SCHEMAS["memory_core"],
    ),
)
TOOL_NAMES = tuple(t.name for t in TOOLS)
#: The write tool of ``ToolBox(root, writable=True)``: Claude's memory-tool commands (see harness/memory_tool.py);
#: a whole memory file may travel in its arguments, so only their size and shape are bounded.
MEMORY_TOOL = ToolSpec(
    MEMORY_TOOL_NAME,
    MEMORY_DESCRIPTION,
    MEMORY_SCHEMA,
    OUTPUT_SCHEMAS[MEMORY_TOOL_NAME],
    max_chars=MAX_WRITE_REQUEST_CHARS,
    max_string=None,
    check=check_call,
    example=EXAMPLE,
)
_SPECS = {t.name: t for t in TOOLS + (MEMORY_TOOL,)}

MEMORY_INSTRUCTIONS = """\
You have a persistent memory: a directory of Markdown files. Core memory (below) is always in your context.
More memory lives in subdirectories and is NOT loaded; each directory has a MEMORY.md saying what it holds.
Reach it with the memory tools: memory_search finds passages by meaning and keywords (mode 'timeline' for a
summary or the order of events: each session on the topic, oldest first), memory_list browses a directory and the
MEMORY.md summaries of its subdirectories, memory_read loads a file or a line range.
Look things up before saying you do not know."""


def specs_for(writable: bool) -> tuple[ToolSpec, ...]:
    """The tools a toolbox offers: the read tools, plus ``memory`` when ``writable``."""
    return TOOLS + (MEMORY_TOOL,) if writable else TOOLS


def spec_of(tool: Any, *, writable: bool = True) -> ToolSpec:
    """The spec of tool ``tool``; :class:`~memsearch.errors.UnknownTool` names the tools there are."""
    spec = _SPECS.get(tool) if isinstance(tool, str) else None
    if spec is None:
        offered = ", ".join(t.name for t in specs_for(writable))
        raise UnknownTool(f"unknown tool {shown(tool)}: the memory tools are {offered}")
    if spec is MEMORY_TOOL and not writable:
        raise UnknownTool(
            f"the memory tool writes, and these tools are read-only ({', '.join(TOOL_NAMES)})", hint=Hint("writable")
        )
    return spec


def openai_tools(api: str = "chat", *, writable: bool = False) -> list[dict]:
    """The tools for OpenAI: ``api="chat"`` (Chat Completions) or ``"responses"``; ``writable`` adds ``memory``."""
    return [t.openai(api) for t in specs_for(writable)]


def anthropic_tools(*, writable: bool = False) -> list[dict]:
    """The tools for the Anthropic Messages API (``tools=`` of ``messages.create``); ``writable`` adds ``memory``."""
    return [t.anthropic() for t in specs_for(writable)]


def validate_arguments(tool: str, arguments: Any) -> dict:
    """Check ``arguments`` (dict, JSON text or None) for ``tool``; return them cleaned (see :meth:`ToolSpec.validate`).

    Validation is ``jsonschema`` (Draft 2020-12) against the published schema itself, after the
    request bounds; ``null`` for an argument means "omitted", and ``5.0`` is passed on as ``5``.
    """
    return spec_of(tool).validate(arguments)
