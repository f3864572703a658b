"""A cold index is searchable before it is embedded: a sync of many new files writes their text
first (keyword hits say ``partial``, the vector leg leaves those rows out, ``status`` counts them),
then embeds and replaces them; the end state equals a one-pass build, and a sync killed with ``-9``
between the passes or inside either leaves what the next sync turns into a rebuild's index."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading

import pytest

from memsearch.engine.check import check_index
from memsearch.engine.embed.embedder import HashEmbedder
from memsearch.engine.index import MemoryIndex
from memsearch.engine.storage.store import Store
from memsearch.service.process import daemon_status
from tests.conftest import REPO, build
from tests.reliability.test_big_files import BIG, big_text, snapshot

FILES = 24


def tree(tmp_path):
    files = {"MEMORY.md": "# Root\n", "notes/MEMORY.md": "# Notes\n\nMany small notes and one big one.\n",
             BIG: big_text(40)}
    for i in range(FILES):
        files[f"notes/n{i:02d}.md"] = (f"# Note {i}\n\n## Otters\n\nThe otter named tag{i} swims in pond {i % 5}.\n\n"
                                       f"## Budget\n\nItem {i} costs {i * 3} credits and ships in week {i % 9}.\n")
    return build(tmp_path / "memory", files)


def embedder() -> HashEmbedder:
    return HashEmbedder(dimension=32, name="hash-32")


class Gated(HashEmbedder):
    """A HashEmbedder whose document embedding waits for ``gate``: the sync pauses between its passes."""

    def __init__(self, gate: threading.Event):
        super().__init__(dimension=32, name="hash-32")
        self.gate = gate

    def embed_documents(self, texts):
        assert self.gate.wait(120), "the test never opened the gate"
        return super().embed_documents(texts)


def one_pass(root, tmp_path, monkeypatch) -> tuple[list, dict]:
    monkeypatch.setenv("MEMSEARCH_TEXT_FIRST_FILES", "0")
    MemoryIndex(root, db=tmp_path / "clean", embedder=embedder()).sync()
    monkeypatch.delenv("MEMSEARCH_TEXT_FIRST_FILES")
    return snapshot(tmp_path / "clean")


def test_a_text_first_build_equals_a_one_pass_build(tmp_path, monkeypatch):
    root = tree(tmp_path)
    monkeypatch.setenv("MEMSEARCH_BATCH_CHUNKS", "7")  # the big file streams over several batches in both passes
    whole = one_pass(root, tmp_path, monkeypatch)
    monkeypatch.setenv("MEMSEARCH_TEXT_FIRST_FILES", "2")
    report = MemoryIndex(root, db=tmp_path / "db", embedder=embedder()).sync()
    assert snapshot(tmp_path / "db") == whole
    assert report.files_added == FILES + 2 and report.chunks_embedded == len(whole[0]) > 2 * FILES
    assert Store(tmp_path / "db").text_only_rows() == 0


def test_hits_during_a_cold_index_are_partial_then_whole(tmp_path, monkeypatch):
    root = tree(tmp_path)
    db = tmp_path / "db"
    monkeypatch.setenv("MEMSEARCH_TEXT_FIRST_FILES", "2")
    gate = threading.Event()
    writer = MemoryIndex(root, db=db, embedder=Gated(gate))
    result: list = []
    sync = threading.Thread(target=lambda: result.append(writer.sync()))
    sync.start()
    reader = MemoryIndex(root, db=db, embedder=embedder())  # another handle, as the daemon's reader and serve use
    try:
        for _ in range(600):  # the text pass commits without the model; wait for the whole of it
            if daemon_status(root, db)["partial_files"] == FILES + 2 and Store(db).text_only_rows() >= 2 * FILES:
                break
            sync.join(0.1)
        info = daemon_status(root, db)
        assert info["partial_files"] == FILES + 2 and info["partial_chunks"] == info["chunks"] > 2 * FILES
        # files written text only wait to be added: `status` said "26 changes not yet indexed (0 added, 26 changed,
        # 0 removed)" for a tree nobody changed; the finished sync counts them added (files_added below)
        assert info["pending"] == {"added": FILES + 2, "changed": 0, "removed": 0, "total": FILES + 2}, info["pending"]
        keyword = reader.search("otter tag7", k=3, mode="keyword")
        assert keyword and keyword[0].path == "notes/n07.md"
        assert all(h.partial and not h.stale for h in keyword)
        assert reader.search("otter tag7", k=3, mode="vector") == []  # nothing embedded yet: no vector hits
        hybrid = reader.search("otter tag7", k=3)
        assert hybrid[0].path == "notes/n07.md" and all(h.partial for h in hybrid)
        assert sync.is_alive() and not result  # still waiting on the model
    finally:
        gate.set()
        sync.join(120)
    assert result and result[0].files_added == FILES + 2
    hits = reader.search("otter tag7", k=3)
    assert hits[0].path == "notes/n07.md" and not any(h.partial for h in hits)
    assert reader.search("otter tag7", k=3, mode="vector")
    info = daemon_status(root, db)
    assert info["partial_files"] == info["partial_chunks"] == 0


# --- kill -9 between and inside the passes -------------------------------------------------------

CHILD = r"""
import os, signal, sys
from memsearch.engine.check import check_index
from memsearch.engine.embed.embedder import HashEmbedder
from memsearch.engine.index import MemoryIndex
from memsearch.engine.ingest.sync import Sync

