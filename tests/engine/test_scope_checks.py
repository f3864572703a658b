"""A tool search's scope (``scope_must_exist``) that names a foreign directory (Agent Skills' ``skills/``), which is
never indexed, is refused saying so, instead of answering "no hits: try other words" (engine/search/args.py)."""

from __future__ import annotations

import pytest

from memsearch.engine.search.args import check_search
from memsearch.errors import MemoryFileNotFound

TREE = {"MEMORY.md": "# M\n\nm\n", "notes/MEMORY.md": "# N\n\nn\n", "notes/a.md": "# A\n\na\n",
        "skills/deploy/SKILL.md": "# Deploy\n"}


@pytest.mark.parametrize("scope", ["skills", "skills/deploy", "skills/deploy/"])
def test_a_foreign_scope_is_refused_saying_why(make_tree, scope):
    root = make_tree(TREE)
    with pytest.raises(MemoryFileNotFound, match="is a directory of another format .* never searched"):
        check_search(root, "deploy", scope=scope, scope_must_exist=True)
    assert check_search(root, "deploy", scope=scope).scope == scope.rstrip("/")  # the library's search: as before


def test_a_memory_scope_is_kept(make_tree):
    assert check_search(make_tree(TREE), "a", scope="notes/", scope_must_exist=True).scope == "notes"
