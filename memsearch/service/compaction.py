"""When a writer compacts its index: :class:`Schedule` counts its writes and says when a compaction is due and safe.

A compaction rewrites the tables and prunes old versions; a search in another process that still reads a pruned
version would fail, so the schedule only lets one run when a recent write proves that every version it prunes was
superseded long enough ago (the constants below). :class:`~memsearch.service.daemon.Daemon` owns one and runs the
compaction itself.
"""

from __future__ import annotations

import time
from collections import deque

__all__ = ["Schedule", "COMPACT_QUIET_S", "COMPACT_EVERY_SYNCS", "COMPACT_MAX_INTERVAL_S", "VERSION_KEEP_S"]

#: Compact once no write happened for this long (and something was written since the last one).
COMPACT_QUIET_S = 5.0
#: Under a steady stream of writes, compact after this many writing syncs ...
COMPACT_EVERY_SYNCS = 100
#: ... or this long after the previous compaction, whichever comes first.
COMPACT_MAX_INTERVAL_S = 300.0
#: Pruning keeps versions younger than this. A compaction runs only when a write between
#: VERSION_KEEP_S and COMPACT_QUIET_S ago proves that every version it prunes was superseded
#: at least COMPACT_QUIET_S ago, so a search in another process never loses the version it reads.
VERSION_KEEP_S = 30.0
KEEP_MARGIN_S = 2.0


class Schedule:
    """The writes since the last compaction, on the clock of ``time.monotonic`` (used by its daemon's thread only)."""

    def __init__(self, now: float | None = None):
        self.writes: deque[tuple[float, float]] = deque()  # (start, end) of syncs that committed
        self.dirty = False  # something was written since the last compaction
        self.syncs = 0  # writing syncs since the last compaction
        self.last = time.monotonic() if now is None else now

    def wrote(self, started: float, ended: float) -> None:
        """A sync that started at ``started`` committed at ``ended``."""
        self.writes.append((started, ended))
        self.dirty = True
        self.syncs += 1

    def due(self, now: float) -> bool:
        """Whether a compaction should run at ``now``: something to compact, quiet or busy enough, and safe."""
        if not self.dirty or not self.writes:
            return False
        while len(self.writes) > 1 and self.writes[0][0] < now - VERSION_KEEP_S:
            self.writes.popleft()
        quiet = now - self.writes[-1][1] >= COMPACT_QUIET_S
        busy = self.syncs >= COMPACT_EVERY_SYNCS or now - self.last >= COMPACT_MAX_INTERVAL_S
        if not (quiet or busy):
            return False
        low, high = now - VERSION_KEEP_S + KEEP_MARGIN_S, now - COMPACT_QUIET_S
        return any(start >= low and end <= high for start, end in self.writes)

    def compacted(self, now: float) -> None:
        """A compaction ended at ``now``."""
        self.dirty, self.syncs, self.last = False, 0, now

    def failed(self, retry: bool) -> None:
        """A compaction failed: try again at the next due time (``retry``), or only after the next write."""
        self.dirty = retry