root, db, point = sys.argv[1:4]
calls = {"text": 0, "flush": 0}
die = lambda: os.kill(os.getpid(), signal.SIGKILL)
write_text, write_texts, flush = Sync.write_text, Sync.write_texts, Sync.flush

def text(self, batch):
    write_text(self, batch)
    calls["text"] += 1
    if point == "inside-text-pass" and calls["text"] == 3:
        die()

def texts(self, pending):
    written = write_texts(self, pending)
    if point == "between-passes":
        die()
    return written

def flushed(self, batch, deletions):
    flush(self, batch, deletions)
    calls["flush"] += 1
    if point == "inside-embed-pass" and calls["flush"] == 3:
        die()

Sync.write_text, Sync.write_texts, Sync.flush = text, texts, flushed
MemoryIndex(root, db=db, embedder=HashEmbedder(dimension=32, name="hash-32")).sync()
print("not killed")
"""


@pytest.mark.slow
@pytest.mark.parametrize("point", ["inside-text-pass", "between-passes", "inside-embed-pass"])
def test_kill_9_during_a_cold_index_then_the_next_sync_equals_a_rebuild(tmp_path, monkeypatch, point):
    root = tree(tmp_path)
    db = tmp_path / "db"
    monkeypatch.setenv("MEMSEARCH_BATCH_CHUNKS", "7")
    env = dict(os.environ, MEMSEARCH_BATCH_CHUNKS="7", MEMSEARCH_TEXT_FIRST_FILES="2", PYTHONPATH=str(REPO))
    done = subprocess.run([sys.executable, "-c", CHILD, str(root), str(db), point], capture_output=True, text=True,
                          env=env, cwd=str(REPO), timeout=300)
    assert done.returncode == -signal.SIGKILL, (done.returncode, done.stdout, done.stderr[-2000:])
    left = daemon_status(root, db)
    assert left["partial_files"] > 0  # never taken for whole
    checked = check_index(MemoryIndex(root, db=db, embedder=embedder()))
    assert checked.ok and checked.stale, checked.findings  # unfinished, not damaged
    if point != "inside-text-pass":  # the text of every file is in, and keyword search finds it
        hits = MemoryIndex(root, db=db, embedder=embedder()).search("otter tag19", k=1, mode="keyword")
        assert hits[0].path == "notes/n19.md" and hits[0].partial
    report = MemoryIndex(root, db=db, embedder=embedder()).sync()
    assert report.changed
    assert snapshot(db) == one_pass(root, tmp_path, monkeypatch)
    assert daemon_status(root, db)["partial_files"] == 0


@pytest.mark.slow
def test_real_model_cold_index_answers_keyword_hits_before_embedding(tmp_path, monkeypatch, real_embedder):
    """With the real model: the text pass needs only its tokenizer, keyword hits come back partial while
    the model call waits, and the finished index finds the same note by meaning too."""
    root = tree(tmp_path)
    db = tmp_path / "db"
    monkeypatch.setenv("MEMSEARCH_TEXT_FIRST_FILES", "2")
    gate = threading.Event()
    embed = real_embedder.embed_documents

    class Paused:  # the real embedder, its document calls held until the test has searched
        def __getattr__(self, name):
            return getattr(real_embedder, name)

        def embed_documents(self, texts):
            assert gate.wait(300)
            return embed(texts)

    writer = MemoryIndex(root, db=db, embedder=Paused())
    result: list = []
    sync = threading.Thread(target=lambda: result.append(writer.sync()))
    sync.start()
    reader = MemoryIndex(root, db=db, embedder=real_embedder)
    try:
        for _ in range(1200):
            if daemon_status(root, db)["partial_files"] == FILES + 2:
                break
            sync.join(0.1)
        hits = reader.search("otter tag11", k=2)
        assert hits[0].path == "notes/n11.md" and hits[0].partial
    finally:
        gate.set()
        sync.join(600)
    assert result and daemon_status(root, db)["partial_chunks"] == 0
    hits = reader.search("otter tag11", k=2)
    assert hits[0].path == "notes/n11.md" and not hits[0].partial
    assert reader.search("which otter swims in a pond", k=3, mode="vector")
