"""The first call on a tree never indexed (issue 22): an in-process search writes text rows only when a
daemon is coming to embed them, a daemon asked before any row exists says IndexBuilding (never damage,
never an empty list), and a table listed before its first commit reads as absent. The end-to-end runs
with the real model and real processes are in tests/service/test_autostart.py."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import threading

import pytest

from memsearch.engine.embed.embedder import HashEmbedder
from memsearch.engine.index import MemoryIndex
from memsearch.engine.storage.store import Store
from memsearch.errors import IndexBuilding
from memsearch.location import IndexLocation
from memsearch.service import firstbuild, route
from memsearch.service.client import Client
from memsearch.service.server import Server
from tests.conftest import REPO
from tests.reliability.test_big_files import snapshot
from tests.reliability.test_text_first import FILES, embedder, one_pass, tree


def test_a_deferred_first_sync_writes_text_rows_only_and_the_next_sync_equals_a_one_pass_build(tmp_path, monkeypatch):
    root = tree(tmp_path)
    whole = one_pass(root, tmp_path, monkeypatch)
    monkeypatch.setenv("MEMSEARCH_TEXT_FIRST_FILES", "4")
    index = MemoryIndex(root, db=tmp_path / "db", embedder=embedder())
    report = index.sync(defer=True)
    assert report.deferred == FILES + 2 and report.files_added == FILES + 2 and report.chunks_embedded == 0
    store = Store(tmp_path / "db")
    assert store.text_only_rows() == store.row_count() == len(whole[0])
    hits = index.search("otter tag7", k=3)
    assert hits[0].path == "notes/n07.md" and all(h.partial for h in hits)
    again = index.sync(defer=True)  # a second deferred call leaves the embedding alone too
    assert again.deferred == FILES + 2 and again.files_added == again.files_changed == 0
    done = index.sync()
    assert done.deferred == 0 and (done.files_added, done.files_changed) == (FILES + 2, 0)  # embedded: added, not changed
    assert snapshot(tmp_path / "db") == whole
    assert not any(h.partial for h in index.search("otter tag7", k=3))


def test_a_first_build_is_deferred_whatever_its_size_and_a_later_sync_of_few_files_is_whole(tmp_path, monkeypatch):
    """Issue 28 item 4: any never-indexed root gets the text-first pass, not only from
    MEMSEARCH_TEXT_FIRST_FILES new files up; past the first build that threshold decides again."""
    from tests.conftest import build

    root = tree(tmp_path)
    monkeypatch.setenv("MEMSEARCH_TEXT_FIRST_FILES", str(FILES + 3))  # one more than there are files
    index = MemoryIndex(root, db=tmp_path / "db", embedder=embedder())
    report = index.sync(defer=True)
    store = Store(tmp_path / "db")
    assert report.deferred == FILES + 2 and report.chunks_embedded == 0
    assert store.text_only_rows() == store.row_count() > 0
    hits = index.search("otter tag7", k=3)
    assert hits[0].path == "notes/n07.md" and all(h.partial for h in hits)
    index.sync()
    build(root, {f"notes/new{i}.md": f"# New {i}\n\nA heron named crest{i}.\n" for i in range(3)})
    later = index.sync(defer=True)  # 3 new files in a built index: under the threshold, embedded now
    assert later.deferred == 0 and later.files_added == 3 and later.chunks_embedded > 0
    assert Store(tmp_path / "db").text_only_rows() == 0


def test_a_write_indexed_before_the_first_full_pass_leaves_no_file_unseen(tmp_path, monkeypatch):
    """Issue 33 item 2: a daemon syncs a written file before its first full pass (``only``); the other files
    of the never-indexed tree get their text rows in the same sync, so a search finds them, ``partial``."""
    root = tree(tmp_path)
    (root / "notes" / "written.md").write_text("# Written\n\nThe otter named tag7 moved to the river.\n")
    index = MemoryIndex(root, db=tmp_path / "db", embedder=embedder())
    report = index.sync(only=["notes/written.md"])
    assert report.files_added == 1 and report.changed_paths == ("notes/written.md",)
    hits = index.search("otter tag7", k=5)
    paths = {h.path: h.partial for h in hits}
    assert paths.get("notes/written.md") is False  # the write itself is indexed whole
    assert paths.get("notes/n07.md") is True  # the rest of the tree: found by keyword, flagged partial
    assert index.search("budget credits week", k=3, mode="keyword")[0].partial
    whole = index.sync()  # the first full pass embeds the rest
    assert (whole.files_added, whole.files_changed) == (FILES + 2, 0) and Store(tmp_path / "db").text_only_rows() == 0
    assert not any(h.partial for h in index.search("otter tag7", k=5))


def test_daemon_coming_reads_the_start_file_s_lock(tmp_path):
    from memsearch.location import service_start_file
    from memsearch.service.protocol import secure_dir

    where = IndexLocation.of(tree(tmp_path))
    assert not firstbuild.daemon_coming(where)  # no start file at all
    secure_dir(service_start_file().parent, create=True)
    fd = os.open(service_start_file(), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        assert not firstbuild.daemon_coming(where)  # a start file nobody holds: the service is gone
        fcntl.flock(fd, fcntl.LOCK_EX)  # as the auto-started service holds it for its whole life
        assert firstbuild.daemon_coming(where)
        assert not firstbuild.daemon_coming(IndexLocation.of(where.root, "s3://bucket/p"))
    finally:
        os.close(fd)


def test_an_in_process_search_defers_only_while_a_daemon_is_coming(tmp_path, monkeypatch):
    root = tree(tmp_path)
    monkeypatch.setenv("MEMSEARCH_TEXT_FIRST_FILES", "4")
    monkeypatch.setenv("MEMSEARCH_AUTOSTART", "0")
    where = IndexLocation.of(root)
    index = MemoryIndex(root, embedder=embedder())
    from contextlib import nullcontext

    from memsearch.engine.search.args import check_search

    args = check_search(root, "otter tag7", 3)
    from memsearch.location import service_start_file
    from memsearch.service.protocol import secure_dir

    secure_dir(service_start_file().parent, create=True)
    fd = os.open(service_start_file(), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        hits = route.search(where, args, using=lambda: nullcontext(index))
        assert hits[0]["path"] == "notes/n07.md" and all(h["partial"] for h in hits)
        assert Store(where.state).text_only_rows() == Store(where.state).row_count()
    finally:
        os.close(fd)  # the "daemon" died without embedding: the next call embeds everything itself
    hits = route.search(where, args, using=lambda: nullcontext(index))
    assert hits[0]["path"] == "notes/n07.md" and not any(h.get("partial") for h in hits)
    assert Store(where.state).text_only_rows() == 0


def test_a_no_daemon_search_embeds_here_while_the_service_runs_unless_its_caller_started_it(tmp_path, monkeypatch):
    """``--no-daemon`` asks no service to embed the index, so its first sync embeds here, even while this
    user's service runs (for other roots); the prompt hook and the CLI's fallback, which started it, defer."""
    from contextlib import nullcontext

    from memsearch.engine.search.args import check_search
    from memsearch.location import service_start_file
    from memsearch.service.protocol import secure_dir

    monkeypatch.setenv("MEMSEARCH_TEXT_FIRST_FILES", "4")
    monkeypatch.setenv("MEMSEARCH_AUTOSTART", "0")
    secure_dir(service_start_file().parent, create=True)
    fd = os.open(service_start_file(), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # the service runs
        for name, extra, partial in (("no-daemon", {"start": False}, False), ("hook", {"local": True, "coming": True}, True),
                                     ("cli fallback", {"local": True}, True)):  # the fast path asked, started it
            root = tree(tmp_path / name)
            where = IndexLocation.of(root)
            index = MemoryIndex(root, embedder=embedder())
            hits = route.search(where, check_search(root, "otter tag7", 3), using=lambda: nullcontext(index),
                                **extra)
            assert hits[0]["path"] == "notes/n07.md" and all(bool(h.get("partial")) == partial for h in hits), name
            assert (Store(where.state).text_only_rows() > 0) == partial, name
    finally:
        os.close(fd)


@pytest.mark.slow
def test_a_local_search_embeds_here_and_the_fast_path_s_fallback_defers_to_the_service_it_started(
        tmp_path, monkeypatch, capsys):
    """The CLI end to end, the real model: ``--local`` asks no service, so it embeds here while this user's
    service runs (for other roots); the fast path's fallback (``--asked``: it asked, and started the
    service) writes the text rows and leaves the embedding to that service."""
    import json

    from memsearch.location import service_start_file
    from memsearch.service.protocol import secure_dir
    from tests.conftest import run_cli

    monkeypatch.setenv("MEMSEARCH_AUTOSTART", "0")
    secure_dir(service_start_file().parent, create=True)
    fd = os.open(service_start_file(), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # the service runs
        for flag, partial in (("--local", False), ("--asked", True)):
            root = tree(tmp_path / flag.strip("-"))
            code, out, err = run_cli(["search", str(root), "otter tag7", "-k", "3", "--json", flag], capsys)
            assert code == 0, err
            hits = json.loads(out)["hits"]
            assert hits[0]["path"] == "notes/n07.md" and all(bool(h.get("partial")) == partial for h in hits), flag
            assert (Store(IndexLocation.of(root).state).text_only_rows() > 0) == partial, flag
    finally:
        os.close(fd)


HOLD = """
import sys
from memsearch.engine.storage.lock import WriterLock
lock = WriterLock(sys.argv[1], "watch")
lock.acquire()
print("held", flush=True)
sys.stdin.readline()
"""


def test_a_search_finding_another_writer_building_waits_then_says_index_building(tmp_path):
    root = tree(tmp_path)
    where = IndexLocation.of(root)
    where.ensure_state()
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(where.state)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, env=dict(os.environ, PYTHONPATH=str(REPO)))
    try:
        assert holder.stdout.readline().strip() == "held"
        # a daemon holds the writer lock and has not written its state yet: wait, then say so
        with pytest.raises(IndexBuilding, match="still indexing") as caught:
            firstbuild.await_rows(where, lambda: [], lambda: 0, wait=0.5)
        assert caught.value.hint.action == "wait" and "memory_read" in caught.value.render("tools")
        # its state says its first sync is over (an empty tree): the empty answer is the answer
        where.state_file.write_text(f'{{"pid": {holder.pid}, "state": "watching", "syncs": 1}}')
        assert firstbuild.await_rows(where, lambda: [], lambda: 0, wait=30) == []
        # rows appeared: their hits, at once
        assert firstbuild.await_rows(where, lambda: ["hit"], lambda: 1, wait=30) == ["hit"]
    finally:
        holder.communicate("\n", timeout=30)
    assert firstbuild.await_rows(where, lambda: [], lambda: 0, wait=30) == []  # nobody writes: nothing to wait for


def test_a_daemon_asked_before_its_first_rows_says_index_building(tmp_path):
    root = tree(tmp_path)
    index = MemoryIndex(root, embedder=HashEmbedder(dimension=32, name="hash-32"))
    state = {"state": "syncing", "syncs": 0, "pending": FILES + 2}
    with Server(index, status=lambda: dict(state)) as server:
        client = Client(root, path=server.path)
        with pytest.raises(IndexBuilding, match=f"{FILES + 2} files pending"):
            client.call("search", query="otter", k=3)
        state.update(state="watching", syncs=1)  # the first sync is over and the tree was empty
        assert client.call("search", query="otter", k=3)["hits"] == []


def test_a_client_asking_a_daemon_before_its_first_rows_waits_for_them_then_says_index_building(tmp_path,
                                                                                                  monkeypatch):
    """Issue 28 item 4: right after ``watch --detach`` a search got IndexBuilding (exit 2) for about 5 s. The
    client now asks again until the daemon's first rows answer, and says IndexBuilding only past the bound."""
    root = tree(tmp_path)
    where = IndexLocation.of(root)
    writer, reader = MemoryIndex(root, embedder=embedder()), MemoryIndex(root, embedder=embedder())
    state = {"state": "syncing", "syncs": 0, "pending": FILES + 2}
    args = {"query": "otter tag7", "k": 3}
    with Server(reader, status=lambda: dict(state)):
        with pytest.raises(IndexBuilding):  # what the daemon answers at first
            Client(root).call("search", **args)
        threading.Timer(0.6, lambda: writer.sync(defer=True)).start()  # its first text rows, 0.6 s later
        hits = route.search(where, args, using=None, start=False)
        assert hits[0]["path"] == "notes/n07.md" and all(h["partial"] for h in hits)
    other = tree(tmp_path / "other")  # a daemon that writes nothing: IndexBuilding once the bound is over
    monkeypatch.setattr(firstbuild, "FIRST_ROWS_WAIT_S", 0.6)
    with Server(MemoryIndex(other, embedder=embedder()), status=lambda: dict(state)):
        with pytest.raises(IndexBuilding, match="still indexing"):
            route.search(IndexLocation.of(other), args, using=None, start=False)


