"""The indexing daemon with real watchfiles events and real LanceDB on temporary trees.

Most behaviour tests inject the fast HashEmbedder; the module-scoped real model covers a
watch in this process, and the CLI daemon (``watch --detach``, ``status``, ``stop``) runs the
real model in its own process. Waits poll for up to WAIT seconds: no timing is asserted.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
import watchfiles

from memsearch import watcher
from memsearch.engine.embed.embedder import HashEmbedder, load_embedder
from memsearch.engine.index import MemoryIndex
from memsearch.engine.storage.lock import HOLDER_FILE, lock_holder
from memsearch.engine.storage.store import Store
from memsearch.errors import IndexLocked, InvalidArgument
from memsearch.memory.tree import scan
from memsearch.service import compaction
from memsearch.watcher import Daemon, MemoryFilter, read_state, resolve_debounce

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
WAIT = 20.0
DEBOUNCE = 50

BASE = {
    "MEMORY.md": "# Memory\n\nRoot index.\n",
    "notes/MEMORY.md": "# Notes\n\nWorking notes.\n",
    "notes/atlas.md": "# Atlas\n\n## Goals\n\nShip the atlas search.\n\n## Risks\n\nThe vendor is late.\n",
    "people/MEMORY.md": "# People\n\nWho is who.\n",
    "people/bob.md": "# Bob\n\nBob likes kayaks.\n",
    "skills/pdf/SKILL.md": "# PDF skill\n\nforeign, never indexed\n",
}


def until(condition, timeout: float = WAIT, what: str = "condition"):
    """Poll ``condition`` until it returns something truthy; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.05)


def indexed(db: Path) -> dict[str, str]:
    """What a reader sees now: path -> chunk texts in line order."""
    table = Store(db).chunks()
    if table is None:
        return {}
    rows = sorted(table.to_arrow().select(["path", "start_line", "text"]).to_pylist(), key=lambda r: (r["path"], r["start_line"]))
    out: dict[str, str] = {}
    for row in rows:
        out[row["path"]] = (out.get(row["path"], "") + "\n" + row["text"]).strip()
    return out


def hash_index(root: Path, db: Path | None = None) -> MemoryIndex:
    return MemoryIndex(root, db=db, embedder=HashEmbedder())


class Running:
    """``watch`` in a thread; ``reports`` fills as syncs happen. Entering waits for the catch-up."""

    def __init__(self, root: Path, index: MemoryIndex, **options):
        self.stop = threading.Event()
        self.reports: list = []
        self.error: BaseException | None = None
        self._gen = watcher.watch(root, index=index, debounce=DEBOUNCE, stop_event=self.stop, **options)
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            for report in self._gen:
                self.reports.append(report)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the test thread
            self.error = exc

    def __enter__(self) -> "Running":
        self._thread.start()
        until(lambda: self.reports or self.error, what="the catch-up sync")
        if self.error:
            raise self.error
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self._thread.join(WAIT)
        assert not self._thread.is_alive(), "the watcher did not stop"
        if self.error and not exc[0]:
            raise self.error

    def touched(self, path: str) -> list:
        """Reports after the catch-up that changed or removed ``path``."""
        return [r for r in self.reports[1:] if path in r.changed_paths or path in r.removed_paths]


@pytest.fixture(scope="module")
def real_embedder():
    return load_embedder()  # all-MiniLM-L6-v2, offline, loaded once for the module


