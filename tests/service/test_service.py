"""The daemon's socket server and its thin client, with real Unix sockets and real processes.

The index here uses the HashEmbedder (fast); tests/e2e/test_service_e2e.py runs the same paths
with the real model and real daemon processes.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import socket
import stat
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from memsearch import errors
from memsearch.engine.embed.embedder import HashEmbedder
from memsearch.engine.index import MemoryIndex
from memsearch.location import MAX_SOCKET_PATH, IndexLocation
from memsearch.memory.contract import list_dir, load_core, read
from memsearch.service import protocol
from memsearch.service.client import Client, ask
from memsearch.service.process import verified_holder
from memsearch.service.server import Server
from memsearch.tools import ToolBox
from tests.conftest import REPO

TREE = {
    "MEMORY.md": "# Memory\n\nRoot index.\n",
    "persona.md": "# Persona\n\nCalm and precise.\n",
    "notes/MEMORY.md": "# Notes\n\nWorking notes.\n",
    "notes/atlas.md": "# Atlas\n\n## Goals\n\nShip the atlas search.\n\n## Risks\n\nThe vendor is late.\n",
    "people/MEMORY.md": "# People\n\nWho is who.\n",
    "people/bob.md": "# Bob\n\nBob likes kayaks.\n",
}
ENV = dict(os.environ, PYTHONPATH=str(REPO), HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false")


@pytest.fixture
def served(make_tree):
    """A memory root, its index (HashEmbedder, synced) and a Server on its socket."""
    root = make_tree(TREE)
    index = MemoryIndex(root, embedder=HashEmbedder())
    index.sync()
    server = Server(index).start()
    yield root, index, server
    server.close()


def raw(path: Path, *lines: bytes, timeout: float = 5.0) -> list[dict]:
    """Send ``lines`` on one connection; the replies, one per non-blank line."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        sock.connect(str(path))
        replies = []
        with sock.makefile("rb") as stream:
            for line in lines:
                try:
                    sock.sendall(line)
                except (BrokenPipeError, ConnectionResetError):  # refused at once (busy): its reply is there to read
                    pass
                if line.strip():
                    replies.append(json.loads(stream.readline()))
        return replies


def test_the_client_and_the_engine_ask_one_location(make_tree, monkeypatch):
    root = make_tree(TREE).resolve()
    index = MemoryIndex(root, embedder=HashEmbedder())
    assert Client(root).db_path == index.db_path == IndexLocation.of(root).state == root / ".memsearch"
    monkeypatch.setenv("MEMSEARCH_DB", str(root.parent / "elsewhere"))
    assert Client(root).db_path == MemoryIndex(root, embedder=HashEmbedder()).db_path == root.parent / "elsewhere"


def test_socket_is_owner_only_and_answers_like_the_library(served):
    root, index, server = served
    assert server.path == index.db_path.absolute() / "run" / "daemon.sock"
    assert stat.S_IMODE(os.stat(server.path).st_mode) == 0o600 and stat.S_ISSOCK(os.stat(server.path).st_mode)
    assert stat.S_IMODE(os.stat(server.path.parent).st_mode) == 0o700
    client = Client(root)
    hits = client.call("search", query="vendor late", k=3)["hits"]
    assert hits == [h.to_dict() for h in index.search("vendor late", k=3)] and hits[0]["path"] == "notes/atlas.md"
    keyword = client.call("search", query="kayaks", k=2, mode="keyword", scope="people")["hits"]
    assert keyword == [h.to_dict() for h in index.search("kayaks", k=2, mode="keyword", scope="people")]
    assert client.call("read", path="notes/atlas.md", lines="3:5") == read(root, "notes/atlas.md", "3:5").to_dict()
    assert client.call("ls", path=".") == json.loads(json.dumps(list_dir(root, ".").to_dict()))
    assert client.call("core") == json.loads(json.dumps(load_core(root).to_dict()))
    status = client.call("status")
    assert status["pid"] == os.getpid() and status["root"] == str(root.resolve()) and status["protocol"] == 1
    assert status["socket"] == str(server.path) and status["model"] == "hash-test"
    # the searches' count and thread CPU (what the concurrency benchmark splits a search's CPU with); the
    # HashEmbedder has no query batcher to report
    assert status["searches"]["count"] == 2 and 0 < status["searches"]["cpu_s"] < 5
    assert status["query_encoder"] is None


