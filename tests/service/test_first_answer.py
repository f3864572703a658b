"""Issue 32 item 3: the service answers a search from the moment a root's index is open, by keyword while the
model loads (hits flagged ``partial``), and waits a bounded time for a root's first rows. The model here is a
hash embedder held at a gate (its load); the end-to-end runs with the real model and the real MCP client are in
tests/harness/test_mcp_first_call.py."""

from __future__ import annotations

import os
import threading
import time

import pytest

from memsearch.engine.embed.embedder import HashEmbedder
from memsearch.engine.index import MemoryIndex
from memsearch.errors import DaemonUnavailable, IndexBuilding
from memsearch.location import IndexLocation, service_socket
from memsearch.service import route
from memsearch.service.client import Client
from memsearch.service.roots import Roots
from memsearch.service.server import Server
from tests.reliability.test_text_first import FILES, tree

QUERY = {"query": "otter tag7", "k": 3}


class Loading(HashEmbedder):
    """A hash embedder whose first query encode (the service's warm-up: the model's load) waits for ``gate``;
    ``used`` counts the encodes that happened before it opened (a search that needed the model)."""

    def __init__(self, gate: threading.Event):
        super().__init__(dimension=32, name="hash-32")
        self.gate, self.used = gate, 0

    def embed_query(self, text):
        if not self.gate.is_set():
            self.used += text != "warm up"
            assert self.gate.wait(120), "the test never let the model load"
        return super().embed_query(text)


@pytest.fixture
def service(monkeypatch):
    """A per-user service's Roots and socket server whose roots open with a :class:`Loading` embedder."""
    gate = threading.Event()
    model = Loading(gate)
    monkeypatch.setattr(MemoryIndex, "open_repairing",
                        classmethod(lambda cls, root, **options: cls(root, db=options.get("db"), embedder=model)))
    roots = Roots(socket=str(service_socket()), lock_wait=0.0)
    server = Server(dispatch=roots.dispatch, path=service_socket()).start()
    try:
        yield roots, gate, model
    finally:
        gate.set()
        server.close()
        roots.close()


def _ready(roots: Roots, where: IndexLocation) -> None:
    deadline = time.monotonic() + 60
    while roots.loaded(where) is None:
        assert time.monotonic() < deadline, "the root never became ready"
        time.sleep(0.02)


def test_an_indexed_root_answers_keyword_hits_flagged_partial_while_its_model_loads(tmp_path, service):
    roots, gate, model = service
    root = tree(tmp_path)
    MemoryIndex(root, embedder=HashEmbedder(dimension=32, name="hash-32")).sync()  # indexed before the service
    where = IndexLocation.of(root)
    client = Client(root)
    hits = client.call("search", **QUERY)["hits"]  # loads the root: answered once its index is open
    assert hits[0]["path"] == "notes/n07.md" and all(h["partial"] for h in hits)
    tool = client.call("tool", name="memory_search", arguments=QUERY)  # the thin MCP client's call
    assert tool["hits"][0]["path"] == "notes/n07.md" and all(h["partial"] for h in tool["hits"])
    asked = client.call("search", query="otter tag7", k=3, mode="keyword")["hits"]  # what was asked: not partial
    assert asked[0]["path"] == "notes/n07.md" and not any(h["partial"] for h in asked)
    listing = client.call("tool", name="memory_list", arguments={"path": "notes"})  # other reads answer too
    assert "notes/MEMORY.md" == listing["memory_md"]
    with pytest.raises(DaemonUnavailable) as refused:  # a write waits for the writer, then is told to come back
        client.call("tool", name="memory", arguments={"command": "view", "path": "/memories"})
    assert refused.value.kind == "Loading" and refused.value.quiet
    assert model.used == 0 and roots.loaded(where) is None  # no search needed the model, which is still loading
    gate.set()
    _ready(roots, where)
    hits = client.call("search", **QUERY)["hits"]
    assert hits[0]["path"] == "notes/n07.md" and not any(h["partial"] for h in hits)