# --- filter and arguments -----------------------------------------------------------------
def test_filter_keeps_memory_and_directories_only(tmp_path):
    root = tmp_path / "m"
    (root / "notes" / "sub").mkdir(parents=True)
    (root / "notes" / "a.md").write_text("x")
    db = root / "index"  # a non-hidden index inside the root is ignored too
    f = MemoryFilter(root, include_core=False, ignore_paths=[db], known_dirs={"gone"})
    C = watchfiles.Change
    assert f.kind(C.modified, str(root / "notes" / "a.md")) == "file"
    assert f.kind(C.deleted, str(root / "notes" / "old.md")) == "file"
    assert f.kind(C.added, str(root / "notes" / "sub")) == "dir"
    assert f.kind(C.deleted, str(root / "gone")) == "dir"  # a memory folder moved away
    assert f.kind(C.deleted, str(root / "never-memory")) is None
    for ignored in ("notes/.a.md.swp", "notes/a.md~", "notes/4913", "notes/a.md.tmp", ".git/HEAD",
                    ".memsearch/chunks.lance/x", "skills/pdf/SKILL.md", "notes/#a.md#", "MEMORY.md", "index/x.md"):
        assert f.kind(C.modified, str(root / ignored)) is None, ignored
    assert not f(C.modified, str(root / "notes" / "a.md.tmp")) and f(C.added, str(root / "notes" / "a.md"))
    assert MemoryFilter(root, include_core=True).kind(C.modified, str(root / "MEMORY.md")) == "file"
    assert MemoryFilter(root, foreign=["notes"]).kind(C.modified, str(root / "notes" / "a.md")) is None


def test_debounce_argument_then_env_then_default(monkeypatch):
    monkeypatch.delenv(watcher.DEBOUNCE_ENV, raising=False)
    assert resolve_debounce() == watcher.DEFAULT_DEBOUNCE_MS
    monkeypatch.setenv(watcher.DEBOUNCE_ENV, "120")
    assert resolve_debounce() == 120 and resolve_debounce(40) == 40
    monkeypatch.setenv(watcher.DEBOUNCE_ENV, "soon")
    with pytest.raises(InvalidArgument, match=watcher.DEBOUNCE_ENV):
        resolve_debounce()
    with pytest.raises(InvalidArgument):
        resolve_debounce(0)


def test_a_compaction_keeps_the_reader_s_in_memory_copies(make_tree):
    """The service's searches run on a reader beside the writer: the writer's compaction moves the reader's
    copies to the new version before searches see it (they answered from LanceDB meanwhile, other scores)."""
    root = make_tree(BASE)
    d = Daemon(root, index=hash_index(root), state_file=False)
    d.start()
    try:
        d.process()  # the catch-up
        for i in range(2):  # more fragments: something to compact
            (root / "notes" / f"extra{i}.md").write_text(f"# Extra {i}\n\ncoffee number {i}\n")
            d.process([(watchfiles.Change.added, str(root / "notes" / f"extra{i}.md"))])
        d.reader = reader = MemoryIndex(root, embedder=d.index.embedder)
        assert reader.search("coffee", mode="keyword")
        version = reader.store.chunks().version
        d.compact_now()
        reader.store.refresh()
        new = reader.store.chunks().version
        assert new > version and reader.keywords.get(reader.store, (reader.build_id, new)) is not None
    finally:
        d.close()


def test_compaction_waits_until_pruned_versions_are_old():
    now = 1000.0
    schedule = compaction.Schedule(now=now)
    schedule.wrote(now - 0.5, now - 0.4)  # only a fresh write: its predecessor may be in use
    assert not schedule.due(now)
    schedule.writes.appendleft((now - 10, now - 9.9))  # quiet for 0.4 s only
    assert not schedule.due(now)
    assert schedule.due(now + compaction.COMPACT_QUIET_S)  # quiet long enough, the write proves safety
    schedule.writes.clear()
    schedule.wrote(now - compaction.VERSION_KEEP_S - 5, now - compaction.VERSION_KEEP_S - 4)
    assert not schedule.due(now)  # the latest version is older than the keep window: never pruned under a reader
    schedule.compacted(now)
    assert not schedule.dirty and not schedule.syncs


