"""The thin client's half of :mod:`.served`: a tool call, an MCP resource or a memory-tool command run by the daemon.

Light on purpose (the service client, settings and the location only): a ``memsearch serve`` whose calls the
daemon answers never imports the model, LanceDB, pyarrow or tiktoken. :func:`request` returns the daemon's
result, or None when the caller should work in-process, which is when:

* no daemon listens, and none is starting (``wait`` 0, autostart off, a read-only or remote index); with
  ``wait``, one is started first (:func:`~memsearch.service.autostart.ensure`), as the server's warm-up does;
* the daemon refused before running anything (an older daemon without the method, another model, ...);
* a read went wrong on the daemon's side (a timeout, a bug): reading again here is harmless.

With ``wait``, a daemon that an auto-start is bringing up (:func:`~memsearch.service.firstbuild.daemon_coming`)
is waited for, up to ``wait`` seconds (:func:`starting_wait` for ``memsearch serve``), and so is a search it
answers :class:`~memsearch.errors.IndexBuilding` (no row of a root it builds yet): the service answers a search
from the moment the root's index is open, by keyword while it loads the model (hits flagged ``partial``). Past
that a search is told to come back (:class:`~memsearch.errors.IndexBuilding`), a read is answered in-process. A write whose
outcome is unknown (the daemon took it, then timed out or failed) is never done twice: the caller gets
:class:`~memsearch.errors.MemoryBusy`, saying to look before writing again.
"""

from __future__ import annotations

import time

from .. import settings
from ..errors import DaemonUnavailable, Hint, IndexBuilding, MemoryBusy
from ..location import IndexLocation
from ..service import autostart
from ..service.client import Client
from ..service.firstbuild import daemon_coming
from ..service.protocol import UNWARNED_ERRORS

__all__ = ["request", "tool", "resource", "edit", "starting_wait", "SERVED_TIMEOUT_S", "NOT_RUN"]
#: A write waits this long for a starting daemon (done in-process meanwhile, it would load the model here).
WRITE_WAIT_S = 30.0
#: Longest wait for the daemon's reply to one forwarded call (a write embeds its chunks before replying).
SERVED_TIMEOUT_S = 30.0
POLL_S = 0.05
#: Refusals that come before the daemon ran anything: the call is safe to run in-process instead.
NOT_RUN = frozenset({"BadRequest", "UnsupportedVersion", "UnknownMethod", "WrongRoot", "WrongModel",
                     "PermissionDenied", "NotConnected"})


def _warn(message: str) -> None:
    import logging  # here, not at import, as the service client does

    logging.getLogger("memsearch.client").warning("memsearch: %s", message)


def starting_wait() -> float:
    """How long ``memsearch serve`` waits for the service it started before answering a call another way: the
    hooks' budget for a first answer (:func:`~memsearch.harness.hooklimits.answer_budget`, 7 s by default). At load 7
    on 2 cores the service's LanceDB import alone can take most of it; a request it has taken may run up to
    ``roots.LOAD_WAIT_S`` plus ``firstbuild.SERVED_ROWS_WAIT_S`` past it."""
    from .hooklimits import answer_budget

    return answer_budget()


class Starting(Exception):
    """The daemon an auto-start is bringing up did not listen within the wait."""


def request(where: IndexLocation, method: str, params: dict, *, wait: float = 0.0, write: bool = False,
            timeout: float | None = None, model: str | None = None):
    """The daemon's result of ``method(**params)``, or None (do it in-process); see the module docstring.
    Raises the typed error of the call itself, :class:`Starting`, or :class:`MemoryBusy` (a write's outcome unknown)."""
    # a stopped or hung service is given up after a probe (the client timeout, 3 s), not SERVED_TIMEOUT_S, each call
    client = Client(where.root, where, timeout=SERVED_TIMEOUT_S if timeout is None else timeout,
                    probe=settings.get("client_timeout"))
    deadline = time.monotonic() + wait
    started = False
    while True:
        try:
            return client.call(method, **params)
        except IndexBuilding:  # the service waited for the first rows of the root it builds: ask again
            if time.monotonic() >= deadline:
                raise
            time.sleep(POLL_S)
            continue
        except DaemonUnavailable as exc:
            if exc.quiet:
                if wait <= 0 or where.remote:
                    return None
                if not daemon_coming(where):
                    if started:
                        return None
                    autostart.ensure(where, model=model)  # this call may come before the server's own warm-up started one
                    started = True
                    continue
                if time.monotonic() >= deadline:
                    raise Starting(str(where.root)) from None
                time.sleep(POLL_S)
                client.path = client.locate()
                continue
            if exc.kind in NOT_RUN or not write:
                if exc.kind not in UNWARNED_ERRORS:
                    _warn(f"{exc}; answering in-process")
                return None
            raise MemoryBusy(f"the memsearch daemon took this write but did not confirm it ({exc}): view the file "
                             "to see whether it was written before writing it again") from None


def _options(box) -> dict:
    return {"writable": box.writable, "budget": box.budget, "encoding": box.encoding,
            "core_budget": box.editor.budget if box.editor is not None else None,
            "model": settings.get("model", box.model)}


def tool(box, name, arguments) -> dict | None:
    """``box``'s (a :class:`~memsearch.harness.tools.ToolBox`) call of tool ``name``, run by the daemon; None: in-process."""
    write = name == "memory" and box.writable
    where = IndexLocation.of(box.root, box.db, resolved=True)
    try:
        return request(where, "tool", {"name": name, "arguments": arguments} | _options(box),
                       wait=max(box.wait, WRITE_WAIT_S) if write and box.wait else box.wait, write=write,
                       model=box.model)
    except Starting:
        if name != "memory_search":
            return None
        raise IndexBuilding("memory_search: the memory service is starting (it opens the index and loads the model)",
                            hint=Hint("wait")) from None


def resource(box, uri: str | None):
    """The MCP resources (``uri`` None) or one resource's text, from the daemon; None: in-process."""
    try:
        answer = request(IndexLocation.of(box.root, box.db, resolved=True), "resource",
                         {"uri": uri, "encoding": box.encoding}, wait=box.wait)
    except Starting:
        return None
    return answer if answer is None or uri is None else answer["text"]


def edit(root, db, command: str, arguments: dict, *, budget: int | None = None, encoding: str | None = None,
         model: str | None = None, wait: float = 0.0) -> dict | None:
    """One memory-tool command carried out by the daemon (``EditResult.to_dict()``); None: in-process.
    ``model``: only a daemon of this model (an explicit ``--model``) may do it."""
    where = IndexLocation.of(root, db)
    params = {"command": command, "arguments": arguments, "budget": budget,
              "encoding": settings.get("encoding", encoding), "model": model}
    try:
        return request(where, "edit", params, wait=wait, write=command != "view")
    except Starting:
        return None
