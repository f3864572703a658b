"""The ONNX Runtime embedder: a local sentence-transformers model exported once to ONNX, run without torch.

At first use the model's weights are exported (``torch.onnx.export``, the TorchScript exporter)
into ``$MEMSEARCH_CACHE/onnx/<fingerprint>/``, written atomically, and reused by every later
process; nothing is downloaded. Texts are tokenized with the model's own fast tokenizer
(``tokenizer.json``) and mean- or CLS-pooled and normalised exactly as sentence-transformers
does (cosine 1.000 against it on LoCoMo turns and chunks; ``tests/engine/test_onnx.py``).

Two sessions, each with its own threads (nothing process-wide is touched): queries run on
QUERY_THREADS, documents on the session default. Measured on 2 busy cores (benchmarks/perf/speed.py
``encoders``, all-MiniLM-L6-v2): one query 14 ms with torch on one thread, 6-7 ms here (FP32);
int8 dynamic quantization halves that again but moves vectors (cosine 0.95) and is opt-in
(MEMSEARCH_QUANTIZE, with its recall in benchmarks/README.md).
"""

from __future__ import annotations

import json
import os
import threading
import warnings
from pathlib import Path
from typing import Sequence

import numpy as np

from ... import settings
from ...errors import ModelUnavailable
from .batcher import QueryBatcher

__all__ = ["OnnxEmbedder", "supported", "export_model", "length_batches", "EXPORT_VERSION", "QUERY_THREADS",
           "QUERY_PAD_RATIO"]

#: Bumped when the exported graph changes (part of the cache key with the model fingerprint).
EXPORT_VERSION = 1
OPSET = 17
#: Threads of the query session: one short sequence gains nothing from more, and on a busy
#: machine a second spinning thread made a torch query ~1 s instead of ~60 ms.
QUERY_THREADS = 1
#: A batch of queries is cut where a text is longer than this many times the shortest of its group:
#: padding costs. Sixteen queries of 3-19 tokens on 2 busy cores (benchmarks/perf/concurrency.py's):
#: one at a time 350 ms, one padded batch 260 ms, four groups of four 152 ms, cut at 1.5x 117 ms.
QUERY_PAD_RATIO = 1.5
_MODULES = {"sentence_transformers.models.Transformer", "sentence_transformers.models.Pooling",
            "sentence_transformers.models.Normalize"}
_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def _pooling(source: Path) -> str | None:
    """``mean`` or ``cls`` when the model is Transformer + Pooling (+ Normalize) only, else None."""
    try:
        modules = json.loads((source / "modules.json").read_text())
    except (OSError, ValueError):
        return None
    if not modules or {m.get("type") for m in modules} - _MODULES or not (source / "tokenizer.json").is_file():
        return None
    pool = next((m for m in modules if m.get("type", "").endswith("Pooling")), None)
    if pool is None:
        return None
    try:
        config = json.loads((source / pool.get("path", "") / "config.json").read_text())
    except (OSError, ValueError):
        return None
    modes = [k for k, v in config.items() if k.startswith("pooling_mode_") and v]
    if len(modes) != 1:
        return None
    return {"pooling_mode_mean_tokens": "mean", "pooling_mode_cls_token": "cls"}.get(modes[0])


def supported(source: str | os.PathLike[str]) -> bool:
    """Whether the model directory ``source`` can run here: a local BERT-like model with mean or CLS pooling."""
    path = Path(source)
    return path.is_dir() and _pooling(path) is not None and (path / "config.json").is_file()


def export_model(source: Path, target: Path) -> None:
    """Export the transformer of ``source`` to ``target`` (atomically); needs torch, never the network."""
    import torch
    from safetensors.torch import load_file
    from transformers import AutoConfig, AutoModel

    config = AutoConfig.from_pretrained(str(source), local_files_only=True)
    config._attn_implementation = "eager"  # plain ops: one graph for every batch shape
    model = AutoModel.from_config(config)
    weights = sorted(source.glob("*.safetensors"))
    if weights:
        state = {}
        for file in weights:
            state.update(load_file(str(file)))
    else:
        state = torch.load(str(source / "pytorch_model.bin"), map_location="cpu", weights_only=True)
    prefix = getattr(model, "base_model_prefix", "") + "."
    state = {k.removeprefix(prefix): v for k, v in state.items()}
    missing, _ = model.load_state_dict(state, strict=False)
    if [k for k in missing if not k.endswith("position_ids")]:
        raise ModelUnavailable(f"cannot export the model at {source}: weights missing ({', '.join(missing[:3])}); "
                               "use MEMSEARCH_BACKEND=torch")
    model.eval()
    names = [n for n in _INPUTS if n != "token_type_ids" or getattr(config, "type_vocab_size", 0)]

    class Hidden(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, *args):
            return self.inner(**dict(zip(names, args))).last_hidden_state

    dummy = tuple(torch.ones(2, 8, dtype=torch.long) if n != "token_type_ids" else torch.zeros(2, 8, dtype=torch.long)
                  for n in names)
    dummy[1][1, 4:] = 0  # a padded row, so that the mask is traced as data
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the tracer's notes on shapes: the graph is checked in tests
            torch.onnx.export(Hidden(model), dummy, str(tmp), dynamo=False, opset_version=OPSET, input_names=names,
                              output_names=["last_hidden_state"],
                              dynamic_axes={n: {0: "batch", 1: "tokens"} for n in [*names, "last_hidden_state"]})
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


