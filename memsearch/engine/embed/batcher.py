"""Query encodes from many threads coalesced into one model call: whatever arrives while one is in flight.

A lone caller encodes at once (no window, no added latency). Callers that arrive while a
batch is being encoded wait, each on its own lock, and the first of them is handed the lead
when that batch is done: it encodes everything queued meanwhile as the next batch (at most
:data:`MAX_QUERY_BATCH` texts). A finished batch wakes its own callers and the next leader,
no one else: a condition's ``notify_all`` woke every waiting thread, most of them to wait
again, and was a quarter of a daemon's GIL-holding samples with 16 clients (py-spy). The
leader does not wait for more callers: 16 clients in a loop settle into two alternating
batches of about 8, and a leader that waited up to 20 ms for the other half made batches of
15 but fewer searches/s at no less CPU per search (docs/benchmarks.md, "Concurrent searches").
Each row of a batch equals the lone encode of its text (tests/engine/test_batcher.py checks
it bit for bit on the real model), so a search's results never depend on its neighbours.
"""

from __future__ import annotations

import threading
import time
from typing import Callable, Sequence

import numpy as np

__all__ = ["QueryBatcher", "MAX_QUERY_BATCH", "batcher_stats"]

#: The most queries in one model call. Sixteen short queries encode in about 3.5x the time of
#: one, sixty-four long ones in 40x (padding and memory traffic): past 32 a batch stops paying.
MAX_QUERY_BATCH = 32


class _Slot:
    """One caller's text and result; ``wake`` is held until its batch is done or it is handed the lead."""

    __slots__ = ("text", "vector", "error", "done", "wake")

    def __init__(self, text: str):
        self.text, self.vector, self.error, self.done = text, None, None, False
        self.wake = threading.Lock()
        self.wake.acquire()


class QueryBatcher:
    """``embed(text)``, callable from any thread: ``encode_many(texts)`` runs one batch at a time.

    ``encode_many`` returns one row per text, each the text's lone encode. An error of a batch
    is raised in every caller whose text was in it.
    """

    def __init__(self, encode_many: Callable[[Sequence[str]], np.ndarray], max_batch: int = MAX_QUERY_BATCH):
        self._encode_many = encode_many
        self.max_batch = max(int(max_batch), 1)
        self._lock = threading.Lock()
        self._pending: list[_Slot] = []  # callers waiting for a batch, oldest first
        self._busy = False  # a leader is encoding a batch
        #: Batches encoded and texts in them (for tests and benchmarks: texts / batches is the mean batch).
        self.batches = 0
        self.texts = 0
        #: Waiting callers woken (each exactly once: with its result, or with the lead).
        self.wakeups = 0
        #: CPU seconds the leaders' threads spent in ``encode_many`` (a runtime's own pool threads not
        #: counted): a daemon's ``status`` reports it, so that a benchmark splits a search's CPU.
        self.cpu_s = 0.0
        #: Wall seconds spent in ``encode_many``: over a benchmark phase's length, the share of the time the
        #: model was encoding (a bound on searches/s that per-search CPU does not show).
        self.wall_s = 0.0

    def stats(self) -> dict:
        """The counters at one moment: batches, texts, the leaders' CPU seconds (``cpu_s``) and the wall seconds
        of the model calls (``wall_s``)."""
        with self._lock:
            return {"batches": self.batches, "texts": self.texts, "cpu_s": round(self.cpu_s, 6),
                    "wall_s": round(self.wall_s, 6)}

    def embed(self, text: str) -> np.ndarray:
        slot = _Slot(text)
        with self._lock:
            self._pending.append(slot)
            lead = not self._busy  # else a batch is in flight: wait for it (``_pending`` is empty when none is)
            self._busy = True
        if not lead:
            slot.wake.acquire()  # released once: the batch holding ``slot`` is done, or ``slot`` leads the next
        if not slot.done:
            self._lead(slot)
        if slot.error is not None:
            raise slot.error
        return slot.vector

    def _lead(self, slot: _Slot) -> None:
        """Encode one batch, the oldest callers waiting (``slot`` the first), then wake them and hand the lead
        to the oldest caller left."""
        with self._lock:
            batch, self._pending = self._pending[:self.max_batch], self._pending[self.max_batch:]
        started, began = time.thread_time(), time.perf_counter()
        try:
            vectors = self._encode_many([s.text for s in batch])
            for s, vector in zip(batch, vectors):
                s.vector = vector
        except BaseException as exc:  # noqa: BLE001 - handed to every caller of the batch
            for s in batch:
                s.error = exc
        spent, took = time.thread_time() - started, time.perf_counter() - began
        with self._lock:
            for s in batch:
                s.done = True
            self.cpu_s += spent
            self.wall_s += took
            self.batches += 1
            self.texts += len(batch)
            leader = self._pending[0] if self._pending else None
            self._busy = leader is not None
            # the next leader first: its model call releases the GIL, and starts before this batch's callers
            # take the GIL for their fusion and replies
            woken = ([leader] if leader is not None else []) + [s for s in batch if s is not slot]
            self.wakeups += len(woken)
        for s in woken:
            s.wake.release()


def batcher_stats(embedder) -> dict | None:
    """The counters (:meth:`QueryBatcher.stats`) of ``embedder``'s ``query_batcher`` (the batching embedders each
    hold one), or None when it has none."""
    batcher = getattr(embedder, "query_batcher", None)
    if not isinstance(batcher, QueryBatcher):
        return None
    return batcher.stats()
