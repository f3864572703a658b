"""A real ``memsearch serve --roots PARENT --http`` on a free loopback port, and one MCP tool call against it.

Test support (tests/harness/test_tenants.py, tests/s3/), also used by :mod:`benchmarks.perf.tenants`.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

__all__ = ["TenantServer", "call", "session", "free_port"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class TenantServer:
    """``python -m memsearch serve --roots PARENT --http`` on a free loopback port, for a ``with`` block."""

    def __init__(self, parent: Path, *, env: dict[str, str] | None = None, args: tuple[str, ...] = (), start_timeout: float = 120):
        self.parent, self.args, self.start_timeout = parent, args, start_timeout
        self.env = dict(os.environ if env is None else env, HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
        self.port = free_port()
        self.process: subprocess.Popen | None = None

    def url(self, tenant: str) -> str:
        return f"http://127.0.0.1:{self.port}/tenants/{tenant}/mcp"

    def __enter__(self) -> "TenantServer":
        command = [sys.executable, "-m", "memsearch", "serve", "--roots", str(self.parent), "--http", "--port", str(self.port), *self.args]
        self.process = subprocess.Popen(command, env=self.env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + self.start_timeout
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return self
            except OSError:
                if self.process.poll() is not None:
                    raise RuntimeError(f"memsearch serve --roots exited: {self.process.stderr.read().decode()[-2000:]}")
                if time.monotonic() > deadline:
                    self.__exit__()
                    raise RuntimeError("memsearch serve --roots did not start listening")
                time.sleep(0.1)

    def __exit__(self, *exc) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def rss(self) -> int:
        import psutil

        return psutil.Process(self.process.pid).memory_info().rss


def session(url: str):
    """An MCP client session on ``url`` (``async with session(url) as client``)."""
    from mcp import Client

    return Client(url)


def call(url: str, tool: str, arguments: dict) -> dict:
    """One tool call in a fresh session: the result's JSON (``structuredContent``)."""
    import anyio

    result: dict = {}

    async def run() -> None:
        async with session(url) as client:
            answer = await client.call_tool(tool, arguments)
            result.update(answer.structured_content or {})

    anyio.run(run)
    return result
