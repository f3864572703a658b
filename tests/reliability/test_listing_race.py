"""Listings against a racing swapper: a folder replaced by a link to outside the root while it is listed.

Every surface that lists folders (the memory tool's ``view``, ``ls``, the tree walk, the validator,
MCP resources, the refusal that names non-memory entries) lists through directory descriptors, so no
name or size from outside the root may ever come back, however the race falls.
"""

from __future__ import annotations

import subprocess
import sys

from memsearch.errors import MemsearchError
from memsearch.harness.mcp import _memory_resources
from memsearch.memory.contract import list_dir
from memsearch.memory.editor import Editor
from memsearch.memory.tree import scan
from memsearch.memory.validator import validate
from memsearch.tools import ToolBox
from tests.conftest import build

LEAK = "LEAKED-NAME-5d21e0"
RACE_SECONDS = 5.0  # bounded: the swapper and the listings run this long at most


#: The swapper, a process of its own (truly concurrent, no shared interpreter lock): it swaps
#: notes/flip between a real memory folder and a link to a folder outside the root, holding each
#: state a fraction of a millisecond (about the time a listing takes to reach flip/), until its
#: time is up; it leaves the real folder in place. Before the fix this leaked within seconds.
SWAPPER = """
import os, sys, time
notes, outside, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
flip, parked = os.path.join(notes, "flip"), os.path.join(notes, "flip-parked")
print("ready", flush=True)
end = time.monotonic() + seconds
while time.monotonic() < end and os.path.isdir(flip):  # a delete that got through ends the race (asserted below)
    time.sleep(0.0003)
    os.rename(flip, parked)
    os.symlink(outside, flip)
    time.sleep(0.0003)
    os.unlink(flip)
    os.rename(parked, flip)
"""


def _surfaces(root, editor: Editor, toolbox: ToolBox):
    yield lambda: editor.view("/memories/notes").output
    yield lambda: editor.view("/memories").output
    yield lambda: editor.delete("/memories/notes/flip").output  # refused: names the non-memory entries it holds
    yield lambda: repr(list_dir(root, "notes"))
    yield lambda: repr(scan(root))
    yield lambda: repr(validate(root).to_dict())
    yield lambda: repr(_memory_resources(toolbox))
    yield lambda: repr(toolbox.dispatch("memory_list", {"path": "notes/flip"}))


def test_listings_never_name_anything_outside_the_root(tmp_path):
    outside = build(tmp_path / "outside", {f"{LEAK}.md": "# outside\n" + "x" * 12_345, "MEMORY.md": f"# {LEAK}\n",
                                           f"{LEAK}-dir/MEMORY.md": f"# {LEAK}\n"})
    files = {"MEMORY.md": "# Root\n", "notes/MEMORY.md": "# Notes\n", "notes/flip/MEMORY.md": "# Flip\n",
             "notes/flip/x.md": "# X\ninside\n", "notes/flip/.keep": "hidden, not memory: delete is refused\n"}
    # Many entries listed before flip/ widen the window between listing notes/ and entering flip/.
    files |= {f"notes/a{i:03}.md": f"# A{i}\n" for i in range(150)}
    root = build(tmp_path / "memory", files)
    editor, toolbox = Editor(root), ToolBox(root)
    surfaces = list(_surfaces(root, editor, toolbox))
    for surface in surfaces:  # warm up (token encodings load once), so the race gets the time
        try:
            surface()
        except MemsearchError:
            pass
    swapper = subprocess.Popen([sys.executable, "-c", SWAPPER, str(root / "notes"), str(outside), str(RACE_SECONDS)],
                               stdout=subprocess.PIPE, text=True)
    assert swapper.stdout.readline().strip() == "ready"
    leaks, answered, calls = [], 0, 0
    try:
        while swapper.poll() is None:
            for surface in surfaces:
                try:
                    text = surface()
                    answered += 1
                except MemsearchError as exc:  # e.g. the folder was a link at that instant: refused
                    text = str(exc)
                calls += 1
                if LEAK in text:
                    leaks.append(text[:300])
    finally:
        swapper.wait(RACE_SECONDS + 10)
    assert not leaks, f"{len(leaks)} of {calls} listings named files outside the root, e.g. {leaks[0]}"
    assert answered > len(surfaces)  # the listings really ran against the live tree
    assert (root / "notes" / "flip" / "x.md").exists()  # the refused delete took nothing
