"""The real Claude Code CLI for tests: ``@anthropic-ai/claude-code`` of one pinned version, installed from npm once.

Installed into ``~/.cache/memsearch-tests/claude-code-VERSION`` (``MEMSEARCH_TEST_CLAUDE_CODE`` names another
version) and shared by every test that runs it; a test skips, saying why, only where npm or the package cannot be
had.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

__all__ = ["VERSION", "CACHE", "installed"]

VERSION = os.environ.get("MEMSEARCH_TEST_CLAUDE_CODE") or "2.1.332"
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "memsearch-tests" / f"claude-code-{VERSION}"


def _runs(exe: Path) -> bool:
    try:
        done = subprocess.run([str(exe), "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0 and VERSION in done.stdout


def installed() -> Path:
    """The ``claude`` executable of :data:`VERSION`, installed from npm into :data:`CACHE` on first use."""
    exe = CACHE / "bin" / "claude"
    if _runs(exe):
        return exe
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip("npm is not installed: the Claude Code CLI comes from npm (install Node.js and npm)")
    staging = CACHE.with_name(f"{CACHE.name}.partial-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    try:
        done = subprocess.run([npm, "install", "--global", "--prefix", str(staging), "--no-audit", "--no-fund",
                               f"@anthropic-ai/claude-code@{VERSION}"], capture_output=True, text=True, timeout=900)
    except subprocess.TimeoutExpired:
        pytest.skip(f"npm could not install @anthropic-ai/claude-code@{VERSION} within 15 minutes")
    if done.returncode != 0 or not _runs(staging / "bin" / "claude"):
        shutil.rmtree(staging, ignore_errors=True)
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        pytest.skip(f"npm could not install @anthropic-ai/claude-code@{VERSION}: {last}")
    shutil.rmtree(CACHE, ignore_errors=True)
    os.replace(staging, CACHE)
    assert _runs(exe)
    return exe
