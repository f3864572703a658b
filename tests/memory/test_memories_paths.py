"""A read-side path in the memory tool's style (``/memories/...``, what the ``memory`` tool and Claude's own memory
tool use) is refused by memory_read, memory_list and a search's scope, which take paths relative to the root; the
error gives the same path relative to the root, so the model's next call is right (memory/tree.py)."""

from __future__ import annotations

import pytest

from memsearch.errors import PathOutsideRoot
from memsearch.memory.contract import list_dir, read


@pytest.mark.parametrize("given, fix", [
    ("/memories/notes/a.md", "'notes/a.md'"), ("/memories/notes", "'notes'"), ("/memories", "'.'"),
    ("/memories/", "'.'"), ("/memoriesx/a.md", "'notes/2026-08-12.md'"), ("/etc/passwd", "'notes/2026-08-12.md'"),
])
def test_an_absolute_path_is_answered_with_the_relative_one(make_tree, given, fix):
    root = make_tree({"MEMORY.md": "# M\n\nm\n", "notes/MEMORY.md": "# N\n\nn\n", "notes/a.md": "# A\n\na\n"})
    for call in (read, list_dir):
        with pytest.raises(PathOutsideRoot) as caught:
            call(root, given)
        assert str(caught.value).endswith(f"is absolute: give a path relative to the memory root, e.g. {fix}")
