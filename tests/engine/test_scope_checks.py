"""A tool search's scope (``scope_must_exist``) that names a foreign directory (Agent Skills' ``skills/``) or a hidden
one (the index's ``.memsearch``), which are never indexed, is refused saying so, by the rule memory_list refuses them
with (memory/tree.py ``refuse_other_dir``), instead of answering "no hits: try other words" (engine/search/args.py)."""

from __future__ import annotations

import pytest

from memsearch.engine.search.args import check_search
from memsearch.errors import NotMemoryFile

TREE = {"MEMORY.md": "# M\n\nm\n", "notes/MEMORY.md": "# N\n\nn\n", "notes/a.md": "# A\n\na\n",
        "skills/deploy/SKILL.md": "# Deploy\n"}


@pytest.mark.parametrize("scope", ["skills", "skills/deploy", "skills/deploy/"])
def test_a_foreign_scope_is_refused_saying_why(make_tree, scope):
    root = make_tree(TREE)
    with pytest.raises(NotMemoryFile, match="is a directory of another format .* never listed, read or searched"):
        check_search(root, "deploy", scope=scope, scope_must_exist=True)
    assert check_search(root, "deploy", scope=scope).scope == scope.rstrip("/")  # the library's search: as before


def test_a_memory_scope_is_kept(make_tree):
    assert check_search(make_tree(TREE), "a", scope="notes/", scope_must_exist=True).scope == "notes"


@pytest.mark.parametrize("scope", [".memsearch", ".private", "notes/.drafts"])
def test_a_hidden_scope_is_refused_as_the_listing_refuses_it(make_tree, scope):
    """Before: an existing hidden directory passed (it is a directory), and the search answered "no hits"."""
    from memsearch.memory.contract import list_dir

    root = make_tree(TREE | {".memsearch/x.lance": "", ".private/a.md": "# P\n", "notes/.drafts/b.md": "# B\n"})
    with pytest.raises(NotMemoryFile, match="is a hidden directory") as searched:
        check_search(root, "a", scope=scope, scope_must_exist=True)
    with pytest.raises(NotMemoryFile) as listed:
        list_dir(root, scope)
    assert searched.value.text == f"scope {listed.value.text}"  # one rule, one sentence
