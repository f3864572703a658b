"""Output piped into a reader that stops early ends the command quietly with status 1 (docs/commands.md), also when
the output is one large piece (a long file read, a big JSON answer)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

LINES = 60_000  # about 2 MB: far over a pipe's buffer, so the reader leaves while the command still writes


@pytest.fixture
def big_root(make_tree):
    body = "".join(f"line {i} of a long journal about the atlas pipeline\n" for i in range(LINES))
    return make_tree({"MEMORY.md": "# M\n\nm\n", "notes/MEMORY.md": "# N\n\nn\n", "notes/long.md": "# Long\n\n" + body})


@pytest.mark.parametrize("extra", [[], ["--json"]])
def test_a_long_read_into_a_reader_that_stops_after_one_line_exits_1_quietly(big_root, extra):
    """One large write to a pipe whose reader left during it exited 0: CPython's buffered writer drops the rest of
    a partial write without an error, so the command never saw the broken pipe."""
    proc = subprocess.Popen([sys.executable, "-m", "memsearch", "read", str(big_root), "notes/long.md", "--local",
                             *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(os.environ))
    first = proc.stdout.readline()
    proc.stdout.close()  # the reader stops, as `| head -1` does
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 1, err
    assert first and "Traceback" not in err and "Exception ignored" not in err, err
