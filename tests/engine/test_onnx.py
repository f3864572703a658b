"""The ONNX Runtime embedder: same vectors as sentence-transformers, exported once per fingerprint, no torch when cached."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from memsearch import settings
from memsearch.engine.embed import onnx
from memsearch.engine.embed.embedder import SentenceTransformerEmbedder, load_embedder, locate, model_fingerprint
from memsearch.engine.embed.models import resolve_model
from memsearch.errors import InvalidArgument
from tests.conftest import EXAMPLES, REPO

SAMPLE_QUERIES = ["which warehouse did we choose for Atlas and why", "hello world", "When did Caroline go to the support group?",
                  "日本語のメモ", "a"]


def _sample_documents() -> list[str]:
    texts = []
    for path in sorted(EXAMPLES.rglob("*.md")):
        lines = path.read_text(encoding="utf-8").splitlines()
        texts += ["\n".join(lines[i : i + 12]) for i in range(0, len(lines), 12)]
    texts.append("word " * 600)  # longer than the model's 256 tokens: truncated the same way
    return [t for t in texts if t.strip()]


@pytest.fixture(scope="module")
def cached(tmp_path_factory):
    """An ONNX embedder exporting into a private cache directory."""
    spec = resolve_model(None)
    source = locate(spec)
    cache = tmp_path_factory.mktemp("cache")
    return onnx.OnnxEmbedder(spec, source, fingerprint=model_fingerprint(spec, source), cache=cache), cache


def test_default_backend_on_cpu_is_onnx_with_the_torch_fingerprint():
    default, torch_one = load_embedder(), load_embedder(backend="torch")
    assert isinstance(default, onnx.OnnxEmbedder) and isinstance(torch_one, SentenceTransformerEmbedder)
    assert default.fingerprint == torch_one.fingerprint  # an index built with one opens with the other
    assert isinstance(load_embedder(device="cuda"), SentenceTransformerEmbedder)  # not loaded: lazy


@pytest.mark.slow
def test_export_is_cached_under_the_fingerprint(cached):
    embedder, cache = cached
    vector = embedder.embed_query("hello world")
    key = embedder.fingerprint.replace(":", "-") + f"-e{onnx.EXPORT_VERSION}"
    assert (cache / "onnx" / key / "model.onnx").is_file()
    assert vector.shape == (384,) and abs(float(np.linalg.norm(vector)) - 1) < 1e-5
    assert not [p for p in (cache / "onnx" / key).iterdir() if p.name.endswith(".tmp")]


@pytest.mark.slow
def test_a_cached_model_loads_without_torch_or_the_hub(cached):
    embedder, cache = cached
    expected = embedder.embed_query("hello world")
    code = (
        "import json, os, sys\n"
        "from memsearch.engine.embed.embedder import load_embedder\n"
        "v = load_embedder().embed_query('hello world')\n"
        "print(json.dumps({'torch': 'torch' in sys.modules, 'st': 'sentence_transformers' in sys.modules,"
        " 'env': 'HF_HUB_OFFLINE' in os.environ, 'v': v.tolist()}))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "HF_HUB_OFFLINE"} | {"MEMSEARCH_CACHE": str(cache), "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["torch"] is False and out["st"] is False and out["env"] is False
    assert float(np.dot(out["v"], expected)) > 0.99999


@pytest.mark.slow
def test_vectors_match_sentence_transformers(cached):
    """Cosine >= 0.999 on a sample of documents (batched, padded, truncated) and queries."""
    embedder, _ = cached
    reference = load_embedder(backend="torch")
    docs = _sample_documents()
    ours, theirs = embedder.embed_documents(docs), reference.embed_documents(docs)
    assert ours.shape == theirs.shape and len(docs) > 20
    assert float((ours * theirs).sum(axis=1).min()) >= 0.999
    for query in SAMPLE_QUERIES:
        assert float(np.dot(embedder.embed_query(query), reference.embed_query(query))) >= 0.999
    assert embedder.token_lengths(docs) == reference.token_lengths(docs)


@pytest.mark.slow
def test_documents_batch_by_token_length_and_vectors_do_not_depend_on_the_batch(cached):
    assert onnx.length_batches([3, 9, 5, 9, 1], 2) == [[1, 3], [2, 0], [4]]
    assert onnx.length_batches([], 32) == []
    embedder, _ = cached
    docs = _sample_documents()[:12] + ["", "a", "word " * 600]
    together = embedder.embed_documents(docs)
    alone = np.stack([embedder.embed_documents([d])[0] for d in docs])
    assert together.shape == (len(docs), embedder.dimension)
    assert float((together * alone).sum(axis=1).min()) > 0.99999  # padding never reaches a vector
    assert float(np.dot(embedder.embed_query(docs[0]), together[0])) > 0.99999  # no document prefix on this model


@pytest.mark.slow
def test_int8_is_its_own_fingerprint_and_close(cached, tmp_path):
    embedder, cache = cached
    spec = embedder.spec
    int8 = onnx.OnnxEmbedder(spec, embedder.source, fingerprint=model_fingerprint(spec, str(embedder.source)),
                             cache=cache, quantize="int8")
    assert int8.fingerprint == embedder.fingerprint + "+int8"  # never mixed with FP32 vectors in one index
    assert float(np.dot(int8.embed_query("hello world"), embedder.embed_query("hello world"))) > 0.98
    assert (int8.cache_dir / "model-int8-per-channel.onnx").is_file()


def test_a_model_with_other_modules_runs_on_torch(tmp_path):
    model = tmp_path / "dense-model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    (model / "tokenizer.json").write_text("{}")
    (model / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Dense", "type": "sentence_transformers.models.Dense"}]))
    assert not onnx.supported(model)
    assert isinstance(load_embedder(str(model)), SentenceTransformerEmbedder)  # auto: not loaded, only chosen


def test_backend_and_quantize_settings_are_checked():
    with pytest.raises(InvalidArgument, match="auto, onnx or torch"):
        settings.get("backend", environ={"MEMSEARCH_BACKEND": "tensorflow"})
    with pytest.raises(InvalidArgument, match="none or int8"):
        settings.get("quantize", environ={"MEMSEARCH_QUANTIZE": "int4"})
    assert settings.cache_dir(environ={"XDG_CACHE_HOME": "/x/c"}) == settings.Path("/x/c/memsearch")
    assert settings.cache_dir(environ={"MEMSEARCH_CACHE": "/y"}) == settings.Path("/y")
