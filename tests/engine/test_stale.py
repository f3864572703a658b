"""``stale`` on every hit: its file changed on disk (size or mtime, or it is gone) since the index recorded it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from memsearch import MemoryIndex
from memsearch.cli.render import print_hits
from memsearch.engine.embed.embedder import HashEmbedder
from memsearch.harness.tools import ToolBox

FILES = {
    "MEMORY.md": "# Memory\n\nCore.\n",
    "projects/MEMORY.md": "# Projects\n\nWork projects.\n",
    "projects/atlas.md": "# Atlas\n\nThe atlas migration moves the ingest jobs to Iceberg tables.\n",
    "projects/billing.md": "# Billing\n\nThe billing migration dual-writes invoices to Stripe.\n",
}


def test_a_hit_is_stale_once_its_file_changes_and_fresh_after_a_sync(make_tree, tmp_path):
    root = make_tree(FILES)
    with MemoryIndex(root, db=tmp_path / "db", embedder=HashEmbedder()) as index:
        index.sync()
        hits = index.search("migration", k=5)
        assert {h.path for h in hits} >= {"projects/atlas.md", "projects/billing.md"}
        assert not any(h.stale for h in hits)
        assert all(h.to_dict()["stale"] is False for h in hits)

        (root / "projects/atlas.md").write_text(FILES["projects/atlas.md"] + "\nCutover moved to June.\n")
        stale = {h.path: h.stale for h in index.search("migration", k=5)}
        assert stale["projects/atlas.md"] is True and stale["projects/billing.md"] is False

        st = os.stat(root / "projects/billing.md")  # same size, a new mtime: changed too
        os.utime(root / "projects/billing.md", ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
        assert {h.path: h.stale for h in index.search("migration", k=5)}["projects/billing.md"] is True

        index.sync()
        assert not any(h.stale for h in index.search("migration", k=5))

        (root / "projects/billing.md").unlink()  # gone since the last sync: its indexed hits are stale
        stale = {h.path: h.stale for h in index.search("billing migration", k=5)}
        assert stale["projects/billing.md"] is True and stale["projects/atlas.md"] is False


def test_the_tools_pass_it_on_and_the_cli_marks_it(make_tree, tmp_path, capsys):
    root = make_tree(FILES)
    index = MemoryIndex(root, db=tmp_path / "db", embedder=HashEmbedder())
    index.sync()
    (root / "projects/atlas.md").write_text(FILES["projects/atlas.md"] + "More.\n")
    box = ToolBox(root, index=index, sync=False)
    hits = {h["path"]: h["stale"] for h in box.call("memory_search", {"query": "migration"})["hits"]}
    assert hits["projects/atlas.md"] is True and hits["projects/billing.md"] is False
    print_hits([h.to_dict() for h in index.search("migration", k=5)])
    lines = capsys.readouterr().out.splitlines()
    marked = [line for line in lines if "stale" in line]
    assert len(marked) == 1 and "projects/atlas.md" in marked[0]
    index.close()


@pytest.mark.slow
def test_stale_through_the_cli_with_the_real_model(make_tree, tmp_path):
    root = make_tree(FILES)
    db = str(tmp_path / "db")

    def search(*extra):
        result = subprocess.run([sys.executable, "-m", "memsearch", "search", str(root), "atlas iceberg", "--db", db,
                                 "--local", "-k", "2", *extra], check=False, capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
        return result.stdout

    assert json.loads(search("--json"))["hits"][0]["stale"] is False
    (root / "projects/atlas.md").write_text(FILES["projects/atlas.md"] + "Cutover moved to June.\n")
    top = json.loads(search("--json", "--no-sync"))["hits"][0]
    assert top["path"] == "projects/atlas.md" and top["stale"] is True
    assert "stale" in search("--no-sync").splitlines()[0]
    assert json.loads(search("--json"))["hits"][0]["stale"] is False  # synced first: fresh again
