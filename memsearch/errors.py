"""Every error memsearch raises on purpose.

The library raises these typed errors; only the edges turn them into messages. Each
message says what went wrong *and how to fix it*. Where the fix is a step the caller takes
(list a directory, rebuild the index), the error carries it as a structured :class:`Hint`
rather than as text, and each edge words it for its audience (:data:`AUDIENCES`): the CLI
names commands (``memsearch ls ROOT notes``), the tools and MCP name the tools the model has
(``memory_list(path='notes')``). ``str(err)`` is worded for :attr:`MemsearchError.audience`
(the CLI's by default); an edge sets it, or calls :meth:`MemsearchError.render`.
"""

from __future__ import annotations

__all__ = [
    "MemsearchError",
    "Hint",
    "AUDIENCES",
    "HINTS",
    "NotAMemoryRoot",
    "PathOutsideRoot",
    "NotMemoryFile",
    "MemoryFileNotFound",
    "InvalidArgument",
    "UnknownTool",
    "BadToolCall",
    "TokenizerUnavailable",
    "ModelUnavailable",
    "UnknownModel",
    "IndexMismatch",
    "IndexLocked",
    "IndexDamaged",
    "IndexBuilding",
    "NoIndex",
    "MemoryUnreadable",
    "StorageFull",
    "RemoteStoreError",
    "BucketNotFound",
    "StoreAccessDenied",
    "StoreUnreachable",
    "ExtraNotInstalled",
    "UnsupportedPlatform",
    "shown",
    "shell_word",
    "naming_root",
    "MemoryFileExists",
    "EditRefused",
    "CoreBudgetExceeded",
    "NoUniqueMatch",
    "MemoryBusy",
    "DaemonUnavailable",
    "DaemonFailed",
    "SyncDeferred",
    "ClientConfigError",
]


#: Longest rendering of a user value inside an error message (a 1 MB path is never echoed back).
SHOWN_CHARS = 80
#: Who reads an error: a shell user (``cli``: commands) or a model through the tools or MCP (``tools``).
AUDIENCES = ("cli", "tools")
#: Each hint, worded for each audience. ``{path}``: the memory path it concerns, relative to the root (for
#: ``bucket``, the bucket's name; for ``rebuild_model``, the model's).
HINTS: dict[str, dict[str, str]] = {
    "list": {"cli": "see what is there with `memsearch ls ROOT {path}`",
             "tools": "see what is there with memory_list(path={path!r})"},
    "list_dir": {"cli": "it is a directory: list it with `memsearch ls ROOT {path}`",
                 "tools": "it is a directory: list it with memory_list(path={path!r})"},
    "rebuild": {"cli": "rebuild it with `memsearch index ROOT --rebuild`",
                "tools": "memory_search cannot answer until whoever runs memsearch rebuilds the index "
                         "(`memsearch index ROOT --rebuild`); memory_list and memory_read still work"},
    "rebuild_model": {"cli": "search with the model it was built with (--model, or MEMSEARCH_MODEL), or rebuild it "
                             "for this one with `memsearch index ROOT --model {path}`",
                      "tools": "memory_search cannot answer until whoever runs memsearch starts it with the index's "
                               "model, or rebuilds the index for this one (`memsearch index ROOT --model {path}`); "
                               "memory_list and memory_read still work"},
    "rebuild_db": {"cli": "rebuild it with `memsearch index ROOT --rebuild`, giving the same --db",
                   "tools": "memory_search cannot answer until whoever runs memsearch rebuilds the index "
                            "(`memsearch index ROOT --rebuild`); memory_list and memory_read still work"},
    "bucket": {"cli": "create it (e.g. `aws s3 mb s3://{path}`) or fix the address",
               "tools": "memory_search cannot answer until whoever runs memsearch creates the bucket or fixes the "
                        "index address; memory_list and memory_read still work"},
    "index": {"cli": "build it with `memsearch index ROOT`",
              "tools": "memory_search builds it on its first call; memory_list and memory_read work now"},
    "busy": {"cli": "wait for it to finish (--wait SECONDS), or stop it (`memsearch stop ROOT` for a daemon); "
                    "searches keep working meanwhile",
             "tools": "try again in a moment; memory_search, memory_list and memory_read keep working meanwhile"},
    "resave": {"cli": "re-save it as UTF-8 first",
               "tools": "memory_read(path={path!r}) shows its text (each bad byte as U+FFFD); to change it, delete it "
                        "and create it again with the text it should hold"},
    "status": {"cli": "see `memsearch status ROOT`",
               "tools": "memory_search finds it once the index catches up; memory_read reads it now"},
    "wait": {"cli": "search again in a few seconds (`memsearch status ROOT` shows the progress)",
             "tools": "memory_search answers within seconds, once the files' text is in the index; "
                      "memory_list and memory_read work now"},
    "root_gone": {"cli": "pass the path of a memory directory",
                  "tools": "it was removed or moved after memsearch started serving it, so no memory tool can work "
                           "until the user restores that folder or restarts memsearch with another memory root: "
                           "tell the user"},
    "writable": {"cli": "use ToolBox(root, writable=True) or `memsearch serve ROOT --writable`",
                 "tools": "whoever runs this harness can enable writing (ToolBox(root, writable=True) or "
                          "`memsearch serve "
                          "ROOT --writable`); meanwhile use memory_list, memory_read and memory_search"},
}


