"""Lost tables read as damage, never as an empty index, and the repair works beside a serving process
(issue 28 item 5).

A chunks table whose manifests were all deleted, or which is gone while the files table still lists
indexed files, used to read as an empty index: no hits, no warning. Now a search raises
:class:`IndexDamaged` naming ``memsearch index ROOT --rebuild``, and a sync rebuilds it. A table being
created (listed before its first commit) still reads as absent (tests/service/test_first_call.py).
The rebuild the serving process runs for ``index --rebuild`` (a fresh index on the same writer-lock
hold) recovers from a truncated or deleted data file too, and the serving reader follows it.
"""

from __future__ import annotations

import shutil

import pytest

from memsearch.engine.embed.embedder import HashEmbedder
from memsearch.engine.index import MemoryIndex
from memsearch.errors import IndexDamaged
from memsearch.service.client import Client
from tests.conftest import build, run_cli

FILES = {"MEMORY.md": "# Root\n", "notes/MEMORY.md": "# Notes\nwhat the notes hold\n"} | {
    f"notes/n{i}.md": f"# Note {i}\n" + f"the heron flew over pond {i} at dawn\n" * 12 for i in range(8)}

LOST = {
    "every chunks manifest deleted": lambda db: [p.unlink() for p in (db / "chunks.lance" / "_versions").iterdir()],
    "the chunks table deleted": lambda db: shutil.rmtree(db / "chunks.lance"),
}
DAMAGED_DATA = {
    "chunks data truncated": lambda db: [p.write_bytes(p.read_bytes()[:100])
                                         for p in (db / "chunks.lance" / "data").iterdir()],
    "chunks data deleted": lambda db: [p.unlink() for p in (db / "chunks.lance" / "data").iterdir()],
} | LOST


def _embedder() -> HashEmbedder:
    return HashEmbedder(dimension=32, name="hash-32")


@pytest.fixture
def indexed(tmp_path):
    root = build(tmp_path / "memory", FILES)
    MemoryIndex(root, embedder=_embedder()).sync()
    return root, MemoryIndex(root, embedder=_embedder()).db_path


@pytest.mark.parametrize("kind", list(LOST))
def test_a_lost_chunks_table_is_damage_not_an_empty_index(kind, indexed):
    root, db = indexed
    LOST[kind](db)
    index = MemoryIndex(root, embedder=_embedder())
    with pytest.raises(IndexDamaged) as caught:
        index.search("heron at dawn", k=3)
    assert "memsearch index ROOT --rebuild" in str(caught.value) or "--rebuild" in caught.value.render("cli")
    assert index.check() is not None  # `memsearch check` and `index` see it too
    report = MemoryIndex(root, embedder=_embedder()).sync()  # a writer rebuilds it from the Markdown
    assert report.repaired and report.files_added == len(FILES) - 1
    assert MemoryIndex(root, embedder=_embedder()).search("heron at dawn", k=3)[0].path.startswith("notes/n")


@pytest.mark.slow
@pytest.mark.parametrize("kind", list(LOST))
def test_the_cli_says_how_to_repair_a_lost_table_and_index_repairs_it(kind, tmp_path, real_embedder, capsys):
    root = build(tmp_path / "memory", FILES)
    index = MemoryIndex(root, embedder=real_embedder)
    index.sync()
    LOST[kind](index.db_path)
    code, out, err = run_cli(["search", str(root), "heron at dawn", "--no-sync", "--local"], capsys)
    assert code == 2 and not out and "damaged" in err and "--rebuild" in err and "Traceback" not in err
    code, out, err = run_cli(["index", str(root)], capsys)
    assert code == 0 and "rebuilt" in err, err
    code, out, err = run_cli(["search", str(root), "heron at dawn", "--local", "--json"], capsys)
    assert code == 0 and "notes/n" in out


@pytest.mark.parametrize("kind", list(DAMAGED_DATA))
def test_a_rebuild_on_a_serving_process_s_lock_hold_recovers_and_its_reader_follows(kind, tmp_path):
    """What the serving process does for ``memsearch index --rebuild``: a fresh index (rebuild=True) on the
    writer-lock hold it has, synced; its reader and its own writer index then answer from the new build."""
    root = build(tmp_path / "memory", FILES)
    index = MemoryIndex(root, embedder=_embedder())
    index.sync()
    from memsearch.location import IndexLocation
    from memsearch.service.roots import Root
    from memsearch.service.server import Server

    where = IndexLocation.of(root)
    served = Root(where, index=index, socket=str(where.socket)).open()
    daemon = served.daemon
    server = Server(dispatch=served.answers.dispatch, path=where.socket).start()
    try:
        assert Client(root).call("search", query="heron at dawn", k=3)["hits"]
        DAMAGED_DATA[kind](index.db_path)
        fresh = MemoryIndex(root, embedder=index.embedder, rebuild=True)
        fresh.lock = index.lock  # the daemon's hold: no second writer, no refusal
        report = fresh.sync()
        assert report.files_added == len(FILES) - 1 and fresh.check_and_repair() is None and fresh.check() is None
        hits = Client(root).call("search", query="heron at dawn", k=3)["hits"]
        assert hits and hits[0]["path"].startswith("notes/n")
        (root / "notes" / "n0.md").write_text("# Note 0\n\nthe otter swam past the mill\n")
        assert daemon.index.sync().files_changed == 1  # the daemon's own index follows the new build
        assert Client(root).call("search", query="otter mill", k=1)["hits"][0]["path"] == "notes/n0.md"
    finally:
        server.close()
        daemon.close()


def test_a_table_whose_first_version_commits_while_it_is_opened_opens(indexed):
    """The race a search in a daemon's first seconds lost: the table listed, its open failing (no first version
    yet), the first version committed before the look at its folder: opened again, never damage."""
    from memsearch.engine.storage.store import Store

    _, db = indexed
    store = Store(db)
    real, failed = store.db, []

    class Racing:  # the database as that reader saw it: the first open of a listed table fails
        def __getattr__(self, name):
            return getattr(real, name)

        def open_table(self, name):
            if not failed:
                failed.append(name)
                raise ValueError(f"Table '{name}' was not found")
            return real.open_table(name)

    store.db = Racing()
    assert store.files().count_rows() > 0 and failed == ["files"]


@pytest.mark.parametrize("kind", ["every files manifest deleted", *LOST])
def test_status_of_a_damaged_index_says_so_and_names_the_rebuild(kind, indexed, capsys):
    """Before: ``memsearch status ROOT`` on an index whose files table lost its manifests ended in a Python
    traceback (ValueError from the table's open), the command a user runs to find out what is wrong; now the
    one-line IndexDamaged error the other commands give."""
    root, db = indexed
    if kind in LOST:
        LOST[kind](db)
    else:
        [p.unlink() for p in (db / "files.lance" / "_versions").iterdir()]
    code, out, err = run_cli(["status", str(root)], capsys)
    assert "Traceback" not in err and "Traceback" not in out
    assert code != 0 and "damaged" in err and f"`memsearch index {root} --rebuild`" in err, err
