"""One big file streams to the store in batches: the result equals a one-batch build, progress
advances inside the file, an edit re-embeds only what changed, and a sync killed with ``-9``
anywhere inside the file never leaves it half-indexed as if it were whole (the next sync equals
a clean rebuild, whether the file was new, changed, deleted or reverted meanwhile)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from memsearch.engine.embed.embedder import HashEmbedder
from memsearch.engine.index import MemoryIndex
from memsearch.engine.ingest.batches import blake
from memsearch.engine.storage.store import Store
from tests.conftest import REPO, build

BIG = "notes/big.md"
FIRST = "The opening canary is zebra-alpha-17."
LAST = "The closing canary is okapi-omega-99."


def big_text(sections: int, variant: str = "") -> str:
    """A Markdown file of ``sections`` one-chunk sections, canaries in the first and the last."""
    parts = [f"# Big notes\n\n## Section 0\n\n{FIRST}\n"]
    for i in range(1, sections - 1):
        parts.append(f"## Section {i}\n\nItem {i}{variant} belongs to shard s{i % 7} and owner o{i % 11}; "
                     f"its latency budget is {i % 90} ms and its replica count {i % 5}.\n")
    parts.append(f"## Section {sections - 1}\n\n{LAST}\n")
    return "\n".join(parts)


def tree(tmp_path, sections: int = 60, name: str = "memory"):
    return build(tmp_path / name, {"MEMORY.md": "# Root\n", "notes/MEMORY.md": "# Notes\n\nBig and small notes.\n",
                                   "notes/small.md": "# Small\n\nA small file about the otter.\n", BIG: big_text(sections)})


def embedder() -> HashEmbedder:
    return HashEmbedder(dimension=32, name="hash-32")


def snapshot(db) -> tuple[list, dict]:
    """Every chunk row (ids, texts, vectors) and every files-table row of the index at ``db``."""
    store = Store(db)
    table = store.chunks()
    rows = table.to_arrow().select(["id", "path", "start_line", "end_line", "text", "file_hash", "embed_hash", "vector"]).to_pylist()
    states = {p: (s.file_hash, s.chunks) for p, s in store.file_states().items()}
    return sorted(rows, key=lambda r: r["id"]), states


def clean_rebuild(root, tmp_path, name: str = "clean") -> tuple[list, dict]:
    MemoryIndex(root, db=tmp_path / name, embedder=embedder()).sync()
    return snapshot(tmp_path / name)


@pytest.mark.slow
def test_a_file_streamed_over_many_batches_equals_one_batch(tmp_path, monkeypatch):
    root = tree(tmp_path)
    monkeypatch.setenv("MEMSEARCH_BATCH_CHUNKS", "100000")
    whole = clean_rebuild(root, tmp_path, "whole")
    monkeypatch.setenv("MEMSEARCH_BATCH_CHUNKS", "7")
    calls = []
    index = MemoryIndex(root, db=tmp_path / "db", embedder=embedder())
    report = index.sync(progress=lambda phase, done, total, chunks: calls.append((phase, done, total, chunks)))
    assert snapshot(tmp_path / "db") == whole and report.chunks_embedded == len(whole[0]) >= 60
    assert whole[1][BIG] == (blake((root / BIG).read_bytes()), 60)
    # progress advances inside the one big file: many steps before its file is done
    inside = [chunks for phase, done, total, chunks in calls if phase == "index" and done < total and chunks]
    assert len(inside) >= 5 and inside == sorted(inside) and len(set(inside)) == len(inside), calls
    hits = {hit.text for q in ("zebra-alpha-17", "okapi-omega-99") for hit in index.search(q, k=1, mode="keyword")}
    assert any(FIRST in t for t in hits) and any(LAST in t for t in hits)


@pytest.mark.slow
def test_an_edit_of_a_streamed_file_re_embeds_only_what_changed(tmp_path, monkeypatch):
    root = tree(tmp_path)
    monkeypatch.setenv("MEMSEARCH_BATCH_CHUNKS", "7")
    index = MemoryIndex(root, db=tmp_path / "db", embedder=embedder())
    index.sync()
    text = (root / BIG).read_text()
    (root / BIG).write_text(text.replace("Item 3 belongs", "Item 3 now belongs").replace("Item 50 belongs", "Item 50 once belonged"))
    report = index.sync()
    assert report.files_changed == 1 and report.chunks_embedded == 2 and report.chunks_reused >= 58
    assert snapshot(tmp_path / "db") == clean_rebuild(root, tmp_path)


def test_a_re_chunked_file_replaces_what_its_first_pass_committed(tmp_path, monkeypatch):
    """A chunk over the model's limit late in the file re-chunks the whole file with a smaller
    budget after earlier batches were committed: those rows must not survive."""
    root = tree(tmp_path)
    (root / BIG).write_text(big_text(60) + "\n## Punctuation\n\n" + "!" * 300 + "\n")
    monkeypatch.setenv("MEMSEARCH_BATCH_CHUNKS", "100000")
    whole = clean_rebuild(root, tmp_path, "whole")
    monkeypatch.setenv("MEMSEARCH_BATCH_CHUNKS", "5")
    MemoryIndex(root, db=tmp_path / "db", embedder=embedder()).sync()
    assert snapshot(tmp_path / "db") == whole


# --- kill -9 inside one file ----------------------------------------------------------------------

CHILD = r"""
import os, signal, sys
from memsearch.engine.embed.embedder import HashEmbedder
from memsearch.engine.index import MemoryIndex
from memsearch.engine.storage.store import Store

