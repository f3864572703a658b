"""The memory tool's commands as data: their names and arguments (Claude's ``memory_20250818``), the argument check, and :class:`EditResult`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import InvalidArgument

__all__ = ["COMMANDS", "ARGUMENTS", "check_arguments", "EditResult"]

COMMANDS = ("view", "create", "str_replace", "insert", "delete", "rename")
#: command -> (required arguments, optional arguments): those of Claude's memory tool.
ARGUMENTS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "view": (("path",), ("view_range",)),
    "create": (("path", "file_text"), ()),
    "str_replace": (("path", "old_str", "new_str"), ()),
    "insert": (("path", "insert_line", "insert_text"), ()),
    "delete": (("path",), ()),
    "rename": (("old_path", "new_path"), ()),
}
_TEXT_ARGS = ("path", "old_path", "new_path", "file_text", "old_str", "new_str", "insert_text")


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


def check_arguments(command: Any, arguments: dict) -> dict:
    """The arguments of ``command`` with None dropped; raises :class:`InvalidArgument` naming the fix."""
    if command not in ARGUMENTS:
        raise InvalidArgument(f"unknown memory command {command!r}: choose one of {', '.join(COMMANDS)}")
    required, optional = ARGUMENTS[command]
    args = {k: v for k, v in arguments.items() if v is not None}
    unknown = sorted(set(args) - set(required) - set(optional))
    if unknown:
        raise InvalidArgument(f"{command} takes {', '.join(required + optional)}; not {', '.join(map(repr, unknown))}: "
                              "leave the others out")
    for name in required:
        if name not in args:
            raise InvalidArgument(f"{command} needs {name!r}: call it with {', '.join(required)}")
    for name in _TEXT_ARGS:
        if name in args and not isinstance(args[name], str):
            raise InvalidArgument(f"{command}: {name!r} must be a string, got {type(args[name]).__name__}")
    if "insert_line" in args:
        value = args["insert_line"]
        if isinstance(value, float) and value.is_integer():
            value = args["insert_line"] = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise InvalidArgument(f"insert: 'insert_line' must be a whole number (0 inserts before the first line), got {value!r}")
    if "view_range" in args:
        value = args["view_range"]
        if (not isinstance(value, (list, tuple)) or len(value) != 2
                or not all(isinstance(n, int) and not isinstance(n, bool) for n in value)):
            raise InvalidArgument(f"view: 'view_range' must be two line numbers [start, end] (end -1 means the last line), got {value!r}")
        args["view_range"] = (value[0], value[1])
    return args