# --- following file events ----------------------------------------------------------------
def test_catch_up_then_create_edit_delete_incrementally(make_tree):
    root = make_tree(BASE)
    db = root / ".memsearch"
    hash_index(root).sync()
    (root / "people" / "bob.md").write_text("# Bob\n\nBob likes canoes now.\n")  # while nobody watched
    (root / "notes" / "new.md").write_text("# New\n\nWritten offline.\n")
    with Running(root, hash_index(root)) as run:
        catch_up = run.reports[0]
        assert (catch_up.files_added, catch_up.files_changed) == (1, 1)
        assert "canoes" in indexed(db)["people/bob.md"]
        state = read_state(db)
        assert state["pid"] == os.getpid() and state["state"] == "watching"

        (root / "people" / "carol.md").write_text("# Carol\n\nCarol plays chess.\n")
        until(lambda: "people/carol.md" in indexed(db), what="a created file")

        text = (root / "notes" / "atlas.md").read_text().replace("The vendor is late.", "The vendor shipped.")
        (root / "notes" / "atlas.md").write_text(text)
        until(lambda: "vendor shipped" in indexed(db).get("notes/atlas.md", ""), what="an edit")
        edit = until(lambda: run.touched("notes/atlas.md"), what="the edit's report")[-1]  # data is visible before the report
        assert edit.files_changed == 1 and edit.files_unchanged == 0  # only the changed path was looked at
        assert edit.chunks_embedded == 1 and edit.chunks_reused >= 1  # only the changed section re-embedded

        (root / "people" / "carol.md").unlink()
        until(lambda: "people/carol.md" not in indexed(db), what="a deletion")

        (root / "notes" / "todo.txt").write_text("not markdown")
        (root / ".drafts").mkdir()
        (root / ".drafts" / "d.md").write_text("# hidden\n")
        (root / "skills" / "pdf" / "more.md").write_text("# foreign\n")
        (root / "notes" / "z.md").write_text("# Z\n\nlast one\n")
        until(lambda: "notes/z.md" in indexed(db), what="a file after ignored ones")
    paths = {p for r in run.reports for p in r.changed_paths}
    assert not paths & {"notes/todo.txt", ".drafts/d.md", "skills/pdf/more.md", "skills/pdf/SKILL.md"}
    assert set(indexed(db)) == {"notes/MEMORY.md", "notes/atlas.md", "notes/new.md", "notes/z.md", "people/MEMORY.md", "people/bob.md"}
    assert read_state(db)["state"] == "stopped" and lock_holder(db) is None


def test_a_file_name_that_is_not_utf8_does_not_end_the_watch(make_tree, caplog):
    """watchfiles fails on an event whose path it cannot decode ("Unable to decode path"); the watcher ended on it,
    so the service unloaded the root and its later edits were never indexed. Now the root is watched again and
    re-scanned (the name is never memory), with one warning, and both the sync and the asyncio watchers go on."""
    root = make_tree(BASE)
    db = root / ".memsearch"
    bad = os.fsencode(root / "notes") + b"/bad\xffname.md"
    with caplog.at_level("WARNING", logger="memsearch.watch"), Running(root, hash_index(root)) as run:
        for n in range(2):  # each event of the bad name fails the watchfiles batch it is in
            with open(bad, "wb") as f:
                f.write(b"# bad\n")
            (root / "notes" / f"good{n}.md").write_text(f"# Good\n\nwritten after a bad name, round {n}.\n")
            until(lambda n=n: f"notes/good{n}.md" in indexed(db), what="a note written after a bad name")
        assert run.error is None and run._thread.is_alive()
    said = [r.getMessage() for r in caplog.records if "not valid UTF-8" in r.getMessage()]
    assert len(said) == 1 and "watching again" in said[0], said
    os.unlink(bad)
    awatch_until_ann_is_indexed(root, before=lambda: open(bad, "wb").write(b"# bad\n"))
    assert "people/ann.md" in indexed(db)


