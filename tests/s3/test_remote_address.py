"""An ``s3://`` address the object store cannot take as written is refused with the fix, before any request.

Before: ``--db s3://memory/a/../team`` (or ``./``, ``a//b``) failed inside the object-store client with
"the object store failed ... Encountered illegal character sequence '..' ...; check AWS_ENDPOINT_URL and
the credentials", naming a fix that fixes nothing; and ``s3://memory/team#2`` was silently the index of
``s3://memory/team`` (the URL parser drops a fragment), so a second team shared the first one's memory.
Real SeaweedFS on loopback, the real CLI in this process.
"""

from __future__ import annotations

import pytest

from memsearch.engine.embed.embedder import HashEmbedder
from memsearch.engine.index import MemoryIndex
from memsearch.errors import InvalidArgument
from tests.conftest import build, run_cli

TREE = {"MEMORY.md": "# Root\n", "notes/MEMORY.md": "# Notes\n", "notes/a.md": "# A\n\nthe heron at dawn\n"}

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("prefix", ["a/../team", "./team", "a//team", "team/.", "team#2"])
def test_an_address_the_store_cannot_take_is_refused_naming_the_fix(s3, tmp_path, capsys, prefix):
    root = build(tmp_path / "memory", TREE)
    MemoryIndex(root, db=s3.uri("team"), embedder=HashEmbedder()).sync()
    bad = s3.uri(prefix)
    with pytest.raises(InvalidArgument, match="index address"):
        MemoryIndex(root, db=bad, embedder=HashEmbedder())
    code, out, err = run_cli(["status", str(root), "--db", bad], capsys)
    assert code != 0 and not out and err.count("\n") == 1, (out, err)
    assert err.startswith(f"error: index address '{bad}' ") and "AWS_ENDPOINT_URL" not in err, err
    assert f"s3://{s3.name}/tenants/ada" in err, err


def test_a_plain_prefix_with_slashes_at_its_ends_is_the_same_index(s3, tmp_path):
    root = build(tmp_path / "memory", TREE)
    MemoryIndex(root, db=s3.uri("team"), embedder=HashEmbedder()).sync()
    again = MemoryIndex(root, db=f"s3://{s3.name}//team/", embedder=HashEmbedder())
    assert again.location == s3.uri("team") and again.search("heron", k=1, mode="keyword")[0].path == "notes/a.md"
