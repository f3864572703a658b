"""memsearch as function tools of the OpenAI Agents SDK: ``Agent(tools=memory_function_tools(root))``.

The tools are memsearch's own (``memory_search``, ``memory_read``, ``memory_list``, ``memory_core``, and with
``writable`` the ``memory`` tool), with their published JSON Schemas; each result is JSON text, and a bad call
returns the error for the model to read rather than failing the run. Needs the ``agents`` extra
(``pip install 'agent-memsearch[agents]'``).
"""

from __future__ import annotations

import json
import os

from ..errors import ExtraNotInstalled

try:
    from agents import FunctionTool
except ImportError:  # pragma: no cover - the extra is missing
    raise ExtraNotInstalled("the OpenAI Agents SDK adapter needs the openai-agents package: "
                            "pip install 'agent-memsearch[agents]'") from None

from ..tools import MEMORY_TOOL, TOOLS, ToolBox

__all__ = ["memory_function_tools"]


def memory_function_tools(root: str | os.PathLike[str] | None = None, *, db=None, writable: bool = False,
                          box: ToolBox | None = None) -> list[FunctionTool]:
    """memsearch's tools as ``agents.FunctionTool`` objects (non-strict schemas: some arguments are optional)."""
    box = box or ToolBox(root, db=db, writable=writable)
    specs = list(TOOLS) + ([MEMORY_TOOL] if box.writable else [])

    def invoker(name: str):
        async def invoke(context, arguments: str) -> str:
            import anyio

            result = await anyio.to_thread.run_sync(box.dispatch, name, arguments or "{}")
            return json.dumps(result, ensure_ascii=False)

        return invoke

    return [FunctionTool(name=spec.name, description=spec.description, params_json_schema=spec.parameters,
                         on_invoke_tool=invoker(spec.name), strict_json_schema=False) for spec in specs]
