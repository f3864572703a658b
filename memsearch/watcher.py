"""Public home of the watcher API (``memsearch.watcher.watch/awatch``); it lives in :mod:`memsearch.service.watcher`."""

from __future__ import annotations

from .service.watcher import *  # noqa: F401,F403
from .service.watcher import __all__  # noqa: F401