def test_renames_of_files_and_folders(make_tree, tmp_path):
    root = make_tree(BASE)
    db = root / ".memsearch"
    outside = tmp_path / "outside"
    (outside / "trips").mkdir(parents=True)
    (outside / "trips" / "rome.md").write_text("# Rome\n\nThe colosseum at dawn.\n")
    with Running(root, hash_index(root)) as run:
        os.rename(root / "people" / "bob.md", root / "people" / "robert.md")
        until(lambda: "people/robert.md" in indexed(db) and "people/bob.md" not in indexed(db), what="a file rename")
        assert until(lambda: run.touched("people/robert.md"), what="the rename's report")[-1].chunks_embedded == 0  # vectors reused

        os.rename(root / "notes", root / "journal")
        until(
            lambda: (
                {"journal/atlas.md", "journal/MEMORY.md"} <= set(indexed(db))
                and not any(p.startswith("notes/") for p in indexed(db))
            ),
            what="a folder rename",
        )

        shutil.move(root / "journal", outside / "journal")  # out of the root: gone
        until(lambda: not any(p.startswith("journal/") for p in indexed(db)), what="a folder moved out")

        shutil.move(outside / "trips", root / "trips")  # in from outside: indexed
        until(lambda: "trips/rome.md" in indexed(db), what="a folder moved in")

        (root / "ideas" / "deep").mkdir(parents=True)  # a new folder is memory once Markdown appears
        time.sleep(0.3)
        (root / "ideas" / "deep" / "one.md").write_text("# One\n\nAn idea.\n")
        until(lambda: "ideas/deep/one.md" in indexed(db), what="Markdown in a new folder")

        os.rename(root / "trips", root / ".trips")  # hidden now: leaves the index
        until(lambda: "trips/rome.md" not in indexed(db), what="a folder hidden by rename")
    assert set(indexed(db)) == {"people/MEMORY.md", "people/robert.md", "ideas/deep/one.md"}


def test_editor_saves_index_the_final_file_once(make_tree):
    root = make_tree(BASE)
    db = root / ".memsearch"
    note = root / "notes" / "atlas.md"
    with Running(root, hash_index(root)) as run:
        # atomic save: write a temporary file, rename it over the note
        tmp = note.with_name(".atlas.md.tmp123")
        tmp.write_text("# Atlas\n\n## Goals\n\nAtomic save one.\n")
        os.replace(tmp, note)
        until(lambda: "Atomic save one" in indexed(db).get("notes/atlas.md", ""), what="an atomic save")
        # vim-like save: swap file, original renamed to a backup, new file written, backup removed
        (note.parent / ".atlas.md.swp").write_bytes(b"\0swap")
        os.rename(note, note.with_name("atlas.md~"))
        note.write_text("# Atlas\n\n## Goals\n\nVim save two.\n")
        os.remove(note.with_name("atlas.md~"))
        (note.parent / ".atlas.md.swp").unlink()
        until(lambda: "Vim save two" in indexed(db).get("notes/atlas.md", ""), what="a vim-style save")
        # a barrier instead of a sleep: events arrive in order, so once this later edit is indexed,
        # every event the saves caused has been handled
        (root / "people" / "bob.md").write_text("# Bob\n\nBob likes kayaks and canoes.\n")
        until(lambda: "canoes" in indexed(db).get("people/bob.md", ""), what="the barrier edit")
    touched = run.touched("notes/atlas.md")
    assert len(touched) == 2, [r.to_dict() for r in touched]  # one sync per save
    assert not any("notes/atlas.md" in r.removed_paths for r in touched)  # never dropped in between
    assert set(indexed(db)) == {"notes/MEMORY.md", "notes/atlas.md", "people/MEMORY.md", "people/bob.md"}


def awatch_until_ann_is_indexed(root: Path, before=lambda: None) -> list:
    """:func:`watcher.awatch`'s reports until ``people/ann.md``, written after the catch-up (``before()`` just
    before it), is indexed."""
    async def main() -> list:
        stop = asyncio.Event()
        reports = []
        async for report in watcher.awatch(root, index=hash_index(root), debounce=DEBOUNCE, stop_event=stop):
            reports.append(report)
            if len(reports) == 1:
                before()
                (root / "people" / "ann.md").write_text("# Ann\n\nAnn sails.\n")
            elif "people/ann.md" in report.changed_paths:
                stop.set()
        return reports

    return asyncio.run(asyncio.wait_for(main(), WAIT))


def test_awatch_yields_reports_and_stops(make_tree):
    root = make_tree(BASE)
    db = root / ".memsearch"
    reports = awatch_until_ann_is_indexed(root)
    assert reports[-1].files_added == 1 and "people/ann.md" in indexed(db)
    assert lock_holder(db) is None


