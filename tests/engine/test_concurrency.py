"""Concurrency made honest: thread-owned writes, searches that never wait, rebuilds seen by readers.

The fast cases use the HashEmbedder; each behaviour is repeated end to end with the real model
and real processes (a second Python process holding the lock or rebuilding the index).
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import threading

import pytest

from memsearch.engine.embed.embedder import HashEmbedder
from memsearch.engine.index import MemoryIndex
from memsearch.engine.storage import lock as lock_module
from memsearch.errors import IndexLocked, IndexMismatch
from memsearch.harness import api

TREE = {
    "MEMORY.md": "# Root\n\nCore.\n",
    "notes/MEMORY.md": "# Notes\n\nDaily notes.\n",
    "notes/a.md": "# A\n\nThe alpha note about ClickHouse compression.\n",
    "notes/b.md": "# B\n\nThe beta note about Postgres replication.\n",
}


class WatchfulEmbedder(HashEmbedder):
    """Records, at every embed call, whether the calling thread owns the index's write."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.index = None
        self.inside = 0
        self.most_inside = 0
        self.violations: list[str] = []
        self._guard = threading.Lock()

    def embed_documents(self, texts):
        with self._guard:
            self.inside += 1
            self.most_inside = max(self.most_inside, self.inside)
        try:
            lock = self.index.lock
            if not lock.held:
                self.violations.append("embedding without the flock")
            if lock.writing_thread != threading.get_ident():
                self.violations.append("embedding in a thread that does not own the write")
            threading.Event().wait(0.02)  # widen the window a racing writer would need
            return super().embed_documents(texts)
        finally:
            with self._guard:
                self.inside -= 1


