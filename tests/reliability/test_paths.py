"""Hostile paths against every read surface (library, ToolBox, CLI) and a racing symlink swapper.

Each attack must end in a typed error whose message does not name the absolute root, and
no byte of the canary file outside the root may ever come back.
"""

from __future__ import annotations

import os
import threading
import time

import pytest

from memsearch.cli.app import main
from memsearch.errors import InvalidArgument, MemoryFileNotFound, MemsearchError, NotMemoryFile, PathOutsideRoot
from memsearch.memory.contract import list_dir, load_core, read
from memsearch.memory.tree import scan
from memsearch.tools import ToolBox
from tests.conftest import build


def cli(argv: list[str]) -> int:
    """``memsearch ARGV`` in this process: its exit status."""
    try:
        return main(argv)
    except SystemExit as exc:
        return exc.code or 0

CANARY = "CANARY-7f3a9c-outside-the-root"
INSIDE = "inside text, safe to read"


@pytest.fixture
def world(tmp_path):
    """A memory root, a secret folder outside it holding the canary, and links of every kind."""
    outside = build(tmp_path / "outside", {"secret.md": f"# secret\n{CANARY}\n", "dir/x.md": f"{CANARY}\n"})
    root = build(tmp_path / "memory", {
        "MEMORY.md": "# Root\nthe root index\n",
        "notes/MEMORY.md": "# Notes\nnotes index\n",
        "notes/a.md": f"# A\n{INSIDE}\n",
        "notes/real/x.md": f"# X\n{INSIDE}\n",
        ".private/key.md": f"# hidden\n{CANARY}\n",
        "skills/tool/SKILL.md": f"# skill\n{CANARY}\n",
    })
    links = {
        "notes/out.md": outside / "secret.md",           # a file link leaving the root
        "notes/outdir": outside / "dir",                  # a directory link leaving the root
        "notes/alias.md": root / ".private" / "key.md",    # a link to a hidden file
        "notes/skill.md": root / "skills" / "tool" / "SKILL.md",  # a link into a foreign folder
        "notes/rel.md": "../../outside/secret.md",         # relative link leaving the root
        "notes/loop.md": "loop.md",                        # a link to itself
        "notes/loop1.md": "loop2.md",
        "notes/loop2.md": "loop1.md",
        "notes/inner": root / "notes" / "real",           # a directory link inside the root
        "notes/ok.md": "a.md",                             # a file link inside the root: memory
        "notes/abs_ok.md": root / "notes" / "a.md",
        "notes/dead.md": "nowhere.md",
        "root.md": "/",                                    # a link to /
    }
    for name, target in links.items():
        os.symlink(target, root / name)
    os.mkfifo(root / "notes" / "fifo.md")
    return root, outside


#: (path, expected error) for the read surfaces. ``None`` means it must read INSIDE text.
ATTACKS = [
    ("../outside/secret.md", PathOutsideRoot),
    ("notes/../../outside/secret.md", PathOutsideRoot),
    ("notes/../notes/../../outside/secret.md", PathOutsideRoot),
    ("..", PathOutsideRoot),
    ("notes/..", PathOutsideRoot),
    ("/etc/passwd", PathOutsideRoot),
    ("//etc/passwd", PathOutsideRoot),
    ("~/secret.md", PathOutsideRoot),
    ("~root/.bashrc", PathOutsideRoot),
    ("notes/a.md\x00.md", PathOutsideRoot),
    ("\x00", PathOutsideRoot),
    ("%2e%2e/outside/secret.md", MemoryFileNotFound),
    ("notes/%2e%2e/%2e%2e/outside/secret.md", MemoryFileNotFound),
    ("\u2024\u2024/outside/secret.md", MemoryFileNotFound),      # one-dot leaders
    ("\uff0e\uff0e/outside/secret.md", MemoryFileNotFound),      # fullwidth full stops
    ("..\\outside\\secret.md", NotMemoryFile),                    # one name starting with a dot: hidden
    ("notes\\..\\..\\outside\\secret.md", MemoryFileNotFound),
    ("notes/out.md", PathOutsideRoot),
    ("notes/rel.md", PathOutsideRoot),
    ("notes/outdir/x.md", NotMemoryFile),
    ("notes/alias.md", NotMemoryFile),
    ("notes/skill.md", NotMemoryFile),
    (".private/key.md", NotMemoryFile),
    ("skills/tool/SKILL.md", NotMemoryFile),
    ("notes/loop.md", NotMemoryFile),
    ("notes/loop1.md", NotMemoryFile),
    ("notes/inner/x.md", NotMemoryFile),
    ("notes/dead.md", MemoryFileNotFound),
    ("notes/fifo.md", NotMemoryFile),
    ("root.md", PathOutsideRoot),
    ("root.md/etc/passwd", NotMemoryFile),
    ("notes", MemoryFileNotFound),                                # a folder: list it
    ("notes/missing.md", MemoryFileNotFound),
    ("notes/a.md/x.md", MemoryFileNotFound),
    ("a" * 256 + ".md", InvalidArgument),
    ("notes/" + "b" * 300 + ".md", InvalidArgument),
    ("/".join(["d"] * 5000) + "/x.md", InvalidArgument),
    ("x/" * 2000 + "y.md", MemoryFileNotFound),                   # 4,004 bytes: under PATH_MAX, missing
    ("n" * 10_000 + ".md", InvalidArgument),
    ("notes/\ud800.md", InvalidArgument),                          # a lone surrogate
    ("-h", NotMemoryFile),
    ("--help.md", MemoryFileNotFound),
    ("notes/a.md", None),
    ("notes/ok.md", None),
    ("notes/abs_ok.md", None),
    ("./notes//a.md", None),
    ("notes/real/x.md", None),
]
IDS = [repr(p)[:40] for p, _ in ATTACKS]