def test_a_bad_call_raises_the_error_the_library_raises(served):
    root, _, _ = served
    client = Client(root)
    for method, params, local in (
        ("read", {"path": "../outside.md"}, lambda: read(root, "../outside.md")),
        ("read", {"path": "notes/nope.md"}, lambda: read(root, "notes/nope.md")),
        (
            "search",
            {"query": "x", "since": "2026-13-40"},
            lambda: MemoryIndex(root, embedder=HashEmbedder()).search("x", since="2026-13-40"),
        ),
        ("search", {"query": "  "}, lambda: MemoryIndex(root, embedder=HashEmbedder()).search("  ")),
    ):
        with pytest.raises(errors.MemsearchError) as remote:
            client.call(method, **params)
        with pytest.raises(errors.MemsearchError) as here:
            local()
        assert type(remote.value) is type(here.value) and str(remote.value) == str(here.value)


def test_a_lone_surrogate_goes_over_the_socket_and_is_answered_as_in_process(served):
    """A model's emoji cut in half ('\\ud83d') cannot be UTF-8: it goes as JSON's escape both ways, so the call is
    answered (or refused) at once as in-process, not taken for a service that is not there."""
    root, index, _ = served
    line = protocol.encode({"query": "vendor \ud83d"})
    assert line.isascii() and protocol.decode(line) == {"query": "vendor \ud83d"}
    client = Client(root)
    hits = client.call("search", query="vendor late \ud83d", k=3)["hits"]
    assert hits == [h.to_dict() for h in index.search("vendor late \ud83d", k=3)] and hits
    with pytest.raises(errors.InvalidArgument) as remote:
        client.call("read", path="notes/\ud800.md")
    with pytest.raises(errors.InvalidArgument) as here:
        read(root, "notes/\ud800.md")
    assert str(remote.value) == str(here.value)


@pytest.mark.slow
def test_a_tool_call_with_a_lone_surrogate_is_answered_by_the_running_service(private_service):
    """The same through the per-user service a ToolBox starts (the default), the real model: the tool's reply
    echoes the query, so the service's reply holds the lone surrogate too; no thread of it fails on it."""
    root = private_service / "memory"
    shutil.copytree(REPO / "examples" / "memory", root, ignore=shutil.ignore_patterns(".memsearch"))
    box = ToolBox(root)
    deadline = time.monotonic() + 180
    while "error" in (first := box.dispatch("memory_search", {"query": "Atlas warehouse", "k": 2})):
        assert first["error"]["type"] == "IndexBuilding" and time.monotonic() < deadline, first
        time.sleep(0.5)
    while True:  # the service holds the root (a first call may be answered in-process while it starts)
        try:
            assert Client(root).call("status")["root"] == str(root.resolve())
            break
        except errors.DaemonUnavailable:
            assert time.monotonic() < deadline, "the service never loaded the root"
            box.dispatch("memory_search", {"query": "Atlas warehouse", "k": 2})
            time.sleep(0.5)
    # the call the thin MCP server and a ToolBox make (a ToolBox would quietly answer in-process if it failed)
    cut = Client(root).call("tool", name="memory_search", arguments={"query": "Atlas warehouse \ud83d", "k": 2})
    assert cut["query"] == "Atlas warehouse \ud83d" and cut["hits"][0]["path"] == first["hits"][0]["path"], cut
    with pytest.raises(errors.InvalidArgument, match="not valid UTF-8"):  # refused there, as in-process
        Client(root).call("tool", name="memory_read", arguments={"path": "notes/\ud800.md"})
    log = (private_service / "memsearch" / "service.log").read_text()
    assert "Traceback" not in log and "UnicodeEncodeError" not in log, log[-2000:]


