"""The memory tool's commands defined once (Claude's ``memory_20250818``), their schema and check, :class:`EditResult`.

:data:`PARAMETERS` (each argument: its JSON Schema, its description for a model, and what it accepts
in words) and :data:`ARGUMENTS` (each command: its required and optional arguments) are the one
definition. :data:`MEMORY_SCHEMA` is generated from them: the flat object a model is shown (every
argument, ``command`` required), with no top-level ``allOf``/``oneOf``/``anyOf``, which the Anthropic API
refuses in a tool's ``input_schema``. :data:`CHECK_SCHEMA` is that schema plus, per command, an
``if``/``then`` rule naming what that command needs and takes: the server's check, never shown to a model.
:func:`check_arguments` validates with it (for the ``memory`` tool, ``memsearch edit`` and
:func:`memsearch.edit` alike) and words each refusal for the command.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..argcheck import check_arguments as _check
from ..argcheck import validator_for
from ..errors import BadToolCall, InvalidArgument
from .tree import valid_name

__all__ = [
    "COMMANDS",
    "ARGUMENTS",
    "PARAMETERS",
    "MEMORY_SCHEMA",
    "CHECK_SCHEMA",
    "Parameter",
    "check_call",
    "check_arguments",
    "EditResult",
]


@dataclass(frozen=True)
class Parameter:
    """One argument of the memory tool: its JSON Schema (no description), description, and what it accepts in words."""

    schema: dict
    description: str
    accepts: str

    def published(self) -> dict:
        return dict(self.schema, description=self.description)


_TEXT = {"type": "string"}
PARAMETERS: dict[str, Parameter] = {
    "path": Parameter(
        _TEXT,
        "view, create, str_replace, insert, delete: the file or directory, e.g. "
        "'/memories/notes/2026-08-12.md' ('/memories' is the root).",
        "a string",
    ),
    "view_range": Parameter(
        {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2},
        "view, optional: [start_line, end_line] of a file, 1-based; end -1 means the last line.",
        "two line numbers [start, end] (end -1 means the last line)",
    ),
    "file_text": Parameter(_TEXT, "create: the whole content of the new file.", "a string"),
    "old_str": Parameter(_TEXT, "str_replace: the exact text to replace; it must occur exactly once.", "a string"),
    "new_str": Parameter(_TEXT, "str_replace: the text that replaces old_str (may be empty).", "a string"),
    "insert_line": Parameter(
        {"type": "integer", "minimum": 0},
        "insert: the line to insert after; 0 inserts before the first line.",
        "a whole number (0 inserts before the first line)",
    ),
    "insert_text": Parameter(_TEXT, "insert: the text to insert.", "a string"),
    "old_path": Parameter(_TEXT, "rename: the file or directory to move.", "a string"),
    "new_path": Parameter(_TEXT, "rename: where it goes; must not exist yet.", "a string"),
}
#: command -> (required arguments, optional arguments): those of Claude's memory tool.
ARGUMENTS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "view": (("path",), ("view_range",)),
    "create": (("path", "file_text"), ()),
    "str_replace": (("path", "old_str", "new_str"), ()),
    "insert": (("path", "insert_line", "insert_text"), ()),
    "delete": (("path",), ()),
    "rename": (("old_path", "new_path"), ()),
}
COMMANDS = tuple(ARGUMENTS)
#: The arguments whose text is written into a file.
WRITTEN = ("file_text", "new_str", "insert_text")
#: A call of the memory tool, for the errors that show one.
EXAMPLE = '{"command": "view", "path": "/memories"}'


def _schema() -> dict:
    """The memory tool's input schema as a model is shown it, generated from :data:`PARAMETERS`."""
    properties = {
        "command": {
            "type": "string",
            "enum": list(COMMANDS),
            "description": "The operation: " + ", ".join(COMMANDS) + ".",
        }
    }
    properties.update((name, arg.published()) for name, arg in PARAMETERS.items())
    return {"type": "object", "properties": properties, "required": ["command"], "additionalProperties": False}


def _check_schema() -> dict:
    """:data:`MEMORY_SCHEMA` plus one ``if``/``then`` rule per command of :data:`ARGUMENTS`."""
    rules = []
    for command, (required, optional) in ARGUMENTS.items():
        then = {
            "properties": {name: True for name in ("command",) + required + optional},
            "additionalProperties": False,
        }
        if required:
            then["required"] = list(required)
        rules.append({"if": {"properties": {"command": {"const": command}}, "required": ["command"]}, "then": then})
    return dict(_schema(), allOf=rules)