def shell_word(value) -> str:
    """``value`` (a memory root, a memory path) as a shell user types it in a command, quoted when it needs it
    (``shlex.quote``: a space, a quote); ``ROOT`` for a root not known (None). Every command a CLI message names
    goes through here, so it can be pasted into a shell as it is shown."""
    import shlex

    return "ROOT" if value is None else shlex.quote(str(value))


def naming_root(message: str, root, db=None) -> str:
    """``message`` with the ``ROOT`` placeholder of its ``memsearch COMMAND ROOT`` hints replaced by ``root``
    (:func:`shell_word`), followed by ``--db DB`` when the command was given one (an ``s3://`` index: without
    it the hint would act on ``ROOT/.memsearch``); unchanged when ``root`` is None (not known)."""
    if root is None:
        return message
    import re

    where = shell_word(root) + (f" --db {shell_word(db)}" if db else "")
    return re.sub(r"(`memsearch [a-z-]+ )ROOT\b", lambda m: m.group(1) + where, message)


class Hint:
    """The next step an error suggests, as data: ``action`` (a key of :data:`HINTS`) and the ``path`` it concerns;
    ``root`` (and ``db``, an index not at ``ROOT/.memsearch``): the memory root its commands act on, when the
    library knows it, so that a hint raised from the Python API names it (``memsearch stop /my/memory``) instead of
    the ``ROOT`` placeholder only the CLI would fill in."""

    __slots__ = ("action", "path", "root", "db")

    def __init__(self, action: str, path: str = ".", *, root=None, db=None):
        if action not in HINTS:
            raise KeyError(f"unknown hint {action!r}")
        self.action, self.path = action, path if len(path) <= SHOWN_CHARS else "."
        self.root = None if root is None else str(root)
        self.db = None if db is None or root is None else str(db)

    def render(self, audience: str) -> str:
        words = HINTS[self.action]
        if audience != "cli" and audience in words:
            return words[audience].format(path=self.path)
        # a path in a command, as a shell takes it; ROOT: the root, where known
        return naming_root(words["cli"].format(path=shell_word(self.path)), self.root, self.db)

    def to_dict(self) -> dict:
        known = {name: getattr(self, name) for name in ("root", "db") if getattr(self, name) is not None}
        return {"action": self.action, "path": self.path} | known

    @classmethod
    def from_dict(cls, data) -> Hint | None:
        """The hint ``to_dict`` wrote (e.g. across the daemon's socket), or None for anything else."""
        if not isinstance(data, dict) or data.get("action") not in HINTS or not isinstance(data.get("path", "."), str):
            return None
        where = {name: data[name] for name in ("root", "db") if isinstance(data.get(name), str)}
        return cls(data["action"], data.get("path", "."), **where)

    def __repr__(self) -> str:
        where = "".join(f", {name}={getattr(self, name)!r}" for name in ("root", "db") if getattr(self, name) is not None)
        return f"Hint({self.action!r}, {self.path!r}{where})"


class MemsearchError(Exception):
    """Base class of every error memsearch raises on purpose. ``hint``: the next step, as a :class:`Hint`
    (rendered after the message, for :attr:`audience`)."""

    exit_code = 2
    audience = "cli"

    def __init__(self, *args, hint: Hint | None = None):
        super().__init__(*args)
        self.hint = hint

    @property
    def text(self) -> str:
        """What went wrong, without the hint."""
        return super().__str__()

    def render(self, audience: str | None = None) -> str:
        """The message for ``audience`` (default :attr:`audience`): what went wrong, then the hint in its words."""
        hint = getattr(self, "hint", None)
        return f"{self.text}: {hint.render(audience or self.audience)}" if hint is not None else self.text

    def __str__(self) -> str:
        return self.render()


class InvalidArgument(MemsearchError, ValueError):
    """An argument has the wrong type, range or form."""


class UnknownTool(InvalidArgument):
    """A tool name that is not one of the memory tools."""


class BadToolCall(InvalidArgument):
    """A memory-tool call that lacks an argument its command needs (``missing``) or gives some it does not take
    (``unknown``), by the tool's argument names; the message names them so, and an edge whose user spells them
    otherwise (``memsearch edit``: ``--text``, ``PATH``) words it from these fields (empty when rebuilt from a
    server's reply, which carries the message only)."""

    def __init__(self, message: str, *, command: str = "", missing: str | None = None, unknown: tuple[str, ...] = ()):
        super().__init__(message)
        self.command, self.missing, self.unknown = command, missing, unknown