def test_malformed_requests_get_error_replies_and_the_server_keeps_serving(served):
    root, _, server = served
    ok = b'{"v": 1, "id": 9, "method": "status"}\n'
    replies = raw(
        server.path,
        b"this is not json\n",
        b"[1, 2, 3]\n",
        b"\xff\xfe\n",
        b"\n",
        b'{"v": 2, "id": 1, "method": "status"}\n',
        b'{"v": 1, "id": 2, "method": "drop_tables"}\n',
        b'{"v": 1, "id": 3, "method": "search", "params": []}\n',
        b'{"v": 1, "id": 4, "method": "search", "params": {"query": "x", "rm": true}}\n',
        b'{"v": 1, "id": 5, "method": "read", "params": {}}\n',
        b'{"v": 1, "id": 6, "method": "status", "root": "/somewhere/else"}\n',
        b'{"v": 1, "id": 7, "method": "search", "params": {"query": "x", "model": "another-model"}}\n',
        ok,
    )
    kinds = [(r["id"], r["ok"], r.get("error", {}).get("type")) for r in replies]
    assert kinds == [
        (None, False, "BadRequest"),
        (None, False, "BadRequest"),
        (None, False, "BadRequest"),
        (1, False, "UnsupportedVersion"),
        (2, False, "UnknownMethod"),
        (3, False, "BadRequest"),
        (4, False, "BadRequest"),
        (5, False, "BadRequest"),
        (6, False, "WrongRoot"),
        (7, False, "WrongModel"),
        (9, True, None),
    ]
    assert all(r["error"]["message"] for r in replies if not r["ok"])
    # a line over the limit: an error reply, that connection closed, the server still serves others
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(10)
        sock.connect(str(server.path))
        sock.sendall(b"x" * (protocol.MAX_LINE_BYTES + 10) + b"\n")
        with sock.makefile("rb") as stream:
            assert json.loads(stream.readline())["error"]["type"] == "BadRequest"
            assert stream.readline() == b""
    assert raw(server.path, ok)[0]["ok"] and Client(root).call("search", query="kayaks")["hits"]


def test_json_depth_counts_as_the_character_scan():
    """json_depth skips to the quotes, backslashes and brackets: the depth (and where the scan stops past
    the limit) is the per-character scan's, escapes and unterminated strings included."""
    rng = random.Random(7)
    texts = ["".join(rng.choice('"\\[]{}a:, \n') for _ in range(rng.randint(0, 30))) for _ in range(20000)]
    texts += ['{"a": "x\\"[[[", "b": [[{"c": "\\\\"}]]]}', "[" * 40, '"[[[' + "[" * 20]
    for text in texts:
        for limit in (0, 1, 2, 16):
            expected = 0
            for depth in protocol.json_depths(text):
                expected = max(expected, depth)
                if expected > limit:
                    break
            assert protocol.json_depth(text, limit) == expected, (text, limit)



def test_connection_threads_wait_for_the_next_connection_and_end_at_close(private_service):
    """A connection's thread serves the next connection (THREAD_IDLE_S) rather than one thread per call;
    calls in flight together get threads of their own; close() ends the waiting ones."""
    calls = []

    def dispatch(method, root, db, params, progress):
        calls.append(threading.current_thread())
        if params.get("hold"):
            time.sleep(0.5)
        return {"method": method}

    ok = protocol.encode({"v": protocol.PROTOCOL_VERSION, "id": 1, "method": "status"})
    hold = protocol.encode({"v": protocol.PROTOCOL_VERSION, "id": 2, "method": "status", "params": {"hold": True}})
    server = Server(dispatch=dispatch, path=private_service / "s.sock").start()
    try:
        for _ in range(20):  # one after the other: a thread or two serve them all (one a call before)
            assert raw(server.path, ok)[0]["result"] == {"method": "status"}
        assert len(set(calls)) < 10  # a client may call again before its last thread has seen it hang up
        together = [threading.Thread(target=raw, args=(server.path, hold)) for _ in range(3)]
        for t in together:
            t.start()
        for t in together:
            t.join(10)
        assert len(calls) == 23 and len(set(calls[20:])) == 3  # in flight together: a thread each
        workers = set(calls)
    finally:
        server.close()
    for worker in workers:
        worker.join(5)
        assert not worker.is_alive()