def test_compaction_runs_on_schedule_and_prunes_versions(make_tree, monkeypatch):
    monkeypatch.setattr(compaction, "COMPACT_QUIET_S", 0.3)
    monkeypatch.setattr(compaction, "VERSION_KEEP_S", 2.5)
    monkeypatch.setattr(compaction, "KEEP_MARGIN_S", 0.1)
    root = make_tree(BASE)
    db = root / ".memsearch"
    note = root / "people" / "bob.md"
    with Running(root, hash_index(root), compact=False) as run:  # first without compaction
        for i in range(8):
            note.write_text(f"# Bob\n\nedit {i}\n")
            until(lambda: f"edit {i}" in indexed(db).get("people/bob.md", ""), what=f"edit {i}")
    versions = len(Store(db).chunks().list_versions())
    time.sleep(2.6)  # every version so far is now older than the keep window
    with Running(root, hash_index(root)) as run:
        note.write_text("# Bob\n\nedit final\n")
        until(lambda: "edit final" in indexed(db).get("people/bob.md", ""), what="the final edit")
        until(lambda: (read_state(db) or {}).get("last_compaction"), what="a compaction")
    after = len(Store(db).chunks().list_versions())
    assert after < versions, (versions, after)
    assert "edit final" in indexed(db)["people/bob.md"] and len(run.reports) >= 2
    hits = hash_index(root).search("edit final", k=3)
    assert hits and hits[0].path == "people/bob.md"


# --- one writer, many readers -------------------------------------------------------------
def test_second_writer_refused_and_stale_lock_taken_over(make_tree):
    root = make_tree(BASE)
    db = root / ".memsearch"
    with Running(root, hash_index(root)):
        with pytest.raises(IndexLocked, match=rf"process {os.getpid()} \(the memsearch service or a watch daemon, keeping it fresh"):
            next(watcher.watch(root, index=hash_index(root)))
        with pytest.raises(IndexLocked, match=str(os.getpid())):
            hash_index(root).sync(wait=0.0)
    # a writer killed with SIGKILL leaves its pid record behind, but no lock
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
        import time
        from memsearch.engine.storage.lock import WriterLock
        WriterLock({str(db)!r}, purpose="index").acquire()
        print("held", flush=True)
        time.sleep(60)
    """),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout.readline().strip() == "held"
    assert lock_holder(db)["pid"] == holder.pid
    holder.kill()
    holder.wait()
    assert str(holder.pid) in (db / HOLDER_FILE).read_text()  # the record stays, the lock does not
    assert lock_holder(db) is None
    with Running(root, hash_index(root)):
        assert lock_holder(db)["pid"] == os.getpid()


READER = textwrap.dedent("""
    import json, sys, time
    from pathlib import Path
    from memsearch.engine.embed.embedder import HashEmbedder
    from memsearch.engine.index import MemoryIndex
    root, db, stop, parts = sys.argv[1], sys.argv[2], Path(sys.argv[3]), int(sys.argv[4])
    index = MemoryIndex(root, db=db, embedder=HashEmbedder())
    searches, errors, torn, states = 0, [], [], 0
    while not stop.exists():
        try:
            index.search("part version words", k=20)
            searches += 1
            if searches == 1:
                stop.with_suffix(".ready").touch()
            index.store.refresh()
            table = index.store.chunks()
            if table is not None:
                rows = table.to_arrow().select(["path", "text"]).to_pylist()
                by_path = {}
                for row in rows:
                    if row["path"].startswith("notes/live") and "version " in row["text"]:
                        by_path.setdefault(row["path"], []).append(row["text"].split("version ")[1].split()[0])
                for path, versions in by_path.items():
                    states += 1
                    if len(versions) != parts or len(set(versions)) != 1:
                        torn.append([path, versions])
        except Exception as exc:
            errors.append(repr(exc))
    print(json.dumps({"searches": searches, "errors": errors[:5], "n_errors": len(errors), "torn": torn[:5], "states": states}))
