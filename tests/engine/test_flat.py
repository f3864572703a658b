"""The in-memory vector scan: exact below QUANTIZED_MIN_ROWS, sign-bit screen + exact rescoring above it."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from memsearch.engine.search import flat
from memsearch.engine.search.flat import FlatVectors
from memsearch.engine.storage.filter import Filter


def rows(vectors: np.ndarray) -> pa.Table:
    """What FlatVectors is built from: the hit columns and ``vector`` (as ``Store.read`` gives them)."""
    n = len(vectors)
    return pa.table({"id": [str(i) for i in range(n)], "path": [f"d{i % 3}/f{i}.md" for i in range(n)],
                     "dir": [f"d{i % 3}" for i in range(n)], "heading": [""] * n, "start_line": [1] * n,
                     "end_line": [2] * n, "text": [f"t{i}" for i in range(n)],
                     "date": ["2024-01-01" if i % 2 else None for i in range(n)],
                     "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), vectors.shape[1])})


def _clustered(n: int, d: int = 384, seed: int = 3) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((50, d))
    return (centres[rng.integers(0, 50, n)] + 0.6 * rng.standard_normal((n, d))).astype(np.float32)


def test_small_tables_are_scanned_exactly():
    vectors = _clustered(500)
    copy = FlatVectors(rows(vectors), 1)
    assert copy.bits is None
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    query = vectors[7] + 0.1
    hits = copy.search(query, 10, Filter())
    expected = np.argsort(-(unit @ (query / np.linalg.norm(query))), kind="stable")[:10]
    assert [int(h["id"]) for h in hits] == list(expected)


def test_large_tables_screen_by_sign_bits_and_return_exact_cosines(monkeypatch):
    monkeypatch.setattr(flat, "QUANTIZED_MIN_ROWS", 2000)
    vectors = _clustered(6000)
    copy = FlatVectors(rows(vectors), 1)
    assert copy.bits is not None and copy.bits.shape == (6, 6000)
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    agree = []
    for row in range(0, 6000, 300):
        query = vectors[row] + 0.05 * np.random.default_rng(row).standard_normal(384).astype(np.float32)
        q = query / np.linalg.norm(query)
        hits = copy.search(query, 50, Filter())
        assert int(hits[0]["id"]) == row  # a near copy of a row finds it first
        for h in hits:  # every score is the exact float32 cosine of its row
            assert abs(h["score"] - float(unit[int(h["id"])] @ q)) < 1e-5
        assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)
        exact = set(np.argsort(-(unit @ q))[:10].tolist())
        agree.append(len(exact & {int(h["id"]) for h in hits[:10]}) / 10)
    assert np.mean(agree) >= 0.95


def test_the_screen_honours_the_filter(monkeypatch):
    monkeypatch.setattr(flat, "QUANTIZED_MIN_ROWS", 1000)
    vectors = _clustered(3000)
    copy = FlatVectors(rows(vectors), 1)
    hits = copy.search(vectors[4], 20, Filter(scope="d1", since="2023-12-01"))
    assert hits and all(h["dir"] == "d1" and h["date"] for h in hits)
    assert copy.search(vectors[4], 20, Filter(scope="nowhere")) == []