def test_a_connection_past_max_clients_is_refused_busy_and_served_once_one_ends(private_service):
    """At most ``max_clients`` connections are served at once: one more is told to retry, and a call is
    served again once a connection ends."""
    release = threading.Event()

    def dispatch(method, root, db, params, progress):
        if params.get("hold"):
            release.wait(10)
        return {"method": method}

    ok = protocol.encode({"v": protocol.PROTOCOL_VERSION, "id": 1, "method": "status"})
    hold = protocol.encode({"v": protocol.PROTOCOL_VERSION, "id": 2, "method": "status", "params": {"hold": True}})
    server = Server(dispatch=dispatch, path=private_service / "s.sock", max_clients=2).start()
    try:
        held = [threading.Thread(target=raw, args=(server.path, hold)) for _ in range(2)]
        for t in held:
            t.start()
        deadline = time.monotonic() + 10
        while server.requests < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        busy = raw(server.path, ok)[0]
        assert busy["ok"] is False and busy["error"]["type"] == "ServerError" and "too many" in busy["error"]["message"]
        release.set()
        for t in held:
            t.join(10)
        # a held client has its answer a moment before the server closes its connection and frees the slot: retry
        # while told "busy", as a client does, within a bound (CI once asked in that moment)
        deadline = time.monotonic() + 10
        answer = raw(server.path, ok)[0]
        while not answer["ok"] and "too many" in answer["error"]["message"] and time.monotonic() < deadline:
            time.sleep(0.01)
            answer = raw(server.path, ok)[0]
        assert answer["result"] == {"method": "status"}
    finally:
        release.set()
        server.close()


def test_concurrent_clients_while_the_index_is_written(served):
    root, index, server = served
    errors_seen: list[BaseException] = []
    stop = threading.Event()

    def client_loop() -> None:
        client = Client(root)
        while not stop.is_set():
            try:
                assert client.call("search", query="vendor", k=2)["hits"]
            except BaseException as exc:  # noqa: BLE001
                errors_seen.append(exc)
                return

    threads = [threading.Thread(target=client_loop) for _ in range(8)]
    for t in threads:
        t.start()
    writer = MemoryIndex(root, embedder=index.embedder)
    for i in range(5):
        (root / "notes" / f"extra{i}.md").write_text(f"# Extra {i}\n\nThe vendor sent note {i}.\n")
        writer.sync()
    stop.set()
    for t in threads:
        t.join(30)
    assert not errors_seen, errors_seen[:3]
    assert any(
        h["path"] == "notes/extra4.md" for h in Client(root).call("search", query="vendor sent note 4", k=10)["hits"]
    )


def test_long_index_paths_get_a_short_hashed_socket_recorded_for_clients(make_tree, tmp_path, monkeypatch):
    root = make_tree(TREE)
    deep = tmp_path / ("d" * 60) / ("e" * 60) / "index"
    import tempfile

    runtime = Path(tempfile.mkdtemp(prefix="xdg-", dir="/tmp"))  # short, as /run/user/UID is
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    index = MemoryIndex(root, db=deep, embedder=HashEmbedder())
    index.sync()
    with Server(index) as server:
        assert server.path.parent == runtime / "memsearch" and len(os.fsencode(server.path)) <= MAX_SOCKET_PATH
        assert stat.S_IMODE(os.stat(server.path.parent).st_mode) == 0o700
        assert Client(root, deep).call("search", query="kayaks")["hits"]
        # a client with another XDG_RUNTIME_DIR finds the path the daemon recorded in daemon.json
        (deep / "daemon.json").write_text(json.dumps({"socket": str(server.path)}))
        monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "nowhere"))
        assert Client(root, deep).path == server.path and Client(root, deep).call("status")["socket"] == str(
            server.path
        )
    assert not server.path.exists()
    shutil.rmtree(runtime)