def test_a_root_never_indexed_is_searchable_from_its_first_text_rows(tmp_path, service, monkeypatch):
    roots, gate, model = service
    root = tree(tmp_path)
    where = IndexLocation.of(root)
    client = Client(root)
    started = time.monotonic()
    with pytest.raises(IndexBuilding, match="still indexing"):  # no row can exist before the model loads here
        client.call("search", **QUERY)
    assert time.monotonic() - started >= 1.0  # the service waited for the first rows before saying so
    threading.Timer(0.5, gate.set).start()  # the model loads; the first sync writes the text rows first
    hits = route.search(where, QUERY, using=None, start=False)  # a client asks again until they answer
    assert hits and hits[0]["path"] == "notes/n07.md"
    _ready(roots, where)
    deadline = time.monotonic() + 60
    while any(h["partial"] for h in client.call("search", **QUERY)["hits"]):  # then the first pass embeds them
        assert time.monotonic() < deadline
        time.sleep(0.1)


def test_a_note_written_while_no_service_ran_is_found_by_the_first_search_of_its_root(tmp_path, service):
    """The root was indexed before; a note was written while nothing watched it. The service (its model loaded)
    loads the root on that search, whose answer waits for the catch-up: the note is found, through the search and
    through the tool (before, both answered from the index as it was: "no hits: try other words")."""
    roots, gate, _ = service
    gate.set()
    for name in ("search", "tool"):
        root = tree(tmp_path / name)
        MemoryIndex(root, embedder=HashEmbedder(dimension=32, name="hash-32")).sync()
        (root / "notes" / "fresh.md").write_text("# Fresh\n\nThe quokkafrizzle came in after the last index.\n")
        client = Client(root)
        if name == "search":
            hits = client.call("search", query="quokkafrizzle", k=3, mode="keyword")["hits"]
        else:
            hits = client.call("tool", name="memory_search", arguments={"query": "quokkafrizzle", "mode": "keyword"})[
                "hits"]
        assert [h["path"] for h in hits] == ["notes/fresh.md"], (name, hits)


def test_an_empty_answer_while_a_root_catches_up_says_no_hits_yet(tmp_path, service):
    """While the model loads no catch-up can end: the search is answered at once by keyword, and an empty answer
    says how far the index is (the tool's note: "no hits yet"), not "try other words"."""
    roots, gate, model = service
    root = tree(tmp_path)
    MemoryIndex(root, embedder=HashEmbedder(dimension=32, name="hash-32")).sync()
    (root / "notes" / "fresh.md").write_text("# Fresh\n\nThe quokkafrizzle came in after the last index.\n")
    client = Client(root)
    answer = client.call("search", query="quokkafrizzle", k=3, mode="keyword")
    files = FILES + 3  # the notes, the big one, notes/MEMORY.md and the new one (the root's MEMORY.md is core)
    assert answer["hits"] == [] and answer["indexing"] == {"files": files, "embedded": files - 1}, answer
    tool = client.call("tool", name="memory_search", arguments={"query": "quokkafrizzle", "mode": "keyword"})
    assert tool["hits"] == [] and tool["note"].startswith(f"no hits yet: the memory is still being indexed ({files - 1}")
    assert model.used == 0  # neither needed the model
    gate.set()
    where = IndexLocation.of(root)
    _ready(roots, where)
    deadline = time.monotonic() + 60
    while not (hits := client.call("search", query="quokkafrizzle", k=3, mode="keyword")["hits"]):
        assert time.monotonic() < deadline
        time.sleep(0.1)
    assert hits[0]["path"] == "notes/fresh.md"


def test_status_of_a_root_the_service_is_loading_says_so(tmp_path, service):
    """While the service loads a root (the model first, then the writer lock), `memsearch status ROOT` said "no
    memsearch process"; it names the service and what the root waits for."""
    from memsearch.service.process import daemon_status

    roots, gate, _ = service
    root = tree(tmp_path)
    MemoryIndex(root, embedder=HashEmbedder(dimension=32, name="hash-32")).sync()
    Client(root).call("search", **QUERY)  # loads the root; the model is held at the gate
    info = daemon_status(root)
    assert not info["running"] and not info["serving"] and info["loading"]["pid"] == os.getpid(), info
    assert info["loading"]["waiting_for"] == "the model hash-32 to load (searches answered by keyword)", info
    gate.set()
    _ready(roots, IndexLocation.of(root))
    deadline = time.monotonic() + 60
    while not (info := daemon_status(root))["running"]:  # the lock taken, then its state file says it serves
        assert time.monotonic() < deadline, info
        time.sleep(0.05)
    assert info["loading"] is None
