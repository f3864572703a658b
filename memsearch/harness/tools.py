"""The memory tools' dispatcher: :class:`ToolBox` runs a call on one memory root, its result within the token budget.

* The tools are data (:mod:`memsearch.harness.specs`: :data:`TOOLS`, :data:`MEMORY_TOOL`, their
  input and output schemas, :func:`openai_tools`, :func:`anthropic_tools`).
* Every call's arguments go through one pipeline (:mod:`memsearch.harness.arguments`: bounds, then
  the tool's JSON Schema), the ``memory`` write tool included; a bad call never loads the model.
* :meth:`ToolBox.call` raises typed errors (:class:`~memsearch.errors.InvalidArgument`,
  :class:`~memsearch.errors.PathOutsideRoot`, ...); :meth:`ToolBox.dispatch` returns
  ``{"error": {"type": ..., "message": ...}}`` instead, so a harness can hand the result straight
  back to the model. Unexpected exceptions (bugs) still propagate from ``dispatch``.
* Every result is JSON-ready and fits the token budget (:mod:`memsearch.harness.budget`, default
  :data:`DEFAULT_BUDGET`): a long result is cut and says in ``note`` what was cut and which call
  reads on. ``null`` for an optional argument means "omitted".
* ``memory_search`` is answered by the index's daemon (``memsearch watch``) when one serves it;
  otherwise it opens the index (and so loads the embedding model), lazily, through
  :func:`memsearch.harness.api.open_index`. Only the ``memory`` tool writes.
"""

from __future__ import annotations

import contextlib
import os
import threading
from typing import Any

from ..engine.search.args import check_search
from ..errors import InvalidArgument, MemsearchError, NotAMemoryRoot, UnknownTool
from ..location import IndexLocation
from ..memory.contract import list_dir, load_core, read
from ..memory.root import dir_identity
from ..memory.tree import resolve_root
from ..service import autostart, firstbuild, route
from . import forward
from .bounds import bounded_error
from .budget import DEFAULT_BUDGET, MIN_BUDGET, Budget
from .memory_tool import MEMORY_TOOL_NAME, WRITE_INSTRUCTIONS, run_memory
from .specs import (
    MEMORY_INSTRUCTIONS,
    MEMORY_TOOL,
    TOOL_NAMES,
    TOOLS,
    ToolSpec,
    anthropic_tools,
    openai_tools,
    spec_of,
    specs_for,
    validate_arguments,
)

__all__ = [
    "ToolSpec",
    "TOOLS",
    "TOOL_NAMES",
    "MEMORY_TOOL",
    "UnknownTool",
    "ToolBox",
    "openai_tools",
    "anthropic_tools",
    "validate_arguments",
    "error_object",
    "DEFAULT_BUDGET",
    "MIN_BUDGET",
    "MEMORY_INSTRUCTIONS",
]

#: Who reads the tools' errors (see :data:`memsearch.errors.HINTS`): a model, which has the tools, not a shell.
TOOLS_AUDIENCE = "tools"
#: A result repeats at most this much of its query.
QUERY_ECHO_CHARS = 200
#: The note of a search answered while the memory is still being indexed (some hits ``partial``).
PARTIAL_NOTE = (
    "partial results: the memory is still being indexed, so the hits marked partial were found by their words "
    "only, not yet by meaning; search again in a few seconds for a complete answer"
)
#: The note of a search with no hit on a read replica whose writer has committed no build of the index yet.
UNBUILT_NOTE = (
    "no hits yet: this memory's index has not been built yet (its writer has committed nothing), so no search finds "
    "anything until it is; browse with memory_list and memory_read meanwhile"
)
#: The note of a search with no hit while the memory is still being indexed (``{embedded}`` of ``{files}`` files).
BUILDING_NOTE = (
    "no hits yet: the memory is still being indexed ({embedded:,} of {files:,} files done); call memory_search again "
    "in a few seconds, or browse with memory_list"
)