def test_a_folder_open_to_others_is_refused(make_tree, tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    with pytest.raises(PermissionError):
        protocol.secure_dir(shared)
    assert protocol.secure_dir(shared, create=True) == shared and stat.S_IMODE(os.stat(shared).st_mode) == 0o700
    os.symlink(shared, tmp_path / "link")
    with pytest.raises(PermissionError):
        protocol.secure_dir(tmp_path / "link")


def test_no_daemon_or_a_stale_socket_falls_back_at_once_and_silently(make_tree, tmp_path):
    root = make_tree(TREE)
    warnings: list[str] = []
    assert ask(root, "status", {}, warn=warnings.append) is None  # no socket at all
    path = IndexLocation.of(root).socket
    protocol.secure_dir(path.parent, create=True)
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(path))  # what kill -9 leaves: a socket file nobody listens on
    dead.close()
    started = time.monotonic()
    assert ask(root, "status", {}, warn=warnings.append, timeout=5) is None
    assert time.monotonic() - started < 1 and warnings == []


def test_a_daemon_that_does_not_answer_in_time_gives_one_warning(make_tree):
    root = make_tree(TREE)
    path = IndexLocation.of(root).socket
    protocol.secure_dir(path.parent, create=True)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as mute:
        mute.bind(str(path))
        mute.listen(1)  # accepts connections (backlog) and never answers
        warnings: list[str] = []
        started = time.monotonic()
        assert ask(root, "search", {"query": "x"}, warn=warnings.append, timeout=0.3) is None
        assert 0.3 <= time.monotonic() - started < 3
    assert len(warnings) == 1 and "did not answer within 0.3 s" in warnings[0]


def test_a_long_write_waits_while_the_server_answers_beside_it_and_gives_up_when_it_does_not(make_tree, tmp_path):
    """An index or a check has no deadline for its reply (it may work for minutes): it waits as long as the server
    answers a status request on a second connection. A server stopped (kill -STOP) or hung answered nothing, and
    `memsearch index` waited for ever; now the write gives up after two of the client's timeouts."""
    path = tmp_path / "run" / "w.sock"
    protocol.secure_dir(path.parent, create=True)

    def dispatch(method, root, db, params, progress=None):
        if method == "index":
            time.sleep(1.5)  # longer than the client's timeout, without a progress line
            return {"indexed": True}
        return {"status": "working"}

    server = Server(dispatch=dispatch, path=path).start()
    try:
        assert Client(path=path, timeout=0.3).call("index") == {"indexed": True}
    finally:
        server.close()
    done = _asked_of_a_mute_server(tmp_path, lambda path: Client(path=path, timeout=0.3).call("index"), 30)
    assert done and isinstance(done[0], errors.DaemonUnavailable) and "did not answer" in str(done[0])


def test_a_probed_call_waits_for_a_busy_server_and_gives_up_on_a_mute_one(tmp_path):
    """``probe`` (what ``memsearch serve`` forwards with): a server that answers a status request beside the call is
    waited for past the probe, up to the timeout; one that answers neither is given up after the probe and the
    status request, not at the end of the timeout (a stopped service cost every forwarded MCP call 30 s)."""
    path = tmp_path / "run" / "p.sock"
    protocol.secure_dir(path.parent, create=True)

    def dispatch(method, root, db, params, progress=None):
        if method == "search":
            time.sleep(1.0)  # longer than the probe
            return {"hits": []}
        return {"status": "working"}

    server = Server(dispatch=dispatch, path=path).start()
    try:
        assert Client(path=path, timeout=60, probe=0.3).call("search") == {"hits": []}
    finally:
        server.close()
    done = _asked_of_a_mute_server(tmp_path, lambda path: Client(path=path, timeout=600, probe=0.3).call("search"), 60)
    assert done and isinstance(done[0], errors.DaemonUnavailable), done
    assert "nor a status request beside it within 0.3 s (stopped or hung)" in str(done[0])


