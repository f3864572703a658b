"""One writer, a standby and N read replicas of an ``s3://`` index as real processes on loopback, each with
its own state directory (a "machine"), plus what measures them: searches over MCP HTTP or the daemon
protocol, the versions each replica serves (``GET /healthz``) against the commits' own timestamps.

Test support (tests/s3/test_replica_cluster.py), also used by :mod:`benchmarks.perf.replicas`.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.tenants import free_port

REPO = Path(__file__).resolve().parents[2]

__all__ = ["Node", "Cluster", "VersionWatch", "percentile", "Searches"]


def percentile(values, q: float) -> float | None:
    values = sorted(values)
    if not values:
        return None
    return values[min(len(values) - 1, int(q * len(values)))]


class Node:
    """One ``python -m memsearch`` process with its own state directory and log (``work/NAME.log``)."""

    def __init__(self, name: str, args: list[str], env: dict[str, str], work: Path, port: int | None = None):
        self.name, self.args, self.port = name, args, port
        self.state = work / f"{name}-state"
        self.log = work / f"{name}.log"
        self.env = dict(env, MEMSEARCH_STATE_DIR=str(self.state), HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
        self.process: subprocess.Popen | None = None

    def start(self) -> "Node":
        self._out = open(self.log, "ab")
        self.process = subprocess.Popen([sys.executable, "-m", "memsearch", *self.args], env=self.env, cwd=REPO,
                                        stdout=self._out, stderr=subprocess.STDOUT)
        return self

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    @property
    def pid(self) -> int:
        return self.process.pid

    def kill9(self) -> None:
        if self.alive:
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def stop(self, timeout: float = 20.0) -> None:
        if self.alive:
            self.process.terminate()
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.kill9()
        self._out.close()

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    # --- a replica's endpoints ------------------------------------------------------------
    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def health(self, timeout: float = 2.0) -> dict | None:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/healthz", timeout=timeout) as reply:
                return json.loads(reply.read())
        except OSError:
            return None

    def socket(self) -> Path | None:
        """The replica's daemon-protocol socket (as its ``/healthz`` says), once it serves one."""
        if getattr(self, "_socket", None) is None:
            health = self.health()
            self._socket = Path(health["socket"]) if health and health.get("socket") else None
        return self._socket

    def daemon_state(self) -> dict:
        """A writer's ``daemon.json`` (its state: starting, syncing, watching...), or {}."""
        for path in self.state.rglob("daemon.json"):
            try:
                return json.loads(path.read_text())
            except (OSError, ValueError):
                return {}
        return {}


@dataclass
class Cluster:
    """Writers (``watch ROOT --db URI --standby``) and replicas (``serve ROOT --http --db URI --read-only``)."""

    root: Path
    uri: str
    env: dict[str, str]
    work: Path
    nodes: list[Node] = field(default_factory=list)

    def writer(self, name: str) -> Node:
        node = Node(name, ["watch", str(self.root), "--db", self.uri, "--standby"], self.env, self.work).start()
        self.nodes.append(node)
        return node

    def replica(self, name: str) -> Node:
        port = free_port()
        node = Node(name, ["serve", str(self.root), "--http", "--port", str(port), "--db", self.uri, "--read-only"],
                    self.env, self.work, port).start()
        self.nodes.append(node)
        return node

    def wait_healthy(self, replicas: list[Node], timeout: float = 180.0) -> None:
        deadline = time.monotonic() + timeout
        for node in replicas:
            while node.health() is None or node.socket() is None:
                if not node.alive:
                    raise RuntimeError(f"replica {node.name} exited:\n{node.text()[-3000:]}")
                if time.monotonic() > deadline:
                    raise RuntimeError(f"replica {node.name} did not start:\n{node.text()[-3000:]}")
                time.sleep(0.2)

    def close(self) -> None:
        for node in self.nodes:
            node.stop()


#: The watcher's own process (out of the clients' process, whose threads would delay its polls): every
#: INTERVAL seconds, the chunks table's latest version and each replica's /healthz, printed as JSON lines.
WATCHER = """
import json, sys, time, urllib.request
import lancedb
from memsearch.engine.storage.remote import RemoteDB
uri, interval, ports = sys.argv[1], float(sys.argv[2]), json.loads(sys.argv[3])
remote = RemoteDB.parse(uri)
table = None
while True:
    try:
        table = table or lancedb.connect(remote.uri, storage_options=remote.storage_options).open_table("chunks")
        table.checkout_latest()
        print(json.dumps(["commit", table.version, time.time()]), flush=True)
    except Exception as exc:
        print(json.dumps(["error", str(exc)[:200], time.time()]), flush=True)
    for name, port in ports.items():
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1.0) as reply:
                version = json.loads(reply.read()).get("version")
            print(json.dumps([name, version, time.time()]), flush=True)
        except OSError:
            pass
    time.sleep(interval)
"""


