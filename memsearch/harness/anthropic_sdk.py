"""memsearch as Claude's memory in the ``anthropic`` SDK: a ``BetaAbstractMemoryTool`` and the search tools.

``client.beta.messages.tool_runner(..., tools=memory_tools(root))`` runs Claude's memory-tool commands (view,
create, str_replace, insert, delete, rename) on an Agent Memory tree, each write keeping the tree valid and
searchable on return, beside ``memory_search`` (and the other read tools) as function tools. Needs the
``anthropic`` extra (``pip install 'agent-memsearch[anthropic]'``).
"""

from __future__ import annotations

import json
import os

from ..errors import ExtraNotInstalled

try:
    from anthropic.lib.tools import BetaAbstractMemoryTool, BetaFunctionTool, ToolError
except ImportError:  # pragma: no cover - the extra is missing
    raise ExtraNotInstalled("the Anthropic SDK adapter needs the anthropic package: "
                            "pip install 'agent-memsearch[anthropic]'") from None

from ..tools import TOOLS, ToolBox

__all__ = ["MemsearchMemoryTool", "search_tools", "memory_tools"]


class MemsearchMemoryTool(BetaAbstractMemoryTool):
    """Claude's memory tool (``memory_20250818``) backed by memsearch: ``/memories`` is the memory root.

    ``box``: a :class:`~memsearch.tools.ToolBox` to share (it must be ``writable``); else one is opened on
    ``root`` with ``db``. A refused command comes back to Claude as an error result saying how to fix the call.
    """

    def __init__(self, root: str | os.PathLike[str] | None = None, *, db=None, box: ToolBox | None = None,
                 cache_control=None):
        super().__init__(cache_control=cache_control)
        if box is None:
            box = ToolBox(root, db=db, writable=True)
        self.box = box

    def call(self, input: object) -> str:
        """Claude's call as sent, through the memory tool's own checks: an unknown or missing command, a wrong type
        or a missing argument comes back as an error saying how to fix the call, never a Python exception's repr
        (the SDK's own ``call`` builds the command unchecked and answers an unknown one with NotImplementedError)."""
        return self._run(input)

    def _run(self, command) -> str:
        arguments = command.model_dump(exclude_none=True) if hasattr(command, "model_dump") else command
        result = self.box.dispatch("memory", arguments)
        if "error" in result:
            raise ToolError(result["error"]["message"])
        # Claude reads the text alone: what the other keys say to act on goes with it (a view cut to the budget:
        # the view_range that reads on; a write the index has not taken yet)
        index = result.get("index") or {}
        notes = [result.get("note"), index.get("note") if index.get("synced") is False else None]
        return result["result"] + "".join(f"\n\n({note})" for note in notes if note)

    def view(self, command):
        return self._run(command)

    def create(self, command):
        return self._run(command)

    def str_replace(self, command):
        return self._run(command)

    def insert(self, command):
        return self._run(command)

    def delete(self, command):
        return self._run(command)

    def rename(self, command):
        return self._run(command)


def search_tools(box: ToolBox) -> list[BetaFunctionTool]:
    """``memory_search``, ``memory_read``, ``memory_list`` and ``memory_core`` as the SDK's function tools."""

    def runner(name: str):
        def run(**arguments) -> str:
            result = box.dispatch(name, arguments)
            if "error" in result:
                raise ToolError(json.dumps(result, ensure_ascii=False))
            return json.dumps(result, ensure_ascii=False)

        return run

    return [BetaFunctionTool(runner(spec.name), name=spec.name, description=spec.description,
                             input_schema=spec.parameters) for spec in TOOLS]


def memory_tools(root: str | os.PathLike[str], *, db=None) -> list:
    """Claude's memory tool and the search tools on one ``ToolBox``, for ``tool_runner(tools=...)``."""
    box = ToolBox(root, db=db, writable=True)
    return [MemsearchMemoryTool(box=box), *search_tools(box)]