@pytest.mark.parametrize("path,expected", ATTACKS, ids=IDS)
def test_library_read(world, path, expected):
    root, _ = world
    if expected is None:
        assert INSIDE in read(root, path).text
        return
    with pytest.raises(expected) as info:
        read(root, path)
    assert str(root) not in str(info.value)
    assert len(str(info.value)) < 400


@pytest.mark.parametrize("path,expected", ATTACKS, ids=IDS)
def test_toolbox_read(world, path, expected):
    root, _ = world
    result = ToolBox(root).dispatch("memory_read", {"path": path})
    text = repr(result)
    assert CANARY not in text
    if expected is None:
        assert INSIDE in result["text"]
        return
    assert result["error"]["type"] == expected.__name__
    assert str(root) not in text and len(text) < 600


@pytest.mark.parametrize("path,expected", [a for a in ATTACKS if "\x00" not in a[0]][::3],
                         ids=[i for a, i in zip(ATTACKS, IDS) if "\x00" not in a[0]][::3])
def test_cli_read(world, path, expected, capsys):
    root, _ = world
    code = cli(["read", str(root), "--", path])
    out, err = capsys.readouterr()
    assert CANARY not in out + err
    assert "Traceback" not in err
    if expected is None:
        assert code == 0 and INSIDE in out
    else:
        assert code == 2 and err.startswith("error:") and err.count("\n") <= 3


def test_cli_read_dash_h_is_a_path(world, capsys):
    root, _ = world
    (root / "notes" / "-h.md").write_text(f"# dash\n{INSIDE}\n")
    assert cli(["read", str(root), "--", "notes/-h.md"]) == 0
    assert INSIDE in capsys.readouterr().out


def test_scan_decides_links_on_the_resolved_path(world):
    root, _ = world
    tree = scan(root)
    assert "notes/a.md" in tree.external_files and "notes/ok.md" in tree.external_files
    for bad in ("notes/alias.md", "notes/skill.md", "notes/out.md", "notes/rel.md", "notes/loop.md", "notes/dead.md"):
        assert bad not in tree.external_files and bad in tree.skipped_links, bad
    assert "notes/outdir" in tree.skipped_links and "notes/inner" in tree.skipped_links
    assert "notes/fifo.md" in tree.special
    listing = list_dir(root, "notes")
    assert CANARY not in repr(listing) and CANARY not in repr(load_core(root))


def _swapper(root, outside, stop: threading.Event) -> None:
    """Swap notes/flip between a real folder inside the root and a link outside, and notes/swap.md
    between a real file and a link to the canary, as fast as possible."""
    notes = root / "notes"
    flip, parked = notes / "flip", notes / "flip-parked"
    swap = notes / "swap.md"
    link_tmp, file_tmp = notes / ".link.tmp", notes / ".file.tmp"
    while not stop.is_set():
        os.rename(flip, parked)                       # the real folder leaves ...
        os.symlink(outside / "dir", flip)             # ... a link outside takes its name
        os.symlink(outside / "secret.md", link_tmp)
        os.replace(link_tmp, swap)                    # atomic: file -> link
        time.sleep(0)
        os.unlink(flip)
        os.rename(parked, flip)                       # the real folder is back
        file_tmp.write_text(f"{INSIDE}\n")
        os.replace(file_tmp, swap)                    # atomic: link -> file


def test_racing_symlink_swap_never_reads_outside(world):
    root, outside = world
    build(root, {"notes/flip/x.md": f"# flip\n{INSIDE}\n", "notes/swap.md": f"{INSIDE}\n"})
    (outside / "dir" / "x.md").write_text(f"{CANARY}\n")
    toolbox = ToolBox(root)
    stop = threading.Event()
    swapper = threading.Thread(target=_swapper, args=(root, outside, stop), daemon=True)
    swapper.start()
    leaks, ok, refused = 0, 0, 0
    try:
        for i in range(1500):  # bounded: about a second of reads
            path = "notes/flip/x.md" if i % 2 else "notes/swap.md"
            if i % 3 == 0:
                result = toolbox.dispatch("memory_read", {"path": path})
                text = result.get("text", "") + repr(result.get("error", ""))
                refused += "error" in result
            else:
                try:
                    text = read(root, path).text
                except MemsearchError as exc:
                    text, refused = str(exc), refused + 1
            leaks += CANARY in text
            ok += INSIDE in text
    finally:
        stop.set()
        swapper.join(5)
    assert leaks == 0
    assert ok > 0  # the reads really ran against the live tree
