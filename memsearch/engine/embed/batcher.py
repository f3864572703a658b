"""Query encodes from many threads coalesced into one model call: whatever arrives while one is in flight.

A lone caller encodes at once (no window, no added latency). Callers that arrive while a
batch is being encoded wait, and the first of them to wake encodes everything queued
meanwhile as the next batch (at most :data:`MAX_QUERY_BATCH` texts). On 2 cores one
all-MiniLM-L6-v2 query costs 6-10 ms and sixteen together 45-65 ms (benchmarks/perf/concurrency.py,
README "Concurrent searches"): batching is what lets 16 clients get more done than one.
Each row of a batch equals the lone encode of its text (tests/engine/test_batcher.py checks it
bit for bit on the real model), so a search's results never depend on its neighbours.
"""

from __future__ import annotations

import threading
from typing import Callable, Sequence

import numpy as np

__all__ = ["QueryBatcher", "MAX_QUERY_BATCH"]

#: The most queries in one model call. Sixteen short queries encode in about 3.5x the time of
#: one, sixty-four long ones in 40x (padding and memory traffic): past 32 a batch stops paying.
MAX_QUERY_BATCH = 32


class _Slot:
    __slots__ = ("text", "vector", "error", "done")

    def __init__(self, text: str):
        self.text, self.vector, self.error, self.done = text, None, None, False


class QueryBatcher:
    """``embed(text)``, callable from any thread: ``encode_many(texts)`` runs one batch at a time.

    ``encode_many`` returns one row per text, each the text's lone encode. An error of a batch
    is raised in every caller whose text was in it.
    """

    def __init__(self, encode_many: Callable[[Sequence[str]], np.ndarray], max_batch: int = MAX_QUERY_BATCH):
        self._encode_many = encode_many
        self.max_batch = max(int(max_batch), 1)
        self._cond = threading.Condition()
        self._pending: list[_Slot] = []
        self._busy = False
        #: Batches encoded and texts in them (for tests and benchmarks: texts / batches is the mean batch).
        self.batches = 0
        self.texts = 0

    def embed(self, text: str) -> np.ndarray:
        slot = _Slot(text)
        with self._cond:
            self._pending.append(slot)
        while True:
            with self._cond:
                while self._busy and not slot.done:
                    self._cond.wait()
                if slot.done:
                    break
                self._busy = True
                batch, self._pending = self._pending[:self.max_batch], self._pending[self.max_batch:]
            self._run(batch)
        if slot.error is not None:
            raise slot.error
        return slot.vector

    def _run(self, batch: list[_Slot]) -> None:
        try:
            vectors = self._encode_many([s.text for s in batch])
            for s, vector in zip(batch, vectors):
                s.vector = vector
        except BaseException as exc:  # noqa: BLE001 - handed to every caller of the batch
            for s in batch:
                s.error = exc
        with self._cond:
            for s in batch:
                s.done = True
            self.batches += 1
            self.texts += len(batch)
            self._busy = False
            self._cond.notify_all()