""")


def test_search_in_another_process_while_the_daemon_writes(make_tree, tmp_path):
    parts = 4
    files = [f"notes/live{i}.md" for i in range(3)]

    def content(version: int) -> str:
        return "# Live\n\n" + "".join(
            f"## Part {p}\n\npart {p} version {version} words here.\n\n" for p in range(parts)
        )

    root = make_tree(BASE | {f: content(0) for f in files})
    db = root / ".memsearch"
    stop = tmp_path / "stop-reader"
    with Running(root, hash_index(root)):
        reader = subprocess.Popen(
            [sys.executable, "-c", READER, str(root), str(db), str(stop), str(parts)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        until(
            lambda: stop.with_suffix(".ready").exists() or reader.poll() is not None,
            timeout=120,
            what="the reader's first search",
        )
        for version in range(1, 31):
            for f in files:
                (root / f).write_text(content(version))
            time.sleep(0.03 * (version % 4))
        until(lambda: all("version 30 " in indexed(db).get(f, "") for f in files), what="the last versions")
        stop.touch()
        out, errors = reader.communicate(timeout=60)
    assert reader.returncode == 0, errors
    result = json.loads(out)
    assert result["n_errors"] == 0, result["errors"]
    assert result["torn"] == [], result["torn"]  # every file whole: all parts of one version
    assert result["searches"] > 0 and result["states"] > 0


# --- stopping and recovery ----------------------------------------------------------------
DAEMON = textwrap.dedent("""
    import sys, time, logging
    from memsearch.engine.embed.embedder import HashEmbedder
    from memsearch.engine.index import MemoryIndex
    from memsearch.watcher import serve

    class SlowHash(HashEmbedder):  # makes each batch take a while, so signals land mid-sync
        def embed_documents(self, texts):
            time.sleep(0.25)
            return super().embed_documents(texts)

    logging.basicConfig(level=logging.INFO)
    root, db = sys.argv[1], sys.argv[2]
    sys.exit(serve(root, index=MemoryIndex(root, db=db, embedder=SlowHash()), debounce=50))