def error_object(exc: BaseException) -> dict:
    """The JSON error a tool returns instead of raising: ``{"error": {"type", "message"}}``."""
    return {"error": {"type": type(exc).__name__, "message": str(exc)}}


class ToolBox:
    """The memory tools on one root. ``index``: a :class:`~memsearch.engine.index.MemoryIndex` to use
    (default: opened on the first search with ``open_index(root, db, model)``). ``budget``:
    tokens per result (default :data:`DEFAULT_BUDGET`). ``sync``: index files changed since
    the last search before searching (skipped while a daemon holds the index's writer lock).
    ``writable``: add the ``memory`` tool (writes keeping the tree valid, searchable on return; see
    harness/memory_tool.py); ``core_budget``: its core memory tokens (default ``MEMSEARCH_CORE_BUDGET``).
    ``daemon``: let a running daemon run the calls when no ``index`` is given (default True; see :mod:`.forward`).
    ``wait``: seconds to wait for a daemon an auto-start is bringing up (``memsearch serve``, a thin client of it).
    ``on_change``: the writes' read-your-writes (default :class:`~memsearch.harness.edit.IndexSync`).
    """

    specs = TOOLS

    def __init__(
        self,
        root: str | os.PathLike[str],
        index=None,
        budget: int | None = None,
        *,
        db: str | os.PathLike[str] | None = None,
        model: str | None = None,
        sync: bool = True,
        encoding: str | None = None,
        writable: bool = False,
        core_budget: int | None = None,
        daemon: bool = True,
        on_change=None,
        wait: float = 0.0,
    ):
        self.root = resolve_root(root)
        self.cut = Budget(budget, encoding)
        self.budget, self.encoding = self.cut.limit, self.cut.encoding
        self.db, self.model, self.sync = db, model, sync
        self._index = index
        self.daemon = daemon and index is None
        self.wait = wait
        self._lock = threading.RLock()  # one sync (a search's read-your-writes, a write) at a time
        self._handlers = {
            "memory_search": self._search,
            "memory_read": self._read,
            "memory_list": self._list,
            "memory_core": self._core,
            MEMORY_TOOL_NAME: self._memory,
        }
        self._fits = {"memory_search": lambda result, args: self.cut.search(result, by_date=args.get("mode") == "timeline"),
                      "memory_read": lambda result, args: self.cut.read(result),
                      MEMORY_TOOL_NAME: lambda result, args: self.cut.memory(result)}
        self.writable, self.specs, self.editor = writable, specs_for(writable), None
        if writable:
            from .edit import open_editor

            self.editor = open_editor(
                self.root, db=db, index=lambda: self.index, budget=core_budget, guard=self._lock, encoding=self.encoding,
                on_change=on_change,
            )

    # --- entry points ---------------------------------------------------------------------
    @property
    def index(self):
        """The search index: the one given, else the process-wide open one (opened, and the model
        loaded, on first use; the process's LRU of open indexes may close it between calls)."""
        if self._index is not None:
            return self._index
        from .api import open_index

        return open_index(self.root, db=self.db, model=self.model)

    @contextlib.contextmanager
    def _using(self):
        """The index, kept open for the ``with`` block (see :func:`memsearch.harness.api.using_index`)."""
        if self._index is not None:
            yield self._index
            return
        from .api import using_index

        with using_index(self.root, db=self.db, model=self.model) as index:
            yield index

    def call(self, name: str, arguments: Any = None) -> dict:
        """Run tool ``name``; raises :class:`~memsearch.errors.MemsearchError` subclasses on bad calls.

        The one path of every call: the tool's spec, its arguments through the pipeline (bounds, then
        its schema), its handler, then its budget cutter and the cut that holds every result to the budget.
        An error's hint is worded for the model (``memory_list(path=...)``, never a shell command).
        While a daemon serves the index, it runs the whole call (:mod:`.forward`)."""
        try:
            if self.daemon:
                answer = forward.tool(self, name, arguments)
                if answer is not None:
                    return answer
            spec = spec_of(name, writable=self.writable)
            args = spec.validate(arguments)
            result = self._handlers[spec.name](**args)
        except MemsearchError as exc:  # the model reads it: its hint names the tools, not shell commands
            exc.audience = TOOLS_AUDIENCE
            raise
        except OSError:  # a file call failing because the root itself went away: say that, naming the root
            gone = self._root_gone()
            if gone is None:
                raise
            gone.audience = TOOLS_AUDIENCE
            raise gone from None
        fit = self._fits.get(spec.name)
        return self.cut.fit(fit(result, args) if fit else result)

    def _root_gone(self) -> NotAMemoryRoot | None:
        """The error of a memory root removed (or replaced by a file) since this toolbox opened it, else None."""
        if dir_identity(self.root) is not None:
            return None
        try:
            resolve_root(self.root)
        except NotAMemoryRoot as exc:
            return exc
        return None

    def dispatch(self, name: str, arguments: Any = None) -> dict:
        """Like :meth:`call`, but a bad call returns :func:`error_object` for the model to read."""
        try:
            return self.call(name, arguments)
        except (MemsearchError, OSError) as exc:  # short, and never the absolute root
            return bounded_error(error_object(exc), str(self.root))

    def warm(self) -> None:
        """Open the index, load the model and sync now, so the first search is fast (not needed
        while a daemon serves the index: its model is warm). With a daemon allowed, one is started
        for the calls that follow (:mod:`..service.autostart`), and on a tree never indexed this
        sync writes the files' text rows only, which that daemon embeds (:mod:`..service.firstbuild`):
        the first search answers partial keyword hits instead of waiting for the whole embedding.
        A thin client (``wait``: ``memsearch serve``) only starts that daemon: its calls go there."""
        if self.daemon and self._ask("status", {}) is not None:
            return
        where = IndexLocation.of(self.root, self.db, resolved=True)
        if self.daemon and self.sync:
            autostart.ensure(where, model=self.model)
            if self.wait and firstbuild.daemon_coming(where):
                return
        with self._lock, self._using() as index:
            if self.sync:
                route.sync_quietly(index, defer=self.daemon and firstbuild.daemon_coming(where))
            index.embedder.embed_query("warm up")

    def system_prompt(self, preamble: str = MEMORY_INSTRUCTIONS) -> str:
        """A system prompt for rules 1 and 3: instructions, full core memory, then the root's
        child memory directories with their MEMORY.md summaries (never cut to the budget)."""
        if self.writable and preamble == MEMORY_INSTRUCTIONS:
            preamble = f"{preamble}\n{WRITE_INSTRUCTIONS}"
        parts = [
            preamble.strip(),
            f"<core_memory>\n{load_core(self.root, encoding=self.encoding).render()}\n</core_memory>",
        ]
        dirs = list_dir(self.root, ".", encoding=self.encoding).dirs
        if dirs:
            rows = "\n".join(
                f"- {d.path}/ ({d.memory_md or 'no MEMORY.md'}): {d.title}" + (f". {d.summary}" if d.summary else "")
                for d in dirs
            )
            parts.append(f"<memory_directories>\n{rows}\n</memory_directories>")
        return "\n\n".join(parts)

    def tokens(self, result: Any) -> int:
        """Tokens of a result as the model sees it (compact JSON)."""
        return self.cut.tokens(result)

    # --- the tools ------------------------------------------------------------------------
    def _ask(self, method: str, params: dict):
        from ..service.client import ask

        return ask(self.root, method, params, db=self.db)

    def _search(
        self,
        query: str,
        k: int = 5,
        scope: str | None = None,
        mode: str = "hybrid",
        since: str | None = None,
        until: str | None = None,
    ) -> dict:
        try:
            args = check_search(self.root, query, k, scope, mode, since, until, scope_must_exist=True)
        except MemsearchError as exc:
            raise type(exc)(f"memory_search: {exc.text}", hint=exc.hint) from None
        hits = route.search(IndexLocation.of(self.root, self.db, resolved=True), args, model=self.model,
                            local=not self.daemon, sync=self.sync, guard=self._lock, using=self._using)
        items = [
            {
                "path": h["path"],
                "start_line": h["start_line"],
                "end_line": h["end_line"],
                "heading": h["heading"],
                "date": h["date"],
                "score": h["score"],
                "snippet": h["text"],
                "memory_md": None
                if h["memory_md"] is None
                else {k: h["memory_md"][k] for k in ("path", "title", "summary")},
                "stale": bool(h.get("stale", False)),
                "partial": bool(h.get("partial", False)),
            }
            for h in hits
        ]
        result = {"query": query if len(query) <= QUERY_ECHO_CHARS else query[:QUERY_ECHO_CHARS] + "...", "hits": items}
        building = getattr(hits, "indexing", None)
        if not items and building and building.get("unbuilt"):
            result["note"] = UNBUILT_NOTE
        elif not items and building:
            result["note"] = BUILDING_NOTE.format(**building)
        elif not items:
            dates = ", a wider since/until (only dated files match them)" if since or until else ""
            result["note"] = (
                f"no hits: try other words, mode 'keyword' for exact names, a wider scope{dates}, or browse with "
                "memory_list"
            )
        elif any(h["partial"] for h in items):
            result["note"] = PARTIAL_NOTE
        return result

    def _read(self, path: str, start_line: int | None = None, end_line: int | None = None) -> dict:
        if start_line is not None and end_line is not None and end_line < start_line:
            raise InvalidArgument(f"memory_read: end_line {end_line} is before start_line {start_line}: lines are "
                                  "1-based and inclusive; give start_line <= end_line, or leave end_line out")
        lines = None if start_line is None and end_line is None else (start_line, end_line)
        try:
            r = read(self.root, path, lines)
        except InvalidArgument as exc:  # a start past the end: the model's argument is start_line
            raise InvalidArgument(f"memory_read: {exc.text.replace('start at a line', 'give a start_line')}",
                                  hint=exc.hint) from None
        return {
            "path": r.path,
            "start_line": r.start_line,
            "end_line": r.end_line,
            "total_lines": r.total_lines,
            "text": r.text,
        }

    def _list(self, path: str = ".", offset: int = 0) -> dict:
        listing = list_dir(self.root, path, encoding=self.encoding)
        entries = [
            ("dirs", {"path": d.path, "memory_md": d.memory_md, "title": d.title, "summary": d.summary})
            for d in listing.dirs
        ]
        entries += [("files", {"path": f.path, "title": f.title, "tokens": f.tokens}) for f in listing.files]
        if offset and offset >= len(entries):
            raise InvalidArgument(
                f"memory_list: offset {offset} is past the end: {listing.path!r} has {len(entries)} entries"
            )
        result = {
            "path": listing.path,
            "memory_md": listing.memory_md,
            "title": listing.title,
            "summary": listing.summary,
            "dirs": [],
            "files": [],
            "total_entries": len(entries),
        }
        if listing.path == ".":
            result["note"] = "the files here are core memory, already in your context"
        return self.cut.listing(result, entries, offset)  # paged by offset: the listing is built to the budget

    def _core(self) -> dict:
        core = load_core(self.root, encoding=self.encoding)
        result = {
            "files": [{"path": f.path, "tokens": f.tokens} for f in core.files],
            "total_tokens": core.total_tokens,
            "encoding": core.encoding,
            "rendered": core.render(),
        }
        return self.cut.core(result, core.files)

    def _memory(self, **arguments) -> dict:
        return run_memory(self.editor, arguments)