def test_a_table_listed_before_its_first_commit_reads_as_absent(tmp_path):
    store = Store(tmp_path / "db")
    (tmp_path / "db" / "chunks.lance" / "_versions").mkdir(parents=True)  # what a creator's first moments leave
    assert store.chunks() is None and store.row_count() == 0
    assert store.chunks(dimension=8) is not None  # and a writer creates it


def test_concurrent_first_rows_are_seen_by_a_waiting_search(tmp_path, monkeypatch):
    """A search that found the index locked and empty answers the rows another writer commits meanwhile."""
    root = tree(tmp_path)
    monkeypatch.setenv("MEMSEARCH_TEXT_FIRST_FILES", "4")
    where = IndexLocation.of(root)
    writer = MemoryIndex(root, embedder=embedder(), lock_purpose="watch")
    reader = MemoryIndex(root, embedder=embedder())
    where.ensure_state()
    lock = writer.lock.acquire(timeout=0.0, purpose="watch")  # held for the whole sync, as a daemon's
    try:
        threading.Timer(0.5, lambda: writer.sync(defer=True, wait=0.0)).start()
        hits = firstbuild.await_rows(where, lambda: reader.search("otter tag7", k=3),
                                     lambda: reader.searcher.snapshot()[1], wait=60)
    finally:
        lock.release()
    assert hits and hits[0].path == "notes/n07.md" and all(h.partial for h in hits)