root, db, point, big = sys.argv[1:5]
calls = {"replace": 0, "write": 0}
die = lambda: os.kill(os.getpid(), signal.SIGKILL)
mark, replace, write = Store.mark_incomplete, Store.replace_files, Store._write_states

def mark_incomplete(self, states):
    mark(self, states)
    if point == "after-mark":
        die()

def replace_files(self, *args, **kwargs):
    replace(self, *args, **kwargs)
    calls["replace"] += 1
    if point == "after-batch-3" and calls["replace"] == 3:
        die()

def write_states(self, paths, states):
    calls["write"] += 1
    if point == "before-first-states" and calls["write"] == 1:
        die()
    if point == "before-last-states" and any(s["path"] == big and s["file_hash"] for s in states):
        die()  # every row of the big file committed (old versions deleted), its real hash not yet
    write(self, paths, states)

Store.mark_incomplete, Store.replace_files, Store._write_states = mark_incomplete, replace_files, write_states
MemoryIndex(root, db=db, embedder=HashEmbedder(dimension=32, name="hash-32")).sync()
print("not killed")
"""

POINTS = ["after-mark", "before-first-states", "after-batch-3", "before-last-states"]


def run_killed(root, db, point: str) -> None:
    """A sync in another process, killed with SIGKILL at ``point`` (batches of 7 chunks)."""
    env = dict(os.environ, MEMSEARCH_BATCH_CHUNKS="7", PYTHONPATH=str(REPO))
    done = subprocess.run([sys.executable, "-c", CHILD, str(root), str(db), point, BIG], capture_output=True, text=True,
                          env=env, cwd=str(REPO), timeout=300)
    assert done.returncode == -signal.SIGKILL, (done.returncode, done.stdout, done.stderr[-2000:])


def not_complete(root, db) -> bool:
    """Whether the index records the big file as anything but whole and current."""
    state = Store(db).file_states().get(BIG)
    return state is None or state.file_hash != blake((root / BIG).read_bytes()) or state.mtime_ns != (root / BIG).stat().st_mtime_ns


@pytest.mark.slow
@pytest.mark.parametrize("point", POINTS)
@pytest.mark.parametrize("before", ["new", "changed"])
def test_kill_9_inside_a_streamed_file_then_the_next_sync_equals_a_rebuild(tmp_path, monkeypatch, point, before):
    root = tree(tmp_path)
    db = tmp_path / "db"
    monkeypatch.setenv("MEMSEARCH_BATCH_CHUNKS", "7")
    if before == "changed":  # a complete index of the old version first
        MemoryIndex(root, db=db, embedder=embedder()).sync()
        (root / BIG).write_text(big_text(60, variant="b"))
    run_killed(root, db, point)
    assert not_complete(root, db)  # never taken for whole
    report = MemoryIndex(root, db=db, embedder=embedder()).sync()
    assert BIG in report.changed_paths
    assert snapshot(db) == clean_rebuild(root, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("then", ["deleted", "reverted", "grown"])
def test_kill_9_inside_a_streamed_file_then_it_changes_again(tmp_path, monkeypatch, then):
    root = tree(tmp_path)
    db = tmp_path / "db"
    monkeypatch.setenv("MEMSEARCH_BATCH_CHUNKS", "7")
    MemoryIndex(root, db=db, embedder=embedder()).sync()
    old = (root / BIG).read_text()
    (root / BIG).write_text(big_text(60, variant="b"))
    run_killed(root, db, "after-batch-3")
    if then == "deleted":
        (root / BIG).unlink()
    elif then == "reverted":
        (root / BIG).write_text(old)
    else:
        (root / BIG).write_text(big_text(90, variant="c"))
    MemoryIndex(root, db=db, embedder=embedder()).sync()
    got = snapshot(db)
    assert got == clean_rebuild(root, tmp_path)
    assert (BIG in got[1]) == (then != "deleted") and all(r["path"] != BIG for r in got[0]) == (then == "deleted")


@pytest.mark.slow
def test_a_reader_of_a_killed_sync_still_answers(tmp_path, monkeypatch):
    root = tree(tmp_path)
    db = tmp_path / "db"
    run_killed(root, db, "after-batch-3")
    index = MemoryIndex(root, db=db, embedder=embedder())
    assert [h.path for h in index.search("zebra-alpha-17", k=1, mode="keyword")] == [BIG]  # committed batches answer
    assert index.search("otter", k=3, mode="keyword") == []  # notes/small.md comes after the big file: not indexed yet


@pytest.mark.slow
def test_real_model_streams_one_file_and_finds_its_first_and_last_batch(tmp_path, monkeypatch, real_embedder):
    """End to end with the default model: one file over six batches of 8 chunks, then hybrid
    searches in plain words find a fact of its first batch and one of its last."""
    sections = [f"## Section {i}\n\nItem {i} belongs to shard s{i % 7}; its latency budget is {i % 90} ms.\n" for i in range(2, 46)]
    text = ("# Big notes\n\n## Night shift\n\nThe zebra enclosure is cleaned by the night shift every Tuesday.\n\n"
            + "\n".join(sections) + "\n## Archive\n\nThe okapi photographs are kept in the archive room on floor three.\n")
    root = build(tmp_path / "memory", {"MEMORY.md": "# Root\n", "notes/MEMORY.md": "# Notes\n", BIG: text})
    monkeypatch.setenv("MEMSEARCH_BATCH_CHUNKS", "8")
    commits = []
    index = MemoryIndex(root, db=tmp_path / "db", embedder=real_embedder)
    report = index.sync(progress=lambda phase, done, total, chunks: commits.append(chunks) if phase == "index" else None)
    assert report.chunks_total >= 46 and len(commits) >= 7  # the start, then one step per batch
    assert Store(tmp_path / "db").file_states()[BIG].file_hash == blake((root / BIG).read_bytes())
    first = index.search("who cleans the zebra enclosure", k=3)
    last = index.search("where are the okapi photographs kept", k=3)
    assert first[0].path == BIG and "night shift" in first[0].text and first[0].start_line <= 5
    assert last[0].path == BIG and "archive room" in last[0].text and last[0].start_line > 40


@pytest.mark.slow
def test_the_chunker_is_lazy_and_never_counts_a_huge_section_whole():
    """One 3 MB section with no heading: chunks come one at a time, and no text much over the
    budget is ever handed to the token counter (a 50 MB file is never encoded in one piece)."""
    from memsearch.engine.ingest.chunker import MAX_TOKEN_CHARS, ChunkerConfig, chunk_document, iter_chunks
    from memsearch.memory.document import parse_document

    paragraph = "The shard owner rotates the replica keys every night after the backup window closes. " * 3
    doc = parse_document("notes/huge.md", "# Huge\n\n" + "\n\n".join(f"{i}: {paragraph}" for i in range(12_000)))
    counted = []

    def count(text: str) -> int:
        counted.append(len(text))
        return len(text.split())

    chunks = iter_chunks(doc, count, ChunkerConfig(max_tokens=128))
    first = next(chunks)
    assert first.start_line == 1 and len(counted) < 100  # the first chunk is out before the rest are made
    rest = list(chunks)
    assert max(counted) <= 128 * MAX_TOKEN_CHARS and len(rest) > 5_000
    assert [first, *rest] == chunk_document(doc, lambda t: len(t.split()), ChunkerConfig(max_tokens=128))