#: The JSON Schema of the ``memory`` tool's input that a model is shown (flat: the Anthropic API refuses a
#: top-level ``allOf``/``oneOf``/``anyOf``, and Claude Code drops or fails on such a tool).
MEMORY_SCHEMA: dict = _schema()
#: What checks every call: :data:`MEMORY_SCHEMA` plus each command's required and allowed arguments.
CHECK_SCHEMA: dict = _check_schema()
_VALIDATOR = None


def _render(args: dict, errors) -> str | BadToolCall:
    """The message for the first problem with ``args``, in the command's words (``command`` itself first); an argument
    missing or not taken is a :class:`~memsearch.errors.BadToolCall`, which carries them as data."""
    command = args.get("command")
    for error in errors:  # no or no known command: nothing else can be judged
        if list(error.absolute_path)[:1] == ["command"]:
            return f"unknown memory command {command!r}: choose one of {', '.join(COMMANDS)}"
        if error.validator == "required" and "command" in error.validator_value and "command" not in error.instance:
            return f"memory: missing 'command': one of {', '.join(COMMANDS)}, e.g. {EXAMPLE}"
    error = errors[0]
    required, optional = ARGUMENTS[command]
    if error.validator == "additionalProperties":
        unknown = sorted(set(error.instance) - {"command"} - set(required) - set(optional))
        takes, extra = ", ".join(required + optional), ", ".join(map(repr, unknown))
        return BadToolCall(f"{command} takes {takes}; not {extra}: leave the others out", command=command,
                           unknown=tuple(unknown))
    if error.validator == "required":
        missing = next(n for n in error.validator_value if n not in error.instance)
        return BadToolCall(f"{command} needs {missing!r}: call it with {', '.join(required)}", command=command,
                           missing=missing)
    name = next(iter(error.absolute_path), None)
    arg = PARAMETERS.get(name)
    value = args.get(name)
    if arg is not None and error.validator in ("minimum", "maximum"):
        return f"{command}: {name} {value!r} is out of range: it must be {arg.accepts}"
    if arg is not None:
        return f"{command}: {name!r} must be {arg.accepts}, got {value!r}"
    return f"{command}: {error.message}"  # pragma: no cover - every argument is in PARAMETERS


def check_call(arguments: Any) -> dict:
    """A whole call (``command`` and its arguments, as a model sends it) checked against
    :data:`CHECK_SCHEMA`, None dropped; raises :class:`~memsearch.errors.InvalidArgument` naming the fix."""
    global _VALIDATOR
    if _VALIDATOR is None:
        _VALIDATOR = validator_for(CHECK_SCHEMA)
    given = arguments if isinstance(arguments, dict) else {}  # None (no arguments at all) is checked as {}
    args = _check("memory", CHECK_SCHEMA, arguments, _VALIDATOR, render=lambda errors: _render(given, errors))
    for name in WRITTEN:  # a lone surrogate (JSON's unpaired '\ud800') cannot be written as UTF-8
        if name in args and not valid_name(args[name]):
            raise InvalidArgument(f"{args['command']}: {name!r} is not valid UTF-8 text: it holds a lone surrogate "
                                  "(an unpaired \\ud800-\\udfff escape); send the characters themselves; nothing "
                                  "was written")
    return args


def check_arguments(command: Any, arguments: dict) -> dict:
    """The arguments of ``command`` checked by :func:`check_call`, without ``command``; ``view_range``
    comes back as a tuple of two ints."""
    args = check_call({"command": command, **arguments})
    args.pop("command")
    if "view_range" in args:
        args["view_range"] = tuple(int(n) for n in args["view_range"])
    return args


@dataclass(frozen=True)
class EditResult:
    """What one command did. ``output`` is the text for the model (memory-tool style); ``changed``
    the relative paths written or removed; ``created`` the ``MEMORY.md`` files made to keep
    directories valid; ``index`` what ``on_change`` reported (read-your-writes)."""

    command: str
    path: str
    output: str
    changed: tuple[str, ...] = ()
    created: tuple[str, ...] = ()
    core_tokens: int | None = None
    index: dict | None = None

    def to_dict(self) -> dict:
        data: dict[str, Any] = {"command": self.command, "path": self.path, "result": self.output}
        if self.changed:
            data["changed"] = list(self.changed)
        if self.created:
            data["created"] = list(self.created)
        if self.core_tokens is not None:
            data["core_tokens"] = self.core_tokens
        if self.index is not None:
            data["index"] = self.index
        return data

    @classmethod
    def from_dict(cls, data: dict) -> "EditResult":
        """The result :meth:`to_dict` wrote (e.g. the daemon's, for a write it carried out)."""
        return cls(command=data["command"], path=data["path"], output=data["result"],
                   changed=tuple(data.get("changed", ())), created=tuple(data.get("created", ())),
                   core_tokens=data.get("core_tokens"), index=data.get("index"))