def test_a_listening_daemon_warms_its_reader_before_any_client_asks(tmp_path):
    """The reader's in-memory copies are built once the socket listens, not by the first client's search."""
    import time

    from memsearch.service.host import WatchThread

    root = tree(tmp_path)
    index = MemoryIndex(root, embedder=embedder())
    index.sync()
    daemon = WatchThread(root, index=index).start()
    try:
        assert daemon.server.requests == 0
        reader = daemon.root.answers.index
        deadline = time.monotonic() + 60
        while reader.searcher.nbytes == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert reader.searcher.nbytes > 0 and daemon.server.requests == 0
    finally:
        daemon.close()


@pytest.mark.slow
def test_an_mcp_toolbox_s_warm_up_on_a_cold_tree_leaves_the_embedding_to_a_coming_daemon(tmp_path, monkeypatch):
    """MCP warms its ToolBox in the background before the first search: with a daemon coming it writes the
    text rows only (the first memory_search answers partial hits), with none it embeds everything."""
    from memsearch.harness.api import close_indexes
    from memsearch.harness.tools import ToolBox
    from memsearch.location import service_start_file
    from memsearch.service.protocol import secure_dir

    root = tree(tmp_path)
    monkeypatch.setenv("MEMSEARCH_TEXT_FIRST_FILES", "4")
    monkeypatch.setenv("MEMSEARCH_AUTOSTART", "0")  # the service is played by the test: it holds the start file
    where = IndexLocation.of(root)
    secure_dir(service_start_file().parent, create=True)
    fd = os.open(service_start_file(), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # the auto-started service on its way
        box = ToolBox(root)
        box.warm()
        store = Store(where.state)
        assert store.row_count() == store.text_only_rows() > 0
        hits = box.call("memory_search", {"query": "otter tag7", "k": 3})["hits"]
        assert hits[0]["path"] == "notes/n07.md" and all(h["partial"] for h in hits)
    finally:
        os.close(fd)
        close_indexes()
    box = ToolBox(root)
    box.warm()  # no daemon coming: the warm-up embeds what is left
    assert Store(where.state).text_only_rows() == 0
    assert not any(h["partial"] for h in box.call("memory_search", {"query": "otter tag7", "k": 3})["hits"])
    close_indexes()


def test_a_write_a_daemon_indexes_before_its_first_pass_leaves_no_search_silently_incomplete(tmp_path):
    """Issue 33 item 2: a daemon synced the written file before its first full pass, and a search returned only
    that note with ``partial: false``. Now the rest of the tree is found too, its hits flagged ``partial``."""
    from memsearch.service.roots import Root
    from memsearch.service.server import Server

    root = tree(tmp_path)
    (root / "notes" / "written.md").write_text("# Written\n\nThe otter named tag7 moved to the river.\n")
    where = IndexLocation.of(root)
    served = Root(where, index=MemoryIndex(root, embedder=embedder()), socket=str(where.socket)).open()
    daemon = served.daemon  # opened, its watcher not started: no pass has run
    server = Server(dispatch=served.answers.dispatch, path=where.socket).start()
    try:  # the write is indexed through the daemon (as the memory tool and `memsearch edit` do) before any pass
        assert Client(root).call("sync", paths=["notes/written.md"])["files"] == 1
        hits = Client(root).call("search", query="otter tag7", k=5)["hits"]
        partial = {h["path"]: h["partial"] for h in hits}
        assert partial["notes/written.md"] is False and partial["notes/n07.md"] is True
        daemon.process()  # the first full pass embeds the rest
        assert not any(h["partial"] for h in Client(root).call("search", query="otter tag7", k=5)["hits"])
    finally:
        server.close()
        daemon.close()