class VersionWatch:
    """A process polling, every ``interval`` seconds, the chunks table's latest version as any reader of ``uri``
    sees it (when each version was first committed, within one poll) and each replica's ``/healthz`` (when it
    first served it)."""

    def __init__(self, uri: str, replicas: list[Node], interval: float = 0.05, env: dict[str, str] | None = None):
        self.uri, self.replicas, self.interval, self.env = uri, replicas, interval, env
        self.commits: dict[int, float] = {}
        self.seen: dict[str, list[tuple[float, int]]] = {r.name: [] for r in replicas}
        self.polls, self.errors = 0, []
        self.process: subprocess.Popen | None = None
        self._thread = threading.Thread(target=self._read, name="version-watch", daemon=True)

    def start(self) -> "VersionWatch":
        ports = json.dumps({r.name: r.port for r in self.replicas})
        self.process = subprocess.Popen([sys.executable, "-c", WATCHER, self.uri, str(self.interval), ports],
                                        env=self.env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                        text=True)
        self._thread.start()
        return self

    def wait_ready(self, timeout: float = 120.0) -> None:
        """Wait for the first poll (the watcher's imports take seconds on a busy machine)."""
        deadline = time.monotonic() + timeout
        while not self.polls:
            if time.monotonic() > deadline:
                raise RuntimeError(f"the version watcher made no poll: {self.errors[:3]}")
            time.sleep(0.1)

    def _read(self) -> None:
        for line in self.process.stdout:
            try:
                kind, value, at = json.loads(line)
            except ValueError:
                continue
            if kind == "commit":
                self.polls += 1
                self.commits.setdefault(value, at)
            elif kind == "error":
                self.errors.append(value)
            elif value:
                seen = self.seen[kind]
                if not seen or value > seen[-1][1]:
                    seen.append((at, value))

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self._thread.join(timeout=10)

    def lags(self, since: float, until: float) -> dict[str, list[float | None]]:
        """Per replica, for each version committed in [since, until]: seconds from its commit (as first seen)
        to the first time the replica served that version or a later one (None: it never did)."""
        out: dict[str, list[float | None]] = {}
        for name, seen in self.seen.items():
            lags = []
            for version, at in self.commits.items():
                if not since <= at <= until:
                    continue
                first = next((t for t, v in seen if v >= version), None)
                lags.append(None if first is None else max(0.0, first - at))
            out[name] = lags
        return out


class Searches:
    """Client threads searching the replicas of ``root``, each bound to one replica, over MCP HTTP (``mcp``: one
    session per thread, opened again after a failure, as an agent's client would) or the daemon protocol
    (``socket``: one connection per request); every search recorded (replica, start, end, ok, error)."""

    def __init__(self, replicas: list[Node], root: Path, queries: list[str], *, per_replica: int = 1, k: int = 5,
                 transport: str = "mcp"):
        self.replicas, self.root, self.queries, self.k = replicas, root, queries, k
        self.records: list[tuple[str, float, float, bool, str]] = []
        self._stop = threading.Event()
        run = self._mcp if transport == "mcp" else self._socket
        self._threads = [threading.Thread(target=run, args=(node, n), daemon=True)
                         for node in replicas for n in range(per_replica)]

    def start(self) -> "Searches":
        for thread in self._threads:
            thread.start()
        return self

    def _record(self, node: Node, t0: float, error: BaseException | None) -> None:
        text = "" if error is None else f"{type(error).__name__}: {error}"[:200]
        self.records.append((node.name, t0, time.time(), error is None, text))

    def _socket(self, node: Node, n: int) -> None:
        from memsearch.service.client import Client

        i = n * 3
        while not self._stop.is_set():
            t0 = time.time()
            try:
                Client(self.root, path=node.socket(), timeout=10).call("search", query=self.queries[i % len(
                    self.queries)], k=self.k)
                self._record(node, t0, None)
            except Exception as exc:  # noqa: BLE001 - counted and reported
                self._record(node, t0, exc)
                time.sleep(0.05)
            i += 1

    def _mcp(self, node: Node, n: int) -> None:
        import anyio
        from mcp import Client

        state = {"i": n * 3}

        async def session() -> None:
            async with Client(node.url, read_timeout_seconds=10) as client:
                while not self._stop.is_set():
                    t0 = time.time()
                    query = self.queries[state["i"] % len(self.queries)]
                    state["i"] += 1
                    answer = await client.call_tool("memory_search", {"query": query, "k": self.k})
                    if answer.is_error:
                        self._record(node, t0, RuntimeError(str(answer.content)[:150]))
                    else:
                        self._record(node, t0, None)

        while not self._stop.is_set():
            t0 = time.time()
            try:
                anyio.run(session)
            except BaseException as exc:  # noqa: BLE001 - a dead replica: counted, then a new session
                self._record(node, t0, exc)
                time.sleep(0.2)

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=30)

    def summary(self, alive: set[str], until: dict[str, float] | None = None) -> dict:
        """Served and failed per replica (a killed replica's searches counted up to its death in ``until``),
        and the longest gap between two searches answered by a surviving replica."""
        until = until or {}
        per = {}
        for node in self.replicas:
            mine = [r for r in self.records if r[0] == node.name and r[1] <= until.get(node.name, float("inf"))]
            ok = sorted(r[2] for r in mine if r[3])
            gaps = [b - a for a, b in zip(ok, ok[1:])]
            per[node.name] = {"served": len(ok), "failed": sum(1 for r in mine if not r[3]),
                              "longest_gap_s": round(max(gaps), 3) if gaps else None,
                              "errors": sorted({r[4] for r in mine if not r[3]})[:3]}
        answered = sorted(r[2] for r in self.records if r[3] and r[0] in alive)
        gaps = [b - a for a, b in zip(answered, answered[1:])]
        return {"replicas": per, "longest_gap_s": round(max(gaps), 3) if gaps else None}
