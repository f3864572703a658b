"""Exact vector search in memory, for tables small enough to hold (see VECTOR_INDEX_MIN_ROWS).

LanceDB's flat scan reads the vectors from disk on every query (about 20 ms at 10k rows on
2 cores); holding them in a numpy matrix makes the same exact search a matrix-vector
product and an ``np.argpartition`` (about 2 ms). The copy is tied to one table version and
reloaded when a writer commits a new one, so it never serves stale rows. Past
VECTOR_INDEX_MIN_ROWS the table has an ANN index and LanceDB searches it instead.
"""

from __future__ import annotations

import sys
from typing import Sequence

import numpy as np

from ..storage.store import Filter

__all__ = ["FlatVectors"]


class FlatVectors:
    """One table version's rows and unit-length vectors."""

    def __init__(self, table, columns: Sequence[str]):
        data = table.to_arrow().select(list(columns) + ["vector"])
        self.version = table.version
        n = data.num_rows
        matrix = data.column("vector").combine_chunks().flatten().to_numpy().reshape(n, -1) if n else np.zeros((0, 1), np.float32)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        self.matrix = (matrix / np.where(norms == 0, 1, norms)).astype(np.float32)
        self.rows = data.select(list(columns)).to_pylist()
        self.dirs = np.array([r["dir"] for r in self.rows], dtype=object)
        self.dates = np.array([r["date"] or "" for r in self.rows], dtype=object)
        #: What this copy holds in memory (the matrix, the row dicts and their values, the
        #: masks' arrays), for the process's bound on open indexes (memsearch.harness.api).
        self.nbytes = int(self.matrix.nbytes + self.dirs.nbytes + self.dates.nbytes + sys.getsizeof(self.rows)
                          + sum(sys.getsizeof(r) + sum(map(sys.getsizeof, r.values())) for r in self.rows))

    def _mask(self, flt: Filter) -> np.ndarray | None:
        mask = None

        def both(a, b):
            return b if a is None else a & b

        if flt.scope:
            prefix = flt.scope + "/"
            mask = both(mask, np.fromiter((d == flt.scope or d.startswith(prefix) for d in self.dirs), bool, len(self.dirs)))
        if flt.since:
            mask = both(mask, (self.dates != "") & (self.dates >= flt.since))
        if flt.until:
            mask = both(mask, (self.dates != "") & (self.dates <= flt.until))
        return mask

    def search(self, vector: np.ndarray, n: int, flt: Filter) -> list[dict]:
        """The ``n`` rows closest to ``vector`` (cosine) among those ``flt`` allows."""
        if not self.rows:
            return []
        query = vector / (np.linalg.norm(vector) or 1.0)
        # einsum, not ``@``: BLAS's own threads fight torch's just-used ones (6.5 ms vs 1.6 ms
        # at 10k rows on 2 cores), and one matrix-vector product needs no threads.
        scores = np.einsum("ij,j->i", self.matrix, query.astype(np.float32))
        mask = self._mask(flt)
        candidates = np.flatnonzero(mask) if mask is not None else None
        if candidates is not None:
            if not candidates.size:
                return []
            scores = scores[candidates]
        k = min(n, scores.size)
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.argsort(-scores[top], kind="stable")]
        index = candidates[top] if candidates is not None else top
        return [dict(self.rows[i], score=float(scores[j])) for i, j in zip(index, top)]
