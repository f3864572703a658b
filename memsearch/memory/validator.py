"""The Agent Memory validator: spec errors and size warnings for one memory root."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from .. import settings
from ..errors import InvalidArgument, MemsearchError
from .document import decode
from .tokens import count_tokens
from .tree import INDEX_NAME, empty_index, misnamed_index, printable, read_memory, scan

__all__ = ["Issue", "ValidationReport", "validate", "core_budget", "DEFAULT_WINDOW_SHARE"]

#: The spec's size guidance: under 30,000 tokens of core memory (for a 200k window) ...
#: (``MEMSEARCH_CORE_BUDGET`` configures another budget).
#: ... or under 15 percent of the context window when its size is known.
DEFAULT_WINDOW_SHARE = 0.15


@dataclass(frozen=True)
class Issue:
    """One finding: ``code`` is stable for machines, ``message`` says how to fix it."""

    code: str
    path: str
    message: str

    def to_dict(self) -> dict:
        return {"code": self.code, "path": self.path, "message": self.message}


@dataclass(frozen=True)
class ValidationReport:
    root: str
    errors: tuple[Issue, ...]
    warnings: tuple[Issue, ...]
    core_tokens: int
    core_budget: int
    memory_dirs: tuple[str, ...]
    foreign_dirs: tuple[str, ...] = field(default=())

    @property
    def valid(self) -> bool:
        return not self.errors

    def to_dict(self) -> dict:
        return {
            "valid": self.valid,
            "errors": [e.to_dict() for e in self.errors],
            "warnings": [w.to_dict() for w in self.warnings],
            "core_tokens": self.core_tokens,
            "core_budget": self.core_budget,
            "memory_dirs": list(self.memory_dirs),
            "foreign_dirs": list(self.foreign_dirs),
        }


#: What a context window (``window``, ``validate --window``) and its share for core memory accept.
WINDOW = settings.Rule(settings.whole(1), "a whole number of tokens, at least 1")
SHARE = settings.Rule(settings.over(0.0, 1.0), "a number more than 0 and at most 1")


def core_budget(budget: int | None = None, *, window: int | None = None, share: float | None = None) -> int:
    """Token budget of core memory: explicit tokens, else ``share`` (15%) of ``window``, else
    ``MEMSEARCH_CORE_BUDGET``, else 30,000."""
    if budget is not None:
        return settings.get("core_budget", budget, label="budget")
    if window is not None:
        window = settings.parsed(window, WINDOW, "window")
        share = DEFAULT_WINDOW_SHARE if share is None else settings.parsed(share, SHARE, "share")
        return max(1, int(window * share))
    if share is not None:
        raise InvalidArgument("a budget share needs a context window size: pass window= as well")
    return settings.get("core_budget")


def validate(
    root: str | os.PathLike[str],
    *,
    budget: int | None = None,
    window: int | None = None,
    share: float | None = None,
    encoding: str | None = None,
    foreign=None,
) -> ValidationReport:
    """Check a memory root against the Agent Memory spec. Reports every violation.

    Errors: ``missing-root-index`` (path ``.``), ``missing-index`` (a memory directory without
    ``MEMORY.md``). Warnings: ``core-over-budget``, ``not-utf8``, ``unreadable``,
    ``empty-index``, ``misnamed-index`` (e.g. ``memory.md``), ``link-skipped``, ``special-file``
    (a FIFO, socket or device node, skipped), ``bad-name`` (a Markdown file or directory whose name is
    not valid UTF-8: skipped whole, never indexed, listed or read; its path shows ``\\xNN`` escapes).
    """
    limit = core_budget(budget, window=window, share=share)
    tree = scan(root, foreign=foreign)
    errors: list[Issue] = []
    warnings: list[Issue] = []
    if not tree.has_root_index:
        errors.append(
            Issue(
                "missing-root-index",
                ".",
                f"the memory root has no {INDEX_NAME}: create {INDEX_NAME} in the root describing what this memory holds",
            )
        )
    for d in tree.dirs_missing_index:
        errors.append(
            Issue(
                "missing-index",
                d,
                f"memory directory {d!r} has no {INDEX_NAME}: create {d}/{INDEX_NAME} describing its files and subdirectories",
            )
        )

    core_tokens = 0
    for rel in tree.core_files + tree.external_files:
        try:
            raw = read_memory(tree.root, rel, foreign=foreign)[0]
        except MemsearchError as err:
            warnings.append(Issue("unreadable", rel, f"cannot read it: {err}"))
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as err:
            warnings.append(
                Issue("not-utf8", rel, f"{rel!r} is not valid UTF-8 (byte {err.start}): re-save it as UTF-8")
            )
            text = decode(raw)
        name = rel.rsplit("/", 1)[-1]
        if misnamed_index(name):
            warnings.append(
                Issue(
                    "misnamed-index",
                    rel,
                    f"{rel!r} looks like an index but the name is case-sensitive: rename it to {INDEX_NAME}",
                )
            )
        if empty_index(rel, text):
            warnings.append(
                Issue(
                    "empty-index",
                    rel,
                    f"{rel!r} is empty: describe the directory and its files so an agent can discover them",
                )
            )
        if "/" not in rel:
            core_tokens += count_tokens(text, encoding)
    if core_tokens > limit:
        warnings.append(
            Issue(
                "core-over-budget",
                ".",
                f"core memory is {core_tokens:,} tokens, over the budget of {limit:,}: "
                f"move detail from root files into subdirectories (external memory)",
            )
        )
    for directory, reason in tree.unreadable:
        warnings.append(
            Issue(
                "unreadable",
                directory,
                f"cannot list directory {directory!r} ({reason}): its memory is not "
                "indexed or listed; fix its permissions",
            )
        )
    for special in tree.special:
        warnings.append(
            Issue(
                "special-file",
                special,
                f"{special!r} is a FIFO, socket or device, never memory: it is "
                "skipped; remove it or move it out of the memory root",
            )
        )
    for bad in tree.unnamed:
        name = printable(bad)
        warnings.append(
            Issue(
                "bad-name",
                name,
                f"'{name}' has a name that is not valid UTF-8, so it is not memory: "
                "it is never indexed, listed or read (nor anything below it): rename it",
            )
        )
    for link in tree.skipped_links:
        warnings.append(
            Issue(
                "link-skipped",
                link,
                f"{link!r} is a link to a directory or out of the root, which memsearch never follows: move the content inside the root",
            )
        )
    return ValidationReport(
        root=str(tree.root),
        errors=tuple(errors),
        warnings=tuple(warnings),
        core_tokens=core_tokens,
        core_budget=limit,
        memory_dirs=tree.memory_dirs,
        foreign_dirs=tree.foreign_dirs,
    )
