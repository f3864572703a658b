"""The tool calls, MCP resources and memory-tool commands a thin client forwards, run by the process serving the index.

:class:`Served` gives the socket server (:class:`memsearch.service.server.Server`) three protocol methods
(:data:`METHODS`), each running the very code an in-process call runs, on the serving process's reader index:

* ``tool``: one :meth:`ToolBox.call <memsearch.harness.tools.ToolBox.call>` (the five tools, the ``memory`` write
  tool included) with the client's options (``budget``, ``encoding``, ``writable``, ``core_budget``, ``model``);
  a bad call is raised back as the typed error the client raises as its own, worded for the model;
* ``resource``: the MCP resources (``uri`` None: the list; else that resource's text);
* ``edit``: one memory-tool command as ``memsearch edit`` and :func:`memsearch.edit` run it
  (``EditResult.to_dict()``).

Every write is synced by the process that holds the index's writer lock (``sync``: the daemon's
:meth:`~memsearch.service.daemon.Daemon.sync_paths`), so the client loads no model, LanceDB or tiktoken and
never meets another writer's lock: the write is searchable when the reply comes.
"""

from __future__ import annotations

import threading
from typing import Callable

from ..errors import IndexBuilding
from .edit import IndexSync, open_editor
from .tools import BUILDING_NOTE, ToolBox

__all__ = ["Served", "METHODS", "MAX_TOOLBOXES"]

#: The protocol methods this module serves.
METHODS = ("tool", "resource", "edit")
#: Toolboxes kept for distinct client options (budget, encoding, ...); clients of one setup share one.
MAX_TOOLBOXES = 16


class Served:
    """The ``tool``, ``resource`` and ``edit`` methods on ``index`` (the server's reader). ``sync``: makes the
    relative paths a write changed searchable (the writer's sync); ``status``: the daemon's state (its first
    build); ``refuse``: raises the protocol's refusal (``kind``, ``message``) for a client that should work
    in-process (another model)."""

    def __init__(self, index, sync: Callable[[list[str]], dict] | None, *, status: Callable[[], dict] | None = None,
                 refuse: Callable[[str, str], Exception] | None = None):
        self.index, self.root = index, index.root
        self.status = status or dict
        self.refuse = refuse or (lambda kind, message: RuntimeError(f"{kind}: {message}"))
        self.on_change = IndexSync(index, syncer=sync) if sync is not None else None
        self._boxes: dict[tuple, ToolBox] = {}
        self._lock = threading.Lock()

    def methods(self) -> dict[str, Callable]:
        """The handlers by protocol method name, for the server's dispatch."""
        return {"tool": self.tool, "resource": self.resource, "edit": self.edit}

    def toolbox(self, *, writable: bool = False, budget=None, encoding=None, core_budget=None) -> ToolBox:
        """The toolbox of one set of client options (made on first use, shared by every client that has them)."""
        key = (bool(writable), budget, encoding, core_budget)
        with self._lock:
            box = self._boxes.get(key)
            if box is None:
                if len(self._boxes) >= MAX_TOOLBOXES:
                    self._boxes.pop(next(iter(self._boxes)))
                box = ToolBox(self.root, index=self.index, budget=budget, db=self.index.where, sync=False,
                              encoding=encoding, writable=bool(writable) and self.on_change is not None,
                              core_budget=core_budget, on_change=self.on_change)
                self._boxes[key] = box
            return box

    def _model(self, model) -> None:
        served = self.index.embedder.name
        if model is not None and model != served:
            raise self.refuse("WrongModel", f"this daemon searches with model {served!r}, not {model!r}")

    def tool(self, name, arguments=None, *, writable=False, budget=None, encoding=None, core_budget=None,
             model=None) -> dict:
        """One tool call's result, exactly as :meth:`ToolBox.call` in the client's process would give it."""
        caught_up = True
        if name == "memory_search":
            self._model(model)
            caught_up = self._searchable()
        box = self.toolbox(writable=writable, budget=budget, encoding=encoding, core_budget=core_budget)
        result = box.call(name, arguments)
        if not caught_up and isinstance(result, dict) and result.get("hits") == [] and "note" in result:
            from ..service.firstbuild import building, indexing

            # an empty answer while the root catches up: "no hits yet", not "try other words"
            if building(self.status()) and (progress := indexing(self.index, catching_up=True)) is not None:
                result["note"] = BUILDING_NOTE.format(**progress)
        return result

    def _searchable(self) -> bool:
        """A search before the first build wrote any row waits a little for them, then says so
        (:class:`IndexBuilding`), never "no hits"; one while a root just loaded catches up waits a little for that
        (:func:`~memsearch.service.firstbuild.await_searchable`). Whether the catch-up is over."""
        from ..service.firstbuild import await_searchable

        try:
            return await_searchable(self.root, self.index, self.status)
        except IndexBuilding as exc:
            raise IndexBuilding(f"memory_search: {exc.text}", hint=exc.hint) from None

    def resource(self, uri=None, *, encoding=None):
        """The MCP resources (a list of dicts) when ``uri`` is None, else the text of the one at ``uri``."""
        from .mcp import memory_resources, resource_text

        if uri is None:
            return memory_resources(self.root)
        return {"text": resource_text(self.root, str(uri), encoding=encoding)}

    def edit(self, command, arguments=None, *, budget=None, encoding=None, model=None) -> dict:
        """One memory-tool command (``EditResult.to_dict()``), its write synced before the reply."""
        self._model(model)
        if self.on_change is None and command != "view":
            raise self.refuse("UnknownMethod", "this server does not index: it cannot carry out writes")
        editor = open_editor(self.root, db=self.index.where, index=self.index, budget=budget, encoding=encoding,
                             on_change=self.on_change if command != "view" else None, sync=command != "view")
        return editor.run(command, **dict(arguments or {})).to_dict()
