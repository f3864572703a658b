"""Memory tools for agent harnesses: four tool specs as data, one dispatcher, bounded results.

* :data:`TOOLS` holds ``memory_search``, ``memory_read``, ``memory_list`` and ``memory_core``
  as frozen :class:`ToolSpec` (name, a description written for a model, a JSON Schema of
  the arguments); :func:`openai_tools` and :func:`anthropic_tools` export them in the
  exact shapes of those APIs.
* :class:`ToolBox` runs them on one memory root: :meth:`ToolBox.call` validates the
  arguments (a dict, or the JSON string OpenAI sends) and raises typed errors
  (:class:`~memsearch.errors.InvalidArgument`, :class:`~memsearch.errors.PathOutsideRoot`, ...);
  :meth:`ToolBox.dispatch` returns ``{"error": {"type": ..., "message": ...}}`` instead, so a
  harness can hand the result straight back to the model. Unexpected exceptions (bugs)
  still propagate from ``dispatch``.
* Every result is JSON-ready and fits the token budget (tiktoken, default
  :data:`DEFAULT_BUDGET`): a long result is cut and says in ``note`` what was cut and which
  call reads on. ``null`` for an optional argument means "omitted".
* ``memory_search`` is answered by the index's daemon (``memsearch watch``) when one serves it;
  otherwise it opens the index (and so loads the embedding model), lazily, through
  :func:`memsearch.harness.api.open_index`. The tools read memory and never write it.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import threading
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from .arguments import DATE_PATTERN, check_arguments, validator_for
from ..engine.search.args import SearchArgs
from ..location import IndexLocation
from ..service import route
from ..memory.contract import list_dir, load_core, read
from ..memory.document import parse_date
from ..errors import IndexLocked, InvalidArgument, MemoryFileNotFound, MemsearchError, StorageFull, UnknownTool, shown
from ..memory.tokens import count_tokens, encoding_name, get_encoding
from .bounds import MAX_WRITE_REQUEST_CHARS, bounded_error, check_request
from ..memory.tree import resolve_root, safe_path
from .memory_tool import MEMORY_DESCRIPTION, MEMORY_SCHEMA, MEMORY_TOOL_NAME, WRITE_INSTRUCTIONS, run_memory

__all__ = ["ToolSpec", "TOOLS", "TOOL_NAMES", "MEMORY_TOOL", "UnknownTool", "ToolBox", "openai_tools", "anthropic_tools", "validate_arguments",
           "error_object", "DEFAULT_BUDGET", "MEMORY_INSTRUCTIONS"]

#: Tokens one tool result may take by default (JSON as the model sees it).
DEFAULT_BUDGET = 4000
MIN_BUDGET = 200
#: A result repeats at most this much of its query.
QUERY_ECHO_CHARS = 200
MAX_K = 50


@dataclass(frozen=True)
class ToolSpec:
    """One tool: its name, a description for the model, and the JSON Schema of its arguments."""

    name: str
    description: str
    parameters: dict = field(hash=False)

    def schema(self) -> dict:
        return copy.deepcopy(self.parameters)

    def openai(self, api: str = "chat") -> dict:
        """OpenAI function tool: Chat Completions (nested) or Responses (flat) shape."""
        if api == "chat":
            return {"type": "function", "function": {"name": self.name, "description": self.description, "parameters": self.schema()}}
        if api == "responses":  # strict defaults to true there, which forbids optional arguments
            return {"type": "function", "name": self.name, "description": self.description, "parameters": self.schema(), "strict": False}
        raise InvalidArgument(f"unknown OpenAI API {api!r}: choose 'chat' (Chat Completions) or 'responses'")

    def anthropic(self) -> dict:
        """Anthropic Messages API tool definition."""
        return {"name": self.name, "description": self.description, "input_schema": self.schema()}

    @cached_property
    def _validator(self):
        return validator_for(self.parameters)

    def validate(self, arguments: Any) -> dict:
        """``arguments`` (dict, JSON text or None) checked against :attr:`parameters` with jsonschema, cleaned.

        Raises :class:`~memsearch.errors.InvalidArgument` naming the argument and what it accepts.
        """
        return check_arguments(self.name, self.parameters, arguments, self._validator)


def _obj(properties: dict, required: tuple[str, ...] = ()) -> dict:
    schema = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        schema["required"] = list(required)
    return schema


TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "memory_search",
        "Search your long-term memory: the Markdown files below the memory root that are NOT in your context. "
        "Use it before answering about past work, people, projects, decisions or dates that core memory does not cover. "
        "Returns ranked hits, each with the file path, line range, section heading, a snippet, the file's date when it has one, "
        "and the nearest MEMORY.md (title and summary) that explains the folder the hit is in. "
        "To see more of a hit, call memory_read with its path, start_line and end_line.",
        _obj({
            "query": {"type": "string", "minLength": 1, "description": "What to look for: a question or keywords, e.g. 'why did we move billing to Stripe'."},
            "k": {"type": "integer", "minimum": 1, "maximum": MAX_K, "default": 5, "description": "How many hits to return (default 5)."},
            "scope": {"type": "string", "description": "Only search this memory directory and below, relative to the memory root, e.g. 'projects/atlas'."},
            "mode": {"type": "string", "enum": ["hybrid", "vector", "keyword"], "default": "hybrid",
                     "description": "hybrid (default) combines meaning and exact words; keyword for exact names, ids and error codes; vector for paraphrases."},
            "since": {"type": "string", "pattern": DATE_PATTERN, "description": "Only dated files (e.g. notes/2026-08-12.md) on or after this day, YYYY-MM-DD."},
            "until": {"type": "string", "pattern": DATE_PATTERN, "description": "Only dated files on or before this day, YYYY-MM-DD."},
        }, ("query",)),
    ),
    ToolSpec(
        "memory_read",
        "Read one memory file, or a range of its lines, by its path relative to the memory root "
        "(as given by memory_search or memory_list). Lines are 1-based and inclusive. "
        "Long files are cut to fit; the result then says which start_line reads on.",
        _obj({
            "path": {"type": "string", "minLength": 1, "description": "A memory file relative to the memory root, e.g. 'projects/atlas/MEMORY.md'."},
            "start_line": {"type": "integer", "minimum": 1, "description": "First line to read (default 1)."},
            "end_line": {"type": "integer", "minimum": 1, "description": "Last line to read (default: the end of the file)."},
        }, ("path",)),
    ),
    ToolSpec(
        "memory_list",
        "Browse memory one level at a time. Lists a memory directory: its MEMORY.md title and summary, its child "
        "directories (each with the summary of its own MEMORY.md) and its files (title and size in tokens). "
        "Start at '.' (the root) and follow the MEMORY.md summaries toward what you need; then memory_read a file.",
        _obj({
            "path": {"type": "string", "default": ".", "description": "A memory directory relative to the memory root; '.' is the root (default)."},
            "offset": {"type": "integer", "minimum": 0, "default": 0,
                       "description": "Skip this many entries (directories first, then files); use the offset a cut listing suggests."},
        }),
    ),
    ToolSpec(
        "memory_core",
        "Return core memory: every Markdown file directly in the memory root, as placed in your system prompt, "
        "with its size in tokens. Use it to re-read core memory after it may have changed.",
        _obj({}),
    ),
)
TOOL_NAMES = tuple(t.name for t in TOOLS)
_SPECS = {t.name: t for t in TOOLS}
#: The write tool of ``ToolBox(root, writable=True)``: Claude's memory-tool commands (see harness/memory_tool.py).
MEMORY_TOOL = ToolSpec(MEMORY_TOOL_NAME, MEMORY_DESCRIPTION, MEMORY_SCHEMA)


def _specs(writable: bool) -> tuple[ToolSpec, ...]:
    return TOOLS + (MEMORY_TOOL,) if writable else TOOLS


def openai_tools(api: str = "chat", *, writable: bool = False) -> list[dict]:
    """The tools for OpenAI: ``api="chat"`` (Chat Completions) or ``"responses"``; ``writable`` adds ``memory``."""
    return [t.openai(api) for t in _specs(writable)]


def anthropic_tools(*, writable: bool = False) -> list[dict]:
    """The tools for the Anthropic Messages API (``tools=`` of ``messages.create``); ``writable`` adds ``memory``."""
    return [t.anthropic() for t in _specs(writable)]


def error_object(exc: BaseException) -> dict:
    """The JSON error a tool returns instead of raising: ``{"error": {"type", "message"}}``."""
    return {"error": {"type": type(exc).__name__, "message": str(exc)}}


# --- argument validation: see memsearch.harness.arguments --------------------------------------
def validate_arguments(tool: str, arguments: Any) -> dict:
    """Check ``arguments`` (dict, JSON text or None) against the tool's schema; return them cleaned.

    Validation is ``jsonschema`` (Draft 2020-12) against the published schema itself; ``null``
    for an argument means "omitted", and an integer sent as ``5.0`` is passed on as ``5``.
    """
    spec = _SPECS.get(tool) if isinstance(tool, str) else None
    if spec is None:
        raise UnknownTool(f"unknown tool {shown(tool)}: the memory tools are {', '.join(TOOL_NAMES)}")
    return spec.validate(arguments)


MEMORY_INSTRUCTIONS = """\
You have a persistent memory: a directory of Markdown files. Core memory (below) is always in your context.
More memory lives in subdirectories and is NOT loaded; each directory has a MEMORY.md saying what it holds.
Reach it with the memory tools: memory_search finds passages by meaning and keywords, memory_list browses a
directory and the MEMORY.md summaries of its subdirectories, memory_read loads a file or a line range.
Look things up before saying you do not know."""


class ToolBox:
    """The memory tools on one root. ``index``: a :class:`~memsearch.engine.index.MemoryIndex` to use
    (default: opened on the first search with ``open_index(root, db, model)``). ``budget``:
    tokens per result (default :data:`DEFAULT_BUDGET`). ``sync``: index files changed since
    the last search before searching (skipped while a daemon holds the index's writer lock).
    ``writable``: add the ``memory`` tool (writes keeping the tree valid, searchable on return; see
    harness/memory_tool.py); ``core_budget``: its core memory tokens (default ``MEMSEARCH_CORE_BUDGET``).
    ``daemon``: let a running daemon answer searches when no ``index`` is given (default True).
    """

    specs = TOOLS

    def __init__(self, root: str | os.PathLike[str], index=None, budget: int | None = None, *,
                 db: str | os.PathLike[str] | None = None, model: str | None = None,
                 sync: bool = True, encoding: str | None = None, writable: bool = False,
                 core_budget: int | None = None, daemon: bool = True):
        self.root = resolve_root(root)
        self.budget = DEFAULT_BUDGET if budget is None else budget
        if isinstance(self.budget, bool) or not isinstance(self.budget, int) or self.budget < MIN_BUDGET:
            raise InvalidArgument(f"budget must be a whole number of tokens, at least {MIN_BUDGET}; got {budget!r}")
        self.db, self.model, self.sync = db, model, sync
        self.encoding = encoding_name(encoding)
        self._index = index
        self.daemon = daemon and index is None
        self._lock = threading.RLock()  # one search (sync + query) at a time on the shared index
        self._handlers = {"memory_search": self._search, "memory_read": self._read,
                          "memory_list": self._list, "memory_core": self._core}
        self.writable, self.specs, self.editor = writable, _specs(writable), None
        if writable:
            from .edit import open_editor

            self.editor = open_editor(self.root, db=db, index=lambda: self.index, budget=core_budget, guard=self._lock, encoding=self.encoding)

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
        """Run tool ``name``; raises :class:`~memsearch.errors.MemsearchError` subclasses on bad calls."""
        label = shown(name, 60) if not isinstance(name, str) or len(name) > 60 else name
        if name == MEMORY_TOOL_NAME:  # a whole file may travel in its arguments: only size and shape bounded
            arguments = check_request(label, arguments, max_chars=MAX_WRITE_REQUEST_CHARS, max_string=None)
        else:
            arguments = check_request(label, arguments)
        if name == MEMORY_TOOL_NAME:
            if self.editor is None:
                raise UnknownTool(f"the memory tool writes, and these tools are read-only ({', '.join(TOOL_NAMES)}): "
                                  "use ToolBox(root, writable=True) or `memsearch serve ROOT --writable`")
            return run_memory(self.editor, arguments, budget=self.budget, encoding=self.encoding)
        args = validate_arguments(name, arguments)
        return self._handlers[name](**args)

    def dispatch(self, name: str, arguments: Any = None) -> dict:
        """Like :meth:`call`, but a bad call returns :func:`error_object` for the model to read."""
        try:
            return self.call(name, arguments)
        except (MemsearchError, OSError) as exc:  # short, and never the absolute root
            return bounded_error(error_object(exc), str(self.root))

    def warm(self) -> None:
        """Open the index, load the model and sync now, so the first search is fast (not needed
        while a daemon serves the index: its model is warm)."""
        if self.daemon and self._ask("status", {}) is not None:
            return
        with self._lock, self._using() as index:
            self._sync(index)
            index.embedder.embed_query("warm up")

    def system_prompt(self, preamble: str = MEMORY_INSTRUCTIONS) -> str:
        """A system prompt for rules 1 and 3: instructions, full core memory, then the root's
        child memory directories with their MEMORY.md summaries (never cut to the budget)."""
        if self.writable and preamble == MEMORY_INSTRUCTIONS:
            preamble = f"{preamble}\n{WRITE_INSTRUCTIONS}"
        parts = [preamble.strip(), f"<core_memory>\n{load_core(self.root, encoding=self.encoding).render()}\n</core_memory>"]
        dirs = list_dir(self.root, ".", encoding=self.encoding).dirs
        if dirs:
            rows = "\n".join(f"- {d.path}/ ({d.memory_md or 'no MEMORY.md'}): {d.title}" + (f". {d.summary}" if d.summary else "") for d in dirs)
            parts.append(f"<memory_directories>\n{rows}\n</memory_directories>")
        return "\n\n".join(parts)

    # --- budget helpers -------------------------------------------------------------------
    def tokens(self, result: Any) -> int:
        """Tokens of a result as the model sees it (compact JSON)."""
        return count_tokens(json.dumps(result, ensure_ascii=False), self.encoding)

    def _head(self, text: str, limit: int) -> tuple[str, int]:
        """The longest run of whole lines of ``text`` within ``limit`` tokens, and its line count.
        If the first line alone is too long, a token prefix of it (count 0)."""
        kept, used = [], 0
        for line in text.splitlines(keepends=True):
            cost = count_tokens(line, self.encoding)
            if used + cost > limit:
                break
            kept.append(line)
            used += cost
        if kept or not text:
            return "".join(kept), len(kept)
        enc = get_encoding(self.encoding)
        return enc.decode(enc.encode_ordinary(text)[: max(limit, 0)]), 0

    # --- the tools ------------------------------------------------------------------------
    def _ask(self, method: str, params: dict):
        from ..service.client import ask

        return ask(self.root, method, params, db=self.db)

    def _sync(self, index) -> None:
        if self.sync:
            try:
                index.sync(wait=0.0)
            except (IndexLocked, StorageFull):
                pass  # a daemon (or an indexing run) holds the index and keeps it fresh; a full disk: search what is there

    def _search(self, query: str, k: int = 5, scope: str | None = None, mode: str = "hybrid",
                since: str | None = None, until: str | None = None) -> dict:
        if not query.strip():
            raise InvalidArgument("memory_search: the query is empty: give some words to search for")
        full, rel = safe_path(self.root, scope.strip().rstrip("/")) if scope else (self.root, ".")
        if not full.is_dir():
            raise MemoryFileNotFound(f"memory_search: scope {rel!r} is not a directory of the memory: see memory_list(path='.')")
        try:
            since, until = parse_date(since, "since"), parse_date(until, "until")
        except InvalidArgument as exc:
            raise InvalidArgument(f"memory_search: {exc}") from None
        if since and until and since > until:
            raise InvalidArgument(f"memory_search: since {since} is after until {until}: swap them")
        params = dict(query=query, k=k, scope=None if rel == "." else rel, mode=mode, since=since, until=until)
        hits = route.search(IndexLocation.of(self.root, self.db, resolved=True), SearchArgs(**params), model=self.model,
                            local=not self.daemon, sync=self.sync, guard=self._lock, using=self._using)
        items = [{
            "path": h["path"], "start_line": h["start_line"], "end_line": h["end_line"], "heading": h["heading"],
            "date": h["date"], "score": h["score"], "snippet": h["text"],
            "memory_md": None if h["memory_md"] is None else {k: h["memory_md"][k] for k in ("path", "title", "summary")},
        } for h in hits]
        result = {"query": query if len(query) <= QUERY_ECHO_CHARS else query[:QUERY_ECHO_CHARS] + "...", "hits": items}
        if not items:
            result["note"] = "no hits: try other words, mode 'keyword' for exact names, a wider scope, or browse with memory_list"
        return self._fit_search(result)

    def _fit_search(self, result: dict) -> dict:
        if self.tokens(result) <= self.budget:
            return result
        hits = result["hits"]
        full = [h["snippet"] for h in hits]
        for cap in (400, 200, 120, 60, 30, 10):
            for h, text in zip(hits, full):
                h["snippet"] = self._head(text, cap)[0]
                h.pop("cut", None)
                if h["snippet"] != text:
                    h["cut"] = True
            if self.tokens(result) <= self.budget - 80:
                break
        dropped = 0
        while len(hits) > 1 and self.tokens(result) > self.budget - 80:
            hits.pop()
            dropped += 1
        cut = sum(1 for h in hits if h.get("cut"))
        what = [f"{cut} snippet{'s' if cut != 1 else ''} cut (marked \"cut\")"] if cut else []
        if dropped:
            what.append(f"{dropped} lower-ranked hit{'s' if dropped != 1 else ''} dropped")
        result["note"] = (f"{' and '.join(what)} to fit the {self.budget}-token budget. Read a hit in full with "
                          "memory_read(path, start_line, end_line); for other hits, ask for fewer (k) or narrow scope/since/until")
        return result

    def _read(self, path: str, start_line: int | None = None, end_line: int | None = None) -> dict:
        lines = None if start_line is None and end_line is None else (start_line, end_line)
        r = read(self.root, path, lines)
        result = {"path": r.path, "start_line": r.start_line, "end_line": r.end_line, "total_lines": r.total_lines, "text": r.text}
        if self.tokens(result) <= self.budget:
            return result
        room = self.budget - self.tokens(dict(result, text="")) - 90
        kept, n = self._head(r.text, room)
        result["text"] = kept
        if n == 0:  # one line longer than the whole budget
            result["end_line"] = r.start_line
            result["truncated"] = True
            nxt = r.start_line + 1
            result["note"] = (f"line {r.start_line} alone is longer than the {self.budget}-token budget and was cut; "
                              + (f"read on with memory_read(path={r.path!r}, start_line={nxt})" if nxt <= r.end_line else "it is the last line asked for"))
            return result
        end = r.start_line + n - 1
        result.update(end_line=end, truncated=True, next_start_line=end + 1,
                      note=f"cut after line {end} of {r.total_lines} to fit the {self.budget}-token budget; "
                           f"read on with memory_read(path={r.path!r}, start_line={end + 1})")
        return result

    def _list(self, path: str = ".", offset: int = 0) -> dict:
        listing = list_dir(self.root, path, encoding=self.encoding)
        entries = [("dirs", {"path": d.path, "memory_md": d.memory_md, "title": d.title, "summary": d.summary}) for d in listing.dirs]
        entries += [("files", {"path": f.path, "title": f.title, "tokens": f.tokens}) for f in listing.files]
        total = len(entries)
        if offset and offset >= total:
            raise InvalidArgument(f"memory_list: offset {offset} is past the end: {listing.path!r} has {total} entries")
        result = {"path": listing.path, "memory_md": listing.memory_md, "title": listing.title, "summary": listing.summary,
                  "dirs": [], "files": [], "total_entries": total}
        if listing.path == ".":
            result["note"] = "the files here are core memory, already in your context"
        used, shown = self.tokens(result) + 80, 0  # 80: room for the note
        for key, item in entries[offset:]:
            used += self.tokens(item) + 1
            if used > self.budget and shown:
                break
            result[key].append(item)
            shown += 1
        if offset or offset + shown < total:
            result["offset"] = offset
            if offset + shown < total:
                result["truncated"] = True
                result["note"] = (f"showing entries {offset + 1}-{offset + shown} of {total} (directories first) to fit the "
                                  f"{self.budget}-token budget; call memory_list(path={listing.path!r}, offset={offset + shown}) for the rest")
        return result

    def _core(self) -> dict:
        core = load_core(self.root, encoding=self.encoding)
        result = {"files": [{"path": f.path, "tokens": f.tokens} for f in core.files], "total_tokens": core.total_tokens,
                  "encoding": core.encoding, "rendered": core.render()}
        if self.tokens(result) <= self.budget:
            return result
        room = self.budget - self.tokens(dict(result, rendered="")) - 60 - 25 * len(core.files)
        blocks, rest = [], []
        for f in core.files:
            if rest:
                rest.append(f"memory_read(path={f.path!r})")
                continue
            opened = f'<memory_file path="{f.path}">\n'
            body = f.text.rstrip() + "\n"
            kept, n = self._head(body, room - count_tokens(opened + "</memory_file>", self.encoding))
            if kept == body:
                blocks.append(f"{opened}{body}</memory_file>")
                room -= count_tokens(blocks[-1] + "\n\n", self.encoding)
                continue
            if n:
                blocks.append(f"{opened}{kept}</memory_file>")
            rest.append(f"memory_read(path={f.path!r}, start_line={n + 1})" if n else f"memory_read(path={f.path!r})")
        result["rendered"] = "\n\n".join(blocks)
        result["truncated"] = True
        result["note"] = f"core memory cut to fit the {self.budget}-token budget; read the rest with " + ", ".join(rest)
        return result
