"""Query encodes coalesced across threads: each caller gets its own row, equal to a lone encode."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import numpy as np
import pytest

from memsearch.engine.embed.batcher import QueryBatcher, batcher_stats
from memsearch.engine.embed.embedder import HashEmbedder

QUERIES = ["when is the next milestone", "who owns the billing migration", "kayak", "release plan",
           "what are the risks of the roadmap for next quarter and who is on call", "hiring",
           "customer escalation about invoices and payment terms", "travel budget approval"]


class GatedEncoder:
    """encode_many of a HashEmbedder whose first call waits until ``release`` is set (so others queue)."""

    def __init__(self):
        self.inner = HashEmbedder(dimension=32)
        self.release = threading.Event()
        self.started = threading.Event()
        self.batches: list[list[str]] = []

    def __call__(self, texts):
        self.batches.append(list(texts))
        if len(self.batches) == 1:
            self.started.set()
            self.release.wait(10)
        if any(t == "boom" for t in texts):
            raise ValueError("boom")
        return self.inner.embed_queries(texts)


def _spawn(batcher, texts, results, errors):
    def one(i, text):
        try:
            results[i] = batcher.embed(text)
        except Exception as exc:  # noqa: BLE001 - checked by the test
            errors[i] = exc

    return [threading.Thread(target=one, args=(i, t)) for i, t in enumerate(texts)]


def test_a_lone_caller_encodes_at_once_alone():
    encoder = GatedEncoder()
    encoder.release.set()
    batcher = QueryBatcher(encoder)
    vector = batcher.embed("kayak")
    assert encoder.batches == [["kayak"]]
    assert np.array_equal(vector, HashEmbedder(dimension=32).embed_query("kayak"))


def test_callers_arriving_during_a_batch_share_the_next_one_and_get_their_own_rows():
    encoder = GatedEncoder()
    batcher = QueryBatcher(encoder)
    first: dict = {}
    head = _spawn(batcher, ["first query"], first, {})[0]
    head.start()
    assert encoder.started.wait(10)
    results: dict = {}
    errors: dict = {}
    threads = _spawn(batcher, QUERIES, results, errors)
    for t in threads:
        t.start()
    while len(batcher._pending) < len(QUERIES):  # all queued behind the gated first batch
        threading.Event().wait(0.01)
    encoder.release.set()
    for t in threads + [head]:
        t.join(10)
    assert not errors
    assert encoder.batches[0] == ["first query"]
    assert sorted(encoder.batches[1]) == sorted(QUERIES) and len(encoder.batches) == 2  # one shared call
    lone = HashEmbedder(dimension=32)
    for i, text in enumerate(QUERIES):
        assert np.array_equal(results[i], lone.embed_query(text))
    assert (batcher.batches, batcher.texts) == (2, len(QUERIES) + 1)
    assert batcher.wakeups == len(QUERIES)  # each waiting caller woken once: the leader with the lead, the rest done


def test_batches_are_cut_at_max_batch():
    encoder = GatedEncoder()
    batcher = QueryBatcher(encoder, max_batch=3)
    head = _spawn(batcher, ["first"], {}, {})[0]
    head.start()
    assert encoder.started.wait(10)
    results: dict = {}
    threads = _spawn(batcher, QUERIES, results, {})
    for t in threads:
        t.start()
    while len(batcher._pending) < len(QUERIES):
        threading.Event().wait(0.01)
    encoder.release.set()
    for t in threads + [head]:
        t.join(10)
    assert len(results) == len(QUERIES)
    assert [len(b) for b in encoder.batches[1:]] == [3, 3, 2]


def test_a_finished_batch_wakes_its_own_callers_and_the_next_leader_only():
    """Callers queued for a later batch stay asleep while an earlier one finishes: every waiting caller is
    woken exactly once (its batch done, or handed the lead), never to wait again."""
    encoder = GatedEncoder()
    batcher = QueryBatcher(encoder, max_batch=3)
    head = _spawn(batcher, ["first"], {}, {})[0]
    head.start()
    assert encoder.started.wait(10)
    results: dict = {}
    threads = _spawn(batcher, QUERIES, results, {})
    for t in threads:
        t.start()
    while len(batcher._pending) < len(QUERIES):
        threading.Event().wait(0.01)
    assert batcher.wakeups == 0
    encoder.release.set()
    for t in threads + [head]:
        t.join(10)
    assert len(results) == len(QUERIES) and not batcher._pending
    assert batcher.wakeups == len(QUERIES)
    assert [len(b) for b in encoder.batches[1:]] == [3, 3, 2]
    assert sorted(t for b in encoder.batches[1:] for t in b) == sorted(QUERIES)  # each text encoded once
    lone = HashEmbedder(dimension=32)
    for i, text in enumerate(QUERIES):
        assert np.array_equal(results[i], lone.embed_query(text))
    assert batcher.embed("kayak") is not None and batcher.wakeups == len(QUERIES)  # a lone caller waits for no one


def test_an_error_reaches_the_callers_of_its_batch_only():
    encoder = GatedEncoder()
    batcher = QueryBatcher(encoder)
    head = _spawn(batcher, ["first"], {}, {})[0]
    head.start()
    assert encoder.started.wait(10)
    results: dict = {}
    errors: dict = {}
    threads = _spawn(batcher, ["boom", "kayak"], results, errors)
    for t in threads:
        t.start()
    while len(batcher._pending) < 2:
        threading.Event().wait(0.01)
    encoder.release.set()
    for t in threads + [head]:
        t.join(10)
    assert set(errors) == {0, 1} and all(isinstance(e, ValueError) for e in errors.values())
    assert np.array_equal(batcher.embed("kayak"), HashEmbedder(dimension=32).embed_query("kayak"))  # next batch works


@pytest.mark.slow
def test_real_model_batched_rows_equal_lone_encodes_bit_for_bit(real_embedder):
    lone = np.stack([real_embedder.embed_queries([q])[0] for q in QUERIES])
    assert np.array_equal(real_embedder.embed_queries(QUERIES), lone)
    results: dict = {}
    threads = _spawn(real_embedder.query_batcher, QUERIES * 2, results, {})
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    for i, text in enumerate(QUERIES * 2):
        assert np.array_equal(results[i], lone[i % len(QUERIES)])
        assert np.array_equal(real_embedder.embed_query(text), lone[i % len(QUERIES)])


@pytest.mark.slow
def test_real_model_toolbox_searches_in_threads_equal_serial_ones(examples_copy, real_embedder):
    """An in-process ToolBox (as ``serve --http`` runs one) answers concurrent searches; each equals its lone answer."""
    from memsearch.engine.index import MemoryIndex
    from memsearch.harness.tools import ToolBox

    index = MemoryIndex(examples_copy, embedder=real_embedder)
    index.sync()
    box = ToolBox(examples_copy, index=index)
    calls = [{"query": q, "k": 5} for q in QUERIES]
    serial = [box.call("memory_search", c) for c in calls]
    assert all(r["hits"] for r in serial)
    results: dict = {}

    def worker(n: int) -> None:
        for i in range(len(calls)):
            results[(n, i)] = box.call("memory_search", calls[(n + i) % len(calls)])

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert len(results) == 8 * len(calls)
    for (n, i), result in results.items():
        assert result == serial[(n + i) % len(calls)]


def test_the_batcher_counts_its_batches_texts_and_the_cpu_of_its_model_calls():
    """``batcher_stats``: what a daemon's ``status`` reports, so that a benchmark splits a search's CPU."""
    inner = HashEmbedder(dimension=32)

    def busy(texts):  # a model call that uses 20 ms of this thread's CPU
        until = time.thread_time() + 0.02
        while time.thread_time() < until:
            pass
        return inner.embed_queries(texts)

    batcher = QueryBatcher(busy)
    holder = SimpleNamespace(query_batcher=batcher)
    assert batcher_stats(holder) == {"batches": 0, "texts": 0, "cpu_s": 0.0, "wall_s": 0.0}
    batcher.embed("kayak")
    batcher.embed("hiring")
    stats = batcher_stats(holder)
    assert (stats["batches"], stats["texts"]) == (2, 2)
    assert 0.04 <= stats["cpu_s"] < 1.0  # both calls' CPU, in the calling thread
    assert stats["wall_s"] >= stats["cpu_s"] - 0.005  # a call's wall time is at least its thread's CPU
    assert batcher_stats(HashEmbedder()) is None  # an embedder without a batcher reports none
