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
]

_LAZY = {
    "scan": "memsearch.tree",
    "validate": "memsearch.validator",
    "load_core": "memsearch.contract",
    "list_dir": "memsearch.contract",
    "read": "memsearch.contract",
    "search": "memsearch.index",
    "MemoryIndex": "memsearch.index",
    "Hit": "memsearch.index",
    "IndexReport": "memsearch.indexer",
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
