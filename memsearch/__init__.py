"""memsearch: search-indexed memory for AI agents.

Light at import time: names are loaded on first use, so ``import memsearch`` never
pulls torch or LanceDB until search is actually called.
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

__all__ = [
    "__version__",
    "scan",
    "validate",
    "load_core",
    "list_dir",
    "read",
    "search",
    "MemoryIndex",
    "Hit",
    "IndexReport",
    "edit",
    "Editor",
    "EditResult",
]

_LAZY = {
    "scan": "memsearch.memory.tree",
    "validate": "memsearch.memory.validator",
    "load_core": "memsearch.memory.contract",
    "list_dir": "memsearch.memory.contract",
    "read": "memsearch.memory.contract",
    "search": "memsearch.harness.api",
    "MemoryIndex": "memsearch.engine.index",
    "Hit": "memsearch.engine.search.hits",
    "IndexReport": "memsearch.engine.ingest.sync",
    "edit": "memsearch.harness.edit",
    "Editor": "memsearch.memory.editor",
    "EditResult": "memsearch.memory.editor",
}


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'memsearch' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
