"""Exact vector search in memory, for tables small enough to hold (see VECTOR_INDEX_MIN_ROWS).

LanceDB's flat scan reads the vectors from disk on every query (about 20 ms at 10k rows on
2 cores); holding them in a numpy matrix makes the same exact search a matrix-vector
product and an ``np.argpartition`` (about 2 ms). The copy is tied to one table version and
reloaded when a writer commits a new one, so it never serves stale rows. Past
VECTOR_INDEX_MIN_ROWS the table has an ANN index and LanceDB searches it instead.
"""

from __future__ import annotations

import sys

import numpy as np
import pyarrow as pa

from ..storage.filter import Filter

__all__ = ["FlatVectors"]


class FlatVectors:
    """One table version's rows and unit-length vectors, from ``data``: the row columns and ``vector``
    (:meth:`~memsearch.engine.storage.store.Store.read`)."""

    def __init__(self, data: pa.Table, version: int):
        self.version = version
        n = data.num_rows
        columns = [name for name in data.column_names if name != "vector"]
        matrix = (data.column("vector").combine_chunks().flatten().to_numpy().reshape(n, -1) if n
                  else np.zeros((0, 1), np.float32))
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        self.matrix = (matrix / np.where(norms == 0, 1, norms)).astype(np.float32)
        self.rows = data.select(columns).to_pylist()
        self.dirs = np.array([r["dir"] for r in self.rows], dtype=object)
        self.dates = np.array([r["date"] or "" for r in self.rows], dtype=object)
        #: What this copy holds in memory (the matrix, the row dicts and their values, the
        #: masks' arrays), for the process's bound on open indexes (memsearch.harness.api).
        self.nbytes = int(self.matrix.nbytes + self.dirs.nbytes + self.dates.nbytes + sys.getsizeof(self.rows)
                          + sum(sys.getsizeof(r) + sum(map(sys.getsizeof, r.values())) for r in self.rows))

    def search(self, vector: np.ndarray, n: int, flt: Filter) -> list[dict]:
        """The ``n`` rows closest to ``vector`` (cosine) among those ``flt`` allows."""
        if not self.rows:
            return []
        query = vector / (np.linalg.norm(vector) or 1.0)
        # einsum, not ``@``: BLAS's own threads fight torch's just-used ones (6.5 ms vs 1.6 ms
        # at 10k rows on 2 cores), and one matrix-vector product needs no threads.
        scores = np.einsum("ij,j->i", self.matrix, query.astype(np.float32))
        mask = flt.mask(self.dirs, self.dates)
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