def _asked_of_a_mute_server(tmp_path, call, wait: float) -> list:
    """What ``call(path)`` raised (or returned) within ``wait`` seconds, asked of a socket that accepts connections
    and never answers; empty if it was still waiting."""
    path = tmp_path / "run" / "mute.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as mute:
        mute.bind(str(path))
        mute.listen(4)  # accepts connections (backlog) and never answers
        done: list = []
        asking = threading.Thread(target=lambda: done.append(_refused(lambda: call(path))), daemon=True)
        asking.start()
        asking.join(wait)
    return done


def _refused(call):
    try:
        return call()
    except errors.DaemonUnavailable as exc:
        return exc


SLOW_SERVER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from memsearch.engine.embed.embedder import HashEmbedder
    from memsearch.engine.index import MemoryIndex
    from memsearch.service.server import Server

    class Slow(HashEmbedder):
        def embed_query(self, text):
            Path(sys.argv[2]).touch()  # the request is in hand
            time.sleep(60)
            return super().embed_query(text)

    index = MemoryIndex(sys.argv[1], embedder=Slow())
    server = Server(index).start()
    print("ready", flush=True)
    time.sleep(120)
""")


@pytest.mark.slow
def test_daemon_killed_mid_request_then_the_client_falls_back(make_tree, tmp_path):
    root = make_tree(TREE)
    MemoryIndex(root, embedder=HashEmbedder()).sync()
    entered = tmp_path / "entered"
    proc = subprocess.Popen(
        [sys.executable, "-c", SLOW_SERVER, str(root), str(entered)], env=ENV, stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout.readline().strip() == "ready"
        warnings: list[str] = []
        answer: list = []
        asking = threading.Thread(
            target=lambda: answer.append(ask(root, "search", {"query": "kayaks"}, warn=warnings.append, timeout=30))
        )
        asking.start()
        deadline = time.monotonic() + 20
        while not entered.exists():
            assert time.monotonic() < deadline, "the server never took the request"
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        asking.join(10)
        proc.wait(10)
        assert answer == [None] and len(warnings) == 1
        assert "mid-request" in warnings[0] or "closed the connection" in warnings[0]
        # the socket file is left behind: the next client falls back at once, without a word
        assert IndexLocation.of(root).socket.exists()
        started = time.monotonic()
        assert ask(root, "search", {"query": "kayaks"}, warn=warnings.append, timeout=30) is None
        assert time.monotonic() - started < 1 and len(warnings) == 1
    finally:
        proc.kill()
        proc.wait(10)


@pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root and setpriv to act as another user"
)
def test_another_uid_cannot_reach_the_socket_and_is_refused_by_peer_credentials(served, tmp_path):
    root, _, server = served
    probe = textwrap.dedent("""
        import json, socket, sys
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(10)
        try:
            s.connect(sys.argv[1])
        except PermissionError:
            print("EACCES"); sys.exit(0)
        try:
            s.sendall(b'{"v": 1, "id": 1, "method": "status"}\\n')
        except BrokenPipeError:
            pass  # refused before the request was sent: the reply is waiting
        print(json.loads(s.makefile("rb").readline())["error"]["type"])
    """)
    as_nobody = [
        "setpriv",
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
        sys.executable,
        "-I",
        "-c",
        probe,
        str(server.path),
    ]
    # 1. the file modes alone keep another user out (the folder is 0700, the socket 0600)
    assert subprocess.run(as_nobody, capture_output=True, text=True, timeout=60).stdout.strip() == "EACCES"
    # 2. even with the modes opened up, the daemon refuses a peer of another uid (SO_PEERCRED)
    for p in [server.path.parent, *server.path.parents]:
        if p == Path("/"):
            break
        os.chmod(p, os.stat(p).st_mode | 0o005)
    os.chmod(server.path, 0o666)
    result = subprocess.run(as_nobody, capture_output=True, text=True, timeout=60)
    assert result.stdout.strip() == "PermissionDenied", result.stderr
    assert Client(root).call("status")["uid"] == os.getuid()  # the owner is still served


@pytest.mark.slow
def test_stop_never_signals_a_stale_pid_that_another_live_process_now_has(make_tree):
    root = make_tree(TREE)
    db = root / ".memsearch"
    db.mkdir()
    (db / "writer.lock").touch()
    bystander = subprocess.Popen(["sleep", "60"])
    try:  # what a kill -9 leaves behind when the pid is later given to an unrelated process
        (db / "writer.json").write_text(
            json.dumps({"pid": bystander.pid, "purpose": "watch", "since": "2026-01-01T00:00:00"})
        )
        assert verified_holder(db) is None
        def run(*a):
            return subprocess.run(
                [sys.executable, "-m", "memsearch", *a], capture_output=True, text=True, timeout=120, env=ENV
            )
        stopped = run("stop", str(root), "--timeout", "2")
        assert stopped.returncode == 0, stopped.stderr
        assert "no memsearch daemon is running" in stopped.stdout and f"process {bystander.pid}" in stopped.stdout
        assert "not signalled" in stopped.stdout
        status = json.loads(run("status", str(root), "--json").stdout)
        assert status["running"] is False and status["pid"] is None and status["serving"] is False
        time.sleep(0.2)
        assert bystander.poll() is None  # still alive: never signalled
    finally:
        bystander.kill()
        bystander.wait()


def test_the_client_path_imports_nothing_heavy():
    code = (
        "import sys, memsearch.service.client, memsearch.service.protocol, memsearch.cli.fast, memsearch.cli.render, "
        "memsearch.harness.api, memsearch.harness.tools; "
        "print([m for m in ('torch', 'lancedb', 'pyarrow', 'sentence_transformers', 'typer', 'watchfiles') if m in sys.modules])"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=ENV)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


@pytest.mark.parametrize("output", ["--json", "text"])
def test_cli_answered_by_the_daemon_imports_neither_typer_nor_the_engine(served, output):
    root, index, _ = served
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "memsearch", "search", str(root), "vendor late",
         *(["--json"] if output == "--json" else [])],
        capture_output=True,
        text=True,
        timeout=120,
        env=ENV,
    )
    assert result.returncode == 0, result.stderr
    hits = [h.to_dict() for h in index.search("vendor late", k=10)]
    if output == "--json":
        assert json.loads(result.stdout)["hits"] == hits
    else:
        assert result.stdout.startswith(f"1. {hits[0]['path']}:{hits[0]['start_line']}-{hits[0]['end_line']}  ")
    imported = _imported(result.stderr)
    assert "memsearch.service.client" in imported
    assert not imported & {
        "typer",
        "torch",
        "lancedb",
        "pyarrow",
        "sentence_transformers",
        "memsearch.engine.index",
        "memsearch.engine.search.args",
        "subprocess",
        # each of these cost a daemon-answered search 5-80 ms (docs/benchmarks.md, "The client path")
        "rich",
        "rich.console",
        "logging",
        "secrets",
        "hashlib",
        "argparse",
        "memsearch.memory.tree",
        "memsearch.memory.rootfs",
        "dataclasses",
        "inspect",
    }


def _listed(importtime: str) -> set[str]:
    return {line.split("|")[-1].strip() for line in importtime.splitlines() if line.startswith("import time:")}


def _imported(importtime: str) -> set[str]:
    """The modules a ``-X importtime`` run's stderr lists, less what the interpreter imports before any code of
    ours (a venv's site hooks: one made with --system-site-packages imports shutil and certifi there)."""
    bare = subprocess.run([sys.executable, "-X", "importtime", "-c", "pass"], capture_output=True, text=True,
                          timeout=60, env=ENV)
    return _listed(importtime) - _listed(bare.stderr)


def test_the_prompt_hook_imports_only_the_client(served):
    root, _, _ = served
    result = subprocess.run([sys.executable, "-X", "importtime", "-m", "memsearch.harness.hooks", "prompt", "--root",
                             str(root)], input=json.dumps({"prompt": "vendor late"}), capture_output=True, text=True,
                            timeout=120, env=ENV)
    assert result.returncode == 0 and "vendor" in result.stdout.lower(), result.stderr
    imported = _imported(result.stderr)
    assert "memsearch.service.client" in imported
    assert not imported & {"typer", "lancedb", "rich", "logging", "secrets", "argparse", "shutil", "dataclasses",
                           "inspect", "memsearch.memory.tree", "memsearch.harness.tools", "memsearch.memory.tokens"}


def test_fast_path_leaves_everything_unusual_to_the_full_cli():
    from memsearch.cli.fast import parse

    command, values = parse(["search", "r", "q", "-k3", "--json", "--mode=keyword"])
    assert command == "search" and values["root"] == "r" and values["query"] == "q"
    assert values["k"] == 3 and values["mode"] == "keyword" and values["as_json"] is True and values["scope"] is None
    assert parse(["search", "r", "--", "-dash"])[1]["query"] == "-dash"
    assert parse(["ls", "r"]) == (
        "ls",
        {"root": "r", "directory": ".", "db": None, "as_json": False, "local": False, "no_daemon": False,
         "asked": False},
    )
    for argv in (
        ["search", "r", "q", "--help"],
        ["search", "r", "q", "--json=1"],
        ["search", "r", "q", "-kx"],
        ["search", "r", "--queries", "f"],
        ["search", "r", "q", "--local"],
        ["search", "r", "q", "--asked"],
        ["search", "r", "q", "-k", "0"],
        ["search", "r", "q", "-k", "x"],
        ["search", "r"],
        ["read", "r"],
        ["search", "r", "q", "extra"],
        ["search", "r", "q", "--scope"],
        ["core", "r", "--jsn"],
        ["index", "r"],
        [],
    ):
        assert parse(argv) is None, argv


def test_sync_requests_are_checked_and_run_by_the_daemons_syncer(make_tree):
    root = make_tree(TREE)
    index = MemoryIndex(root, embedder=HashEmbedder())
    index.sync()
    asked: list[list[str]] = []

    def syncer(paths):
        asked.append(paths)
        return {"files": len(paths), "chunks_embedded": index.sync(only=paths).chunks_embedded}

    plain = Server(index, path=root.parent / "plain.sock").start()
    try:  # a server that does not index refuses sync
        assert (
            raw(plain.path, b'{"v": 1, "id": 1, "method": "sync", "params": {"paths": ["a.md"]}}\n')[0]["error"]["type"]
            == "UnknownMethod"
        )
    finally:
        plain.close()
    with Server(index, sync=syncer) as server:
        bad = [
            b'{"v": 1, "id": 1, "method": "sync", "params": {"paths": "people/bob.md"}}\n',
            b'{"v": 1, "id": 2, "method": "sync", "params": {"paths": ["../outside.md"]}}\n',
            b'{"v": 1, "id": 3, "method": "sync", "params": {"paths": ["/etc/passwd"]}}\n',
            b'{"v": 1, "id": 4, "method": "sync", "params": {"paths": [1]}}\n',
            b'{"v": 1, "id": 5, "method": "sync", "params": {"paths": ["x.md"], "then": "drop"}}\n',
        ]
        assert [r["error"]["type"] for r in raw(server.path, *bad)] == ["BadRequest"] * 5
        assert asked == []
        (root / "people" / "bob.md").write_text("# Bob\n\nBob now likes canoes.\n")
        result = Client(root).call("sync", paths=["people/bob.md"])
        assert asked == [["people/bob.md"]] and result == {"files": 1, "chunks_embedded": 1}
        assert Client(root).call("search", query="canoes", mode="keyword")["hits"][0]["path"] == "people/bob.md"