def _quantize(fp32: Path, target: Path) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    tmp = target.with_name(f".{target.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        # per channel: cosine 0.99 to FP32 on LoCoMo text, where one scale per tensor gave 0.95
        quantize_dynamic(str(fp32), str(tmp), weight_type=QuantType.QInt8, per_channel=True)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


def length_batches(lengths: Sequence[int], size: int) -> list[list[int]]:
    """Indices in batches of ``size``, longest first by token count, so each batch pads little.

    sentence-transformers sorts by characters; sorting by the truncated token counts the model
    runs on cut the padded tokens of LoCoMo chunks (222 six-turn chunks, batches of 32) from 8.0%
    to 4.7% of the real ones.
    """
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    return [order[start : start + size] for start in range(0, len(order), size)]


class OnnxEmbedder:
    """The model in ``source`` (a local sentence-transformers directory) on ONNX Runtime's CPU provider.

    ``fingerprint`` is that of the weights (see :func:`memsearch.engine.embed.embedder.model_fingerprint`),
    so an index built with the torch backend opens here and the other way round; int8
    vectors differ, so ``quantize="int8"`` adds ``+int8`` to it. Safe to call from many threads:
    documents and queries run on sessions of their own, and the tokenizers are never reconfigured.
    """

    backend = "onnx"

    def __init__(self, spec, source: str | os.PathLike[str], *, fingerprint: str, quantize: str | None = None,
                 cache: str | os.PathLike[str] | None = None, batch_size: int | None = None):
        self.spec = spec
        self.name = spec.name
        self._dir = Path(source)
        self.source = str(source)  # where the weights load from, as for the torch embedder
        self.quantize = settings.get("quantize", quantize)
        self.batch_size = settings.get("batch_size", batch_size)
        self.max_tokens = spec.max_seq_length
        self.dimension = spec.dimension or 0
        self.pooling = _pooling(self._dir)
        if self.pooling is None:
            raise ModelUnavailable(f"the model at {self._dir} is not a plain Transformer + Pooling model: "
                                   "use MEMSEARCH_BACKEND=torch")
        self._fingerprint = fingerprint + ("+int8" if self.quantize == "int8" else "")
        key = f"{fingerprint.replace(':', '-').replace('/', '-')}-e{EXPORT_VERSION}"
        self.cache_dir = settings.cache_dir(cache) / "onnx" / key
        self._lock = threading.Lock()
        self._sessions: dict[str, object] = {}
        self._tokenizers = None
        #: Concurrent queries (a daemon's or an HTTP server's threads) share model calls; its counters go in a
        #: daemon's ``status``.
        self.query_batcher = QueryBatcher(self.embed_queries)

    @property
    def fingerprint(self) -> str:
        return self._fingerprint

    # --- loading ------------------------------------------------------------------------
    def model_file(self) -> Path:
        """The ONNX file for this embedder, exported (and quantized) on first use; a cache folder that cannot be
        written (``MEMSEARCH_CACHE`` a file, read-only) is :class:`ModelUnavailable` naming the variable."""
        fp32 = self.cache_dir / "model.onnx"
        int8 = self.cache_dir / "model-int8-per-channel.onnx"
        try:
            if not fp32.is_file():
                export_model(self._dir, fp32)
            if self.quantize == "int8" and not int8.is_file():
                _quantize(fp32, int8)
        except OSError as err:
            raise ModelUnavailable(
                f"cannot write the model's ONNX export in {self.cache_dir} ({err.strerror or err}): set "
                f"{settings.env_name('cache')} to a folder you can write, or MEMSEARCH_BACKEND=torch") from None
        return int8 if self.quantize == "int8" else fp32

    def _tokenizer(self, truncated: bool):
        """The model's tokenizer, truncating at ``max_tokens`` or not (for :meth:`token_lengths`); never padding."""
        if self._tokenizers is None:
            from tokenizers import Tokenizer

            plain = Tokenizer.from_file(str(self._dir / "tokenizer.json"))
            plain.no_truncation()
            plain.no_padding()
            batch = Tokenizer.from_file(str(self._dir / "tokenizer.json"))
            batch.enable_truncation(self.max_tokens)
            batch.no_padding()  # padded per batch in _encode, to that batch's longest text
            pad = batch.token_to_id("[PAD]")
            self._pad_id = pad if pad is not None else 0
            self._tokenizers = (plain, batch)
        return self._tokenizers[1 if truncated else 0]

    def _session(self, kind: str):
        session = self._sessions.get(kind)
        if session is None:
            with self._lock:
                session = self._sessions.get(kind)
                if session is None:
                    session = self._sessions[kind] = self._open(kind)
        return session

    def _open(self, kind: str):
        try:
            import onnxruntime as ort
        except ImportError as err:  # pragma: no cover - a broken install
            raise ModelUnavailable("onnxruntime is not installed: pip install onnxruntime, "
                                   "or use MEMSEARCH_BACKEND=torch") from err
        self._tokenizer(True)
        options = ort.SessionOptions()
        options.log_severity_level = 3
        options.inter_op_num_threads = 1
        if kind == "query":
            options.intra_op_num_threads = QUERY_THREADS
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")  # no busy-wait beside a search
        session = ort.InferenceSession(str(self.model_file()), options, providers=["CPUExecutionProvider"])
        self._inputs = [i.name for i in session.get_inputs()]
        out = session.get_outputs()[0].shape
        if isinstance(out[-1], int):
            self.dimension = out[-1]
        return session

    def load(self) -> None:
        """Load now rather than at the first query (the dimension is known afterwards)."""
        self._session("query")

    # --- encoding -----------------------------------------------------------------------
    def _encode(self, encoded: list, kind: str) -> np.ndarray:
        """Vectors of tokenized texts (``tokenizers.Encoding``), padded to the longest of them."""
        session = self._session(kind)
        width = max(len(e.ids) for e in encoded)
        ids = np.full((len(encoded), width), self._pad_id, dtype=np.int64)
        mask = np.zeros((len(encoded), width), dtype=np.int64)
        types = np.zeros((len(encoded), width), dtype=np.int64)
        for row, e in enumerate(encoded):
            ids[row, : len(e.ids)], mask[row, : len(e.ids)], types[row, : len(e.ids)] = e.ids, 1, e.type_ids
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = types
        hidden = session.run(None, feeds)[0]
        if self.pooling == "cls":
            vectors = hidden[:, 0]
        else:
            weights = mask[..., None].astype(np.float32)
            vectors = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        if self.spec.normalize:
            vectors = vectors / np.clip(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12, None)
        return vectors.astype(np.float32, copy=False)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            self.load()
            return np.zeros((0, self.dimension), dtype=np.float32)
        encoded = self._tokenizer(True).encode_batch([self.spec.document_prefix + t for t in texts])
        out = None
        for part in length_batches([len(e.ids) for e in encoded], self.batch_size):
            vectors = self._encode([encoded[i] for i in part], "documents")
            if out is None:
                out = np.empty((len(encoded), vectors.shape[1]), dtype=np.float32)
            out[part] = vectors
        return out

    def embed_query(self, text: str) -> np.ndarray:
        """One query's vector; queries from other threads in flight meanwhile share the model call."""
        return self.query_batcher.embed(text)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Queries' vectors, each row equal to the text's lone encode (bit for bit: tests/engine/test_batcher.py),
        in as few model calls as keep padding low (groups of similar length, :data:`QUERY_PAD_RATIO`)."""
        encoded = self._tokenizer(True).encode_batch([self.spec.query_prefix + t for t in texts])
        order = sorted(range(len(encoded)), key=lambda i: len(encoded[i].ids))
        out = None
        start = 0
        for end in range(1, len(order) + 1):
            if end < len(order) and len(encoded[order[end]].ids) <= QUERY_PAD_RATIO * len(encoded[order[start]].ids):
                continue
            part = order[start:end]
            # a group of several runs on the documents session (its default threads): searches in flight
            # together, 16 clients through a daemon 103.7 -> 152.8 searches/s (load 7.4 / 6.7)
            vectors = self._encode([encoded[i] for i in part], "query" if len(part) == 1 else "documents")
            if out is None:
                out = np.empty((len(encoded), vectors.shape[1]), dtype=np.float32)
            out[part] = vectors
            start = end
        return out if out is not None else np.zeros((0, self.dimension), dtype=np.float32)

    def token_lengths(self, texts: Sequence[str]) -> list[int]:
        """Lengths in the model's own tokens, special tokens and document prefix included."""
        if not texts:
            return []
        encoded = self._tokenizer(False).encode_batch([self.spec.document_prefix + t for t in texts])
        return [len(e.ids) for e in encoded]
