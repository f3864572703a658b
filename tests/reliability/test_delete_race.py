"""Deleting a folder against a racing swapper: the folder the delete checked is the only one it may remove.

``delete`` refuses a folder holding entries that are not memory. A second process keeps exchanging
``notes/flip`` (memory only: deletable) with ``notes/keep`` (a hidden file in it: refused), so the
name the delete checked may name the other folder by the time it acts. The delete renames the entry
aside by descriptor and removes it only if it is the folder it listed (:func:`rootfs.remove_dir`);
before, it renamed whatever the name held then, and removed the refused folder.
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys

import pytest

from memsearch.errors import MemsearchError
from memsearch.memory.editor import Editor
from tests.conftest import build

RACE_SECONDS = 4.0
PRECIOUS = "not memory, and never deleted: d41c7e"

#: The swapper (a process of its own): exchanges flip and keep atomically (renameat2 RENAME_EXCHANGE), and when
#: a delete has taken the folder at flip, makes a new deletable one there, until its time is up.
SWAPPER = """
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
notes, seconds = sys.argv[1], float(sys.argv[2])
flip, keep = os.path.join(notes, "flip"), os.path.join(notes, "keep")
print("ready", flush=True)
end, swaps, made = time.monotonic() + seconds, 0, 0
while time.monotonic() < end:
    if libc.renameat2(-100, flip.encode(), -100, keep.encode(), 2) == 0:
        swaps += 1
    elif not os.path.lexists(flip):
        try:
            os.mkdir(flip)
            with open(os.path.join(flip, "x.md"), "w") as f:
                f.write("# X\\nfine to delete\\n")
            made += 1
        except OSError:
            pass
    time.sleep(0.0002)
print(swaps, made, flush=True)
"""


def _renameat2() -> bool:
    return sys.platform.startswith("linux") and hasattr(ctypes.CDLL(None), "renameat2")


@pytest.mark.skipif(not _renameat2(), reason="the swapper needs Linux's renameat2")
def test_a_folder_swapped_in_after_the_check_is_never_deleted(tmp_path):
    root = build(tmp_path / "memory", {"MEMORY.md": "# Root\n", "notes/MEMORY.md": "# Notes\n",
                                       "notes/flip/x.md": "# X\nfine to delete\n",
                                       "notes/keep/y.md": "# Y\nkept\n", "notes/keep/.precious": PRECIOUS})
    editor = Editor(root)
    swapper = subprocess.Popen([sys.executable, "-c", SWAPPER, str(root / "notes"), str(RACE_SECONDS)],
                               stdout=subprocess.PIPE, text=True)
    assert swapper.stdout.readline().strip() == "ready"
    deleted = refused = 0
    try:
        while swapper.poll() is None:
            try:
                editor.delete("/memories/notes/flip")
                deleted += 1
            except MemsearchError:
                refused += 1
    finally:
        out, _ = swapper.communicate(timeout=RACE_SECONDS + 30)
    swaps, made = map(int, out.split())
    # the race was live: under load most of the swapper's turns go to re-making the deleted folder (78 swaps
    # against 3,004 folders made in one run on a busy machine), so a few dozen exchanges is the bar
    assert swaps > 20 and deleted > 0 and refused > 0, (swaps, made, deleted, refused)
    kept = [os.path.join(d, ".precious") for d, _, names in os.walk(root / "notes") if ".precious" in names]
    assert len(kept) == 1, f"the refused folder was deleted ({deleted} deletes, {refused} refusals)"
    assert open(kept[0]).read() == PRECIOUS
