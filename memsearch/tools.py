"""Public home of the memory tools (``memsearch.tools.ToolBox``); they live in :mod:`memsearch.harness.tools`."""

from __future__ import annotations

from .harness.tools import *  # noqa: F401,F403
from .harness.tools import __all__  # noqa: F401
