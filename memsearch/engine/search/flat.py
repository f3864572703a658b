"""Exact vector search in memory, for tables small enough to hold (see VECTOR_INDEX_MIN_ROWS).

LanceDB's flat scan reads the vectors from disk on every query (about 20 ms at 10k rows on
2 cores); holding them in a numpy matrix makes the same exact search a matrix-vector
product and an ``np.argpartition`` (about 2 ms). The copy is tied to one table version and
reloaded when a writer commits a new one, so it never serves stale rows; rows not embedded yet
(zero vectors, written text-first by the sync) are left out. Past
VECTOR_INDEX_MIN_ROWS the table has an ANN index and LanceDB searches it instead.
"""

from __future__ import annotations

import sys

import numpy as np
import pyarrow as pa

from ..storage.filter import Filter

__all__ = ["FlatVectors", "QUANTIZED_MIN_ROWS", "RESCORE_FACTOR", "RESCORE_MIN"]

#: From this many rows the scan screens with one sign bit per dimension (Hamming distance, 48
#: bytes a row at 384 dimensions) and rescores the closest candidates exactly: at 100k rows
#: the float32 product was 45.6 ms and the bit screen 0.5 ms, load 10.6 on 2 cores. Below it the
#: exact product is cheap (about 2 ms at 10k rows) and LoCoMo's 2.3k chunks are searched exactly.
QUANTIZED_MIN_ROWS = 20_000
#: Candidates rescored exactly per row asked for (and at least RESCORE_MIN): the screen only
#: chooses which rows get an exact score; every score returned is the float32 cosine.
RESCORE_FACTOR = 20
RESCORE_MIN = 1000


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
        embedded = norms[:, 0] > 0  # zeros: a row written text-first, not embedded yet (its BM25 finds it)
        if not embedded.all():
            matrix, norms, data = matrix[embedded], norms[embedded], data.filter(pa.array(embedded))
            n = data.num_rows
        self.matrix = (matrix / np.where(norms == 0, 1, norms)).astype(np.float32)
        #: The sign bits, one uint64 row per 64 dimensions (dimension-major, for the screen), or None.
        self.bits = _sign_bits(self.matrix) if n >= QUANTIZED_MIN_ROWS else None
        self.rows = data.select(columns).to_pylist()
        self.dirs = np.array([r["dir"] for r in self.rows], dtype=object)
        self.dates = np.array([r["date"] or "" for r in self.rows], dtype=object)
        #: What this copy holds in memory (the matrix, the row dicts and their values, the
        #: masks' arrays), for the process's bound on open indexes (memsearch.harness.api).
        bits = self.bits.nbytes if self.bits is not None else 0
        self.nbytes = int(self.matrix.nbytes + bits + self.dirs.nbytes + self.dates.nbytes + sys.getsizeof(self.rows)
                          + sum(sys.getsizeof(r) + sum(map(sys.getsizeof, r.values())) for r in self.rows))

    def search(self, vector: np.ndarray, n: int, flt: Filter) -> list[dict]:
        """The ``n`` rows closest to ``vector`` (cosine) among those ``flt`` allows."""
        if not self.rows:
            return []
        query = (vector / (np.linalg.norm(vector) or 1.0)).astype(np.float32)
        mask = flt.mask(self.dirs, self.dates)
        if self.bits is not None:
            return self._screened(query, n, mask)
        # einsum, not ``@``: BLAS's own threads fight torch's just-used ones (6.5 ms vs 1.6 ms
        # at 10k rows on 2 cores), and one matrix-vector product needs no threads.
        scores = np.einsum("ij,j->i", self.matrix, query)
        candidates = np.flatnonzero(mask) if mask is not None else None
        if candidates is not None:
            if not candidates.size:
                return []
            scores = scores[candidates]
        k = min(n, scores.size)
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.argsort(-scores[top], kind="stable")]
        index = candidates[top] if candidates is not None else top
        rows = self.rows  # Python ints and floats from tolist(): a numpy scalar per row cost more than its dict
        return [dict(rows[i], score=score) for i, score in zip(index.tolist(), scores[top].tolist())]

    def _screened(self, query: np.ndarray, n: int, mask: np.ndarray | None) -> list[dict]:
        """The ``n`` best rows by exact cosine among the rows closest in sign bits (:data:`RESCORE_FACTOR`)."""
        distance = _hamming(self.bits, _sign_bits(query[None, :])[:, 0])
        allowed = distance.size if mask is None else int(mask.sum())
        if not allowed:
            return []
        if mask is not None:
            distance[~mask] = np.iinfo(distance.dtype).max
        pool = min(max(n * RESCORE_FACTOR, RESCORE_MIN), allowed)
        candidates = np.argpartition(distance, pool - 1)[:pool] if pool < distance.size else np.arange(distance.size)
        candidates = np.sort(candidates)  # equal scores keep table order
        scores = np.einsum("ij,j->i", self.matrix[candidates], query)
        k = min(n, scores.size)
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.lexsort((top, -scores[top]))]
        return [dict(self.rows[i], score=float(scores[j])) for i, j in zip(candidates[top], top)]


def _sign_bits(matrix: np.ndarray) -> np.ndarray:
    """One bit per dimension (set where positive), packed into uint64 words, dimension-major: (words, rows)."""
    packed = np.packbits(matrix > 0, axis=1)
    pad = (-packed.shape[1]) % 8
    if pad:
        packed = np.pad(packed, ((0, 0), (0, pad)))
    return np.ascontiguousarray(packed.view(np.uint64).T)


def _hamming(bits: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Differing bits of every row from ``query`` (one word per row of ``bits``): word by word, in place."""
    rows = bits.shape[1]
    word, count = np.empty(rows, np.uint64), np.empty(rows, np.uint8)
    total = np.zeros(rows, np.uint16)
    for j in range(bits.shape[0]):
        np.bitwise_xor(bits[j], query[j], out=word)
        np.bitwise_count(word, out=count)
        np.add(total, count, out=total)
    return total