class NotAMemoryRoot(MemsearchError):
    """The memory root is missing or is not a directory."""


class PathOutsideRoot(MemsearchError):
    """A path escapes the memory root (``..``, an absolute path, or a link leading out)."""


class NotMemoryFile(MemsearchError):
    """A path inside the root that is not external memory (hidden, foreign, not Markdown, core)."""


class MemoryFileNotFound(MemsearchError, FileNotFoundError):
    """A memory path that does not exist."""


class TokenizerUnavailable(MemsearchError):
    """A tiktoken encoding that cannot be loaded without the network."""


class ModelUnavailable(MemsearchError):
    """An embedding model that cannot be loaded here (needs the hub, or a missing package)."""


class UnknownModel(MemsearchError, KeyError):
    """A model name that is neither in models.toml nor a local directory."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else ""


class IndexMismatch(MemsearchError):
    """The index on disk was built with other parameters (model, chunker, schema)."""


class IndexLocked(MemsearchError):
    """Another live process holds the index's writer lock."""


class IndexDamaged(IndexMismatch):
    """The index on disk is damaged (files missing, truncated or garbled); it is derived data: rebuild it."""

    def __init__(self, message: str, *, reason: str | None = None, hint: Hint | None = None):
        super().__init__(message, hint=hint)
        #: What is wrong, without the fix (what a rebuild logs and reports): the message, or the part of it given.
        self.reason = reason or message


class IndexBuilding(MemsearchError):
    """A search of an index whose first build has not written any row yet (a tree never indexed): it
    answers within seconds, with keyword hits flagged ``partial`` until the files are embedded."""


class NoIndex(MemsearchError):
    """An index that was never built (a root never indexed, a ``--db`` where none is): nothing to check in it."""


class MemoryUnreadable(MemsearchError, PermissionError):
    """A memory file or directory that exists but cannot be read (permissions, not a regular file)."""


class StorageFull(MemsearchError, OSError):
    """The disk holding the index is full (ENOSPC) or over quota; the previous index stays searchable."""


class UnsupportedPlatform(MemsearchError):
    """The operating system lacks what memsearch needs (Windows: no ``flock`` for the index's writer lock)."""




def shown(value: object, limit: int = SHOWN_CHARS) -> str:
    """``repr(value)`` cut to about ``limit`` characters, saying how long it was."""
    text = repr(value)
    if len(text) <= limit:
        return text
    size = len(value) if isinstance(value, (str, bytes, list, dict, tuple)) else len(text)
    return f"{text[:limit]}... ({size:,} characters)"


class MemoryFileExists(MemsearchError, FileExistsError):
    """A memory write whose target already exists (``create``, or the new path of ``rename``)."""


class EditRefused(MemsearchError):
    """A memory write refused because the tree would stop being valid Agent Memory; nothing was written."""


class CoreBudgetExceeded(EditRefused):
    """A write that would take core memory past its token budget; nothing was written."""

    def __init__(self, message: str, *, tokens: int = 0, budget: int = 0):
        super().__init__(message)
        self.tokens, self.budget = tokens, budget


class NoUniqueMatch(InvalidArgument):
    """``str_replace``: ``old_str`` occurs nowhere, or more than once (``lines`` says where)."""

    def __init__(self, message: str, *, lines: tuple[int, ...] = ()):
        super().__init__(message)
        self.lines = lines


class MemoryBusy(MemsearchError):
    """Another writer held the memory root's write lock for longer than the wait allowed."""


class RemoteStoreError(MemsearchError):
    """An object store (``s3://``) holding an index cannot be used as configured."""


class BucketNotFound(RemoteStoreError):
    """The bucket of an ``s3://`` index does not exist."""


class StoreAccessDenied(RemoteStoreError):
    """The object store refused the credentials (missing, wrong, or lacking permission)."""


class StoreUnreachable(RemoteStoreError):
    """The object store's endpoint does not answer (wrong URL, down, or no network)."""


class ExtraNotInstalled(MemsearchError):
    """An optional feature whose package is not installed (the message gives the exact install command)."""


class DaemonUnavailable(MemsearchError):
    """No daemon answered a request: none listens (``quiet``), or it timed out, died or refused.

    Clients catch it and do the work in-process; it never reaches a user as an error. ``kind``: the
    protocol's refusal (``UnknownMethod``, ...) or ``NotConnected``, when the daemon certainly ran nothing.
    """

    def __init__(self, message: str, *, quiet: bool = False, kind: str | None = None):
        super().__init__(message)
        self.quiet = quiet
        self.kind = kind


class DaemonFailed(MemsearchError):
    """The daemon could not be started, or it failed while starting (the message names its log)."""


class SyncDeferred(MemsearchError):
    """The daemon could not index a write now (stopping, or a failed sync it retries); it indexes it later."""


class ClientConfigError(MemsearchError):
    """An agent client's configuration file (MCP servers, Claude Code settings) that memsearch cannot update."""