def _holder(db, seconds: float = 60.0) -> subprocess.Popen:
    """Another process holding the writer lock of ``db`` until killed (or ``seconds``)."""
    proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import time
        from memsearch.engine.storage.lock import WriterLock
        lock = WriterLock({str(db)!r}, purpose="test holder").acquire()
        print("held", flush=True)
        time.sleep({seconds})
        lock.release()
    """)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    return proc


def _contents(index: MemoryIndex) -> dict[str, list[str]]:
    table = index.store.chunks()
    rows = table.to_arrow().to_pylist() if table is not None else []
    out: dict[str, list[str]] = {}
    for row in sorted(rows, key=lambda r: (r["path"], r["start_line"])):
        out.setdefault(row["path"], []).append(row["text"])
    return out


def test_two_threads_syncing_one_index_queue(make_tree, tmp_path):
    root = make_tree(TREE)
    embedder = WatchfulEmbedder()
    index = MemoryIndex(root, db=tmp_path / "db", embedder=embedder)
    embedder.index = index
    index.sync()
    errors: list[BaseException] = []
    start = threading.Barrier(2)

    def writer(name: str) -> None:
        try:
            start.wait()
            for i in range(5):
                (root / "notes" / f"{name}-{i}.md").write_text(f"# {name} {i}\n\nNote {i} of writer {name}.\n")
                index.sync(wait=None)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in ("left", "right")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert embedder.violations == []
    assert embedder.most_inside == 1  # never two writers at once
    assert not index.lock.held  # both holds given back: the flock is closed
    clean = MemoryIndex(root, db=tmp_path / "clean", embedder=HashEmbedder())
    clean.sync()
    assert _contents(index) == _contents(clean)


def test_a_thread_writing_makes_another_wait_or_refuse(make_tree, tmp_path):
    root = make_tree(TREE)
    index = MemoryIndex(root, db=tmp_path / "db", embedder=HashEmbedder())
    entered, leave = threading.Event(), threading.Event()

    def hold() -> None:
        with index.lock.writing(timeout=None):
            entered.set()
            leave.wait(30)

    t = threading.Thread(target=hold)
    t.start()
    assert entered.wait(30)
    try:
        with pytest.raises(IndexLocked, match="another thread of this process"):
            index.sync(wait=0.0)
    finally:
        leave.set()
        t.join()
    assert index.sync(wait=0.0).files_added == 3


def test_daemon_hold_is_shared_and_released_from_another_thread(make_tree, tmp_path):
    root = make_tree(TREE)
    index = MemoryIndex(root, db=tmp_path / "db", embedder=HashEmbedder())
    index.lock.acquire()  # a daemon's life-long hold, taken in this thread
    worker = threading.Thread(target=index.sync)
    worker.start()
    worker.join()
    assert index.lock.held and index.store.chunks().count_rows() > 0
    releaser = threading.Thread(target=index.lock.release)
    releaser.start()
    releaser.join()
    assert not index.lock.held


def test_search_never_waits_on_the_writer_lock(make_tree, tmp_path, monkeypatch, real_embedder):
    root = make_tree(TREE)
    db = tmp_path / "db"
    index = api.open_index(root, db=db)  # the real model, as memsearch.search() opens it
    index.sync()
    holder = _holder(db)
    try:
        waits: list[float] = []
        monkeypatch.setattr(lock_module.time, "sleep", lambda s: waits.append(s))
        with pytest.raises(IndexLocked, match="test holder"):
            index.sync(wait=0.0)
        assert waits == []  # a zero wait is one try, never a poll
        hits = api.search("ClickHouse compression", root, k=2, db=db)
        assert hits and hits[0]["path"] == "notes/a.md"
        assert waits == []
    finally:
        holder.kill()
        holder.wait()


def test_rebuild_drops_inside_the_sync_under_one_hold_and_honours_wait(make_tree, tmp_path):
    root = make_tree(TREE)
    db = tmp_path / "db"
    MemoryIndex(root, db=db, embedder=HashEmbedder()).sync()
    holder = _holder(db)
    try:
        rebuild = MemoryIndex(root, db=db, embedder=HashEmbedder(), rebuild=True)
        assert rebuild.store.chunks().count_rows() > 0  # nothing dropped before the sync
        with pytest.raises(IndexLocked):
            rebuild.sync(wait=0.0)
        assert rebuild.store.chunks().count_rows() > 0  # refused: the old index is intact
    finally:
        holder.kill()
        holder.wait()
    seen = []
    original = rebuild.store.drop

    def drop():
        seen.append((rebuild.lock.held, rebuild.lock.writing_thread == threading.get_ident()))
        original()

    rebuild.store.drop = drop
    report = rebuild.sync(wait=0.0)
    assert seen == [(True, True)] and report.files_added == 3


@pytest.mark.slow
def test_cli_rebuild_waits_for_the_other_writer(examples_copy, tmp_path):
    db = tmp_path / "db"
    holder = _holder(db, seconds=3)
    try:
        done = subprocess.run([sys.executable, "-m", "memsearch", "index", str(examples_copy), "--db", str(db),
                               "--rebuild", "--wait", "120"], capture_output=True, text=True, timeout=600)
    finally:
        holder.kill()
        holder.wait()
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr


def _rebuild_in_another_process(root, db, name: str, extra: dict[str, str] | None = None) -> None:
    files = {k: v for k, v in (extra or {}).items()}
    script = textwrap.dedent(f"""
        import pathlib
        from memsearch.engine.embed.embedder import HashEmbedder
        from memsearch.engine.index import MemoryIndex
        root = pathlib.Path({str(root)!r})
        for rel, text in {files!r}.items():
            (root / rel).write_text(text)
        MemoryIndex(root, db={str(db)!r}, embedder=HashEmbedder(dimension=384, name={name!r}), rebuild=True).sync()
    """)
    subprocess.run([sys.executable, "-c", script], check=True, timeout=300)


@pytest.mark.slow
def test_reader_follows_a_rebuild_by_another_process(make_tree, tmp_path):
    root = make_tree(TREE)
    db = tmp_path / "db"
    writer = MemoryIndex(root, db=db, embedder=HashEmbedder(dimension=384, name="hash-a"))
    writer.sync()
    reader = MemoryIndex(root, db=db, embedder=HashEmbedder(dimension=384, name="hash-a"))
    assert reader.search("beta Postgres", k=1)[0].path == "notes/b.md"
    # same model: the rebuild restarts table versions; the reader must not serve the old build
    (root / "notes" / "b.md").unlink()
    _rebuild_in_another_process(root, db, "hash-a", {"notes/c.md": "# C\n\nThe gamma note about Kafka.\n"})
    hits = reader.search("gamma Kafka", k=3)
    assert [h.path for h in hits][:1] == ["notes/c.md"]
    assert "notes/b.md" not in [h.path for h in reader.search("beta Postgres replication", k=10)]
    # another model of the same dimension: refused, never mixed (a name no --model takes: the plain rebuild)
    _rebuild_in_another_process(root, db, "hash-b")
    with pytest.raises(IndexMismatch, match="'hash-b', not 'hash-a'.*`memsearch index ROOT --rebuild`"):
        reader.search("gamma Kafka", k=3)


@pytest.mark.slow
def test_real_model_reader_refuses_a_rebuild_with_another_model(make_tree, tmp_path, real_embedder):
    root = make_tree(TREE)
    db = tmp_path / "db"
    reader = MemoryIndex(root, db=db, embedder=real_embedder)
    reader.sync()
    assert reader.search("which database replicates", k=1)[0].path == "notes/b.md"
    assert real_embedder.dimension == 384
    _rebuild_in_another_process(root, db, "another-384-model")
    with pytest.raises(IndexMismatch, match="'another-384-model', not 'all-MiniLM-L6-v2'.*index ROOT --model all-MiniLM-L6-v2"):
        reader.search("which database replicates", k=1)


def test_close_and_context_manager_release_the_worker_thread(make_tree, tmp_path):
    root = make_tree(TREE)
    with MemoryIndex(root, db=tmp_path / "db", embedder=HashEmbedder()) as index:
        index.sync()
        assert index.search("alpha", k=1)
        workers = set(index.searcher._executor._threads)
        assert workers and all(t.is_alive() for t in workers)
    assert index.searcher._executor is None
    assert not any(t.is_alive() for t in workers)
    assert index.search("alpha", k=1)  # still usable: reopened on demand
    index.close()
    index.close()  # idempotent


def test_open_index_cache_is_bounded_and_closes_what_it_evicts(make_tree, tmp_path, monkeypatch, real_embedder):
    monkeypatch.setenv("MEMSEARCH_MAX_OPEN", "2")
    monkeypatch.setattr(api, "_OPEN", type(api._OPEN)())
    roots = [make_tree(TREE) for _ in range(3)]
    opened = []
    for i, r in enumerate(roots):
        opened.append(api.open_index(r, db=tmp_path / f"db{i}"))
        opened[-1].searcher._pool()  # a worker thread to be released on eviction
    assert len(api._OPEN) == 2
    assert opened[0].searcher._executor is None and opened[1].searcher._executor is not None
    assert api.open_index(roots[2], db=tmp_path / "db2") is opened[2]
    assert opened[0].embedder is opened[2].embedder  # one model for all of them
    monkeypatch.setenv("MEMSEARCH_FUSION", "rrf")
    assert api.open_index(roots[2], db=tmp_path / "db2") is not opened[2]  # a changed setting: a new index
    api.close_indexes()
    assert not api._OPEN


def test_awatch_closes_off_the_event_loop(make_tree, tmp_path, monkeypatch):
    from memsearch.service import daemon as engine
    from memsearch.service import watcher

    root = make_tree(TREE)
    closed_in: list[int] = []
    original = engine.Daemon.close

    def close(self):
        closed_in.append(threading.get_ident())
        original(self)

    monkeypatch.setattr(engine.Daemon, "close", close)

    async def main() -> int:
        loop_thread = threading.get_ident()
        stop = asyncio.Event()
        index = MemoryIndex(root, db=tmp_path / "db", embedder=HashEmbedder())
        async for _report in watcher.awatch(root, index=index, stop_event=stop, state_file=False):
            stop.set()
        return loop_thread

    loop_thread = asyncio.run(asyncio.wait_for(main(), 120))
    assert closed_in and all(ident != loop_thread for ident in closed_in)