""")


def big_tree(make_tree, n: int) -> Path:
    files = dict(BASE)
    for i in range(n):
        files[f"log/{i // 100:02d}/{i:04d}.md"] = (
            f"# Day {i}\n\n## Morning\n\nentry {i} coffee\n\n## Evening\n\nentry {i} tea\n"
        )
    for d in range(n // 100 + 1):
        files[f"log/{d:02d}/MEMORY.md"] = f"# Log {d}\n"
    files["log/MEMORY.md"] = "# Log\n"
    return make_tree(files)


def files_indexed(db: Path) -> int:
    try:
        table = Store(db).files()
        return table.count_rows() if table is not None else 0
    except Exception:  # noqa: BLE001 - the table is being created
        return 0


def rows(db: Path) -> tuple[list, list]:
    store = Store(db)
    chunks = (
        store.chunks()
        .to_arrow()
        .select(["id", "path", "start_line", "end_line", "text", "embed_hash", "vector"])
        .to_pylist()
    )
    files = store.files().to_arrow().select(["path", "file_hash", "size", "mtime_ns", "chunks"]).to_pylist()
    return sorted(chunks, key=lambda r: r["id"]), sorted(files, key=lambda r: r["path"])


def start_daemon(root: Path, db: Path, log: Path) -> subprocess.Popen:
    with open(log, "wb") as out:
        env = dict(os.environ, MEMSEARCH_BATCH_CHUNKS="64")  # many small commits: a stop lands mid-sync
        return subprocess.Popen(
            [sys.executable, "-c", DAEMON, str(root), str(db)], stdout=out, stderr=subprocess.STDOUT, env=env
        )


@pytest.mark.parametrize("how", ["sigterm", "sigkill"])
def test_stop_mid_sync_then_recover_to_a_clean_rebuild(make_tree, tmp_path, how):
    root = big_tree(make_tree, 400)
    total = len(scan(root).external_files)
    db = root / ".memsearch"
    proc = start_daemon(root, db, tmp_path / "daemon.log")
    until(lambda: 0 < files_indexed(db) < total or proc.poll() is not None, what="the catch-up to commit a batch")
    assert proc.poll() is None, (tmp_path / "daemon.log").read_text()
    if how == "sigterm":
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(WAIT) == 0, (tmp_path / "daemon.log").read_text()
        done = files_indexed(db)
        assert 0 < done <= total  # the batch in hand was finished (its files whole: checked below)
        assert read_state(db)["state"] == "stopped"
    else:
        proc.kill()
        proc.wait(WAIT)
        assert files_indexed(db) < total  # killed mid-way through the catch-up ...
        assert read_state(db)["state"] == "syncing"  # ... and it never said goodbye
    assert lock_holder(db) is None
    with Running(root, hash_index(root)) as run:  # the next start recovers
        assert run.reports[0].changed or files_indexed(db) == total
    clean = tmp_path / "clean"
    hash_index(root, db=clean).sync()
    got, want = rows(db), rows(clean)
    assert len({r["id"] for r in got[0]}) == len(got[0])  # no duplicate chunks
    assert got == want


# --- the CLI daemon with the real model -------------------------------------------------------
def cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "memsearch", *args], capture_output=True, text=True, timeout=timeout)


def test_cli_daemon_end_to_end_with_the_real_model(make_tree, real_embedder):
    root = make_tree(BASE)
    db = root / ".memsearch"
    started = cli("watch", str(root), "--detach", "--debounce", "100")
    assert started.returncode == 0, started.stderr
    try:
        status = json.loads(cli("status", str(root), "--json").stdout)
        pid = status["pid"]
        assert status["running"] and pid and pid == read_state(db)["pid"] and status["by"] == "watch"
        assert f"served by a watch daemon: running, pid {pid}" in cli("status", str(root)).stdout
        again = cli("watch", str(root))
        assert again.returncode == 2 and f"a watch daemon (pid {pid}) already keeps" in again.stderr  # refused: it serves
        until(lambda: (read_state(db) or {}).get("syncs"), timeout=120, what="the daemon's catch-up")

        reader = MemoryIndex(root, embedder=real_embedder)  # this process is the "other process"
        (root / "notes" / "lisbon.md").write_text("# Lisbon\n\nThe tram to Belem leaves at nine.\n")

        def fresh():
            return [h for h in reader.search("tram to Belem", k=3) if "nine" in h.text]

        until(fresh, timeout=120, what="a search in another process to see the new file")
        status = json.loads(cli("status", str(root), "--json").stdout)
        assert status["files"] == 5 and status["chunks"] >= 6 and status["model"] == "all-MiniLM-L6-v2"
        assert status["pending"]["total"] == 0 and status["disk_bytes"] > 0
        assert status["last_sync"]["files_added"] == 1
    finally:
        stopped = cli("stop", str(root))
    assert stopped.returncode == 0 and "stopped" in stopped.stdout, stopped.stderr
    assert lock_holder(db) is None and read_state(db)["state"] == "stopped"
    assert not json.loads(cli("status", str(root), "--json").stdout)["running"]
    assert cli("status", str(root)).stdout.startswith("served by: no memsearch process (last: stopped)")
    log = (db / watcher.LOG_FILE).read_text()
    assert "sync (catch-up)" in log and "SIGTERM received" in log and "lock is released" in log


def test_real_model_watch_reembeds_only_changed_chunks(make_tree, real_embedder):
    root = make_tree(BASE)
    with Running(root, MemoryIndex(root, embedder=real_embedder)) as run:
        note = root / "notes" / "atlas.md"
        note.write_text(note.read_text() + "\n## Budget\n\nTwelve thousand euros.\n")
        report = until(lambda: next(iter(run.touched("notes/atlas.md")), None), what="the edit")
        assert report.chunks_embedded == 1 and report.chunks_reused == 2
        hits = MemoryIndex(root, embedder=real_embedder).search("how much money is budgeted", k=1)
        assert hits[0].path == "notes/atlas.md" and "Twelve thousand" in hits[0].text
