"""Many memory roots behind one MCP server (memsearch.harness.tenants): tenant names checked on the
resolved path, one shared model, and a real ``serve --roots --http`` where each tenant sees only its memory."""

from __future__ import annotations

import os
import subprocess
import sys
import urllib.error
import urllib.request

import pytest

from memsearch.errors import InvalidArgument, NotAMemoryRoot
from memsearch.harness import api
from memsearch.harness.tenants import Tenants
from tests.conftest import REPO, build
from tests.support.tenants import TenantServer, call, free_port


def tenant_tree(name: str, secret: str) -> dict[str, str]:
    return {"MEMORY.md": f"# {name}\n\nCore memory of {name}.\n", "notes/MEMORY.md": "# Notes\n\nDecisions.\n",
            "notes/decisions.md": f"# Decisions\n\nThe warehouse decision of {name}: {secret}.\n"}


SECRETS = {"ada": "ClickHouse for compression", "bob": "Snowflake for the sharing", "cy-3.x": "DuckDB on one node"}


@pytest.fixture
def parent(tmp_path):
    for name, secret in SECRETS.items():
        build(tmp_path / "tenants" / name, tenant_tree(name, secret))
    (tmp_path / "tenants" / ".hidden").mkdir()
    (tmp_path / "tenants" / "a-file.md").write_text("# not a tenant\n")
    build(tmp_path / "outside", tenant_tree("outside", "never served"))
    os.symlink(tmp_path / "outside", tmp_path / "tenants" / "link")
    return tmp_path / "tenants"


def test_tenant_names_are_plain_child_directories(parent):
    tenants = Tenants(parent)
    assert tenants.names() == sorted(SECRETS)
    assert tenants.root("ada") == (parent / "ada").resolve()
    for bad in ("..", ".", ".hidden", "a/b", "../outside", "", "x" * 200, None, 3, "ada\x00"):
        with pytest.raises(InvalidArgument, match="not a tenant name"):
            tenants.root(bad)
    for missing in ("nobody", "link", "a-file.md"):  # link: a symlink out of the parent, refused on the resolved path
        with pytest.raises(NotAMemoryRoot, match="no tenant"):
            tenants.root(missing)
    assert tenants.db("ada") is None
    assert Tenants(parent, db="s3://bucket/tenants/{tenant}").db("ada") == "s3://bucket/tenants/ada"
    with pytest.raises(InvalidArgument, match="{tenant}"):
        Tenants(parent, db="s3://bucket/one-index")
    with pytest.raises(NotAMemoryRoot, match="not a directory"):
        Tenants(parent / "ada" / "MEMORY.md")


def test_tenants_share_one_model_and_the_lru(parent, monkeypatch, real_embedder):
    monkeypatch.setattr(api, "_OPEN", type(api._OPEN)())
    tenants = Tenants(parent)
    try:
        found = {name: tenants.toolbox(name).call("memory_search", {"query": "warehouse decision", "k": 1}) for name in SECRETS}
        for name, secret in SECRETS.items():
            assert secret in found[name]["hits"][0]["snippet"]
        assert tenants.toolbox("ada") is tenants.toolbox("ada")
        indexes = [tenants.toolbox(name).index for name in SECRETS]
        assert len({id(index.embedder) for index in indexes}) == 1  # one model for every tenant
        assert sorted(r["root"] for r in api.open_indexes()) == sorted(str(parent / n) for n in SECRETS)
    finally:
        api.close_indexes()


@pytest.mark.slow
def test_serve_roots_needs_http_and_one_kind_of_root(parent):
    for args, message in ((["--roots", str(parent)], "add --http"), ([str(parent / "ada"), "--roots", str(parent), "--http"], "either"),
                          (["--roots", str(parent), "--http", "--db", "/tmp/one-index"], "{tenant}")):
        result = subprocess.run([sys.executable, "-m", "memsearch", "serve", *args], capture_output=True, text=True,
                                cwd=REPO, timeout=120, env=dict(os.environ, MEMSEARCH_DB=""))
        assert result.returncode == 2 and message in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("template", ["s3://memory/a//{tenant}", "s3://memory/team#{tenant}", "ftp://memory/{tenant}"])
def test_a_db_template_no_tenant_s_index_can_have_is_refused_at_start(parent, template):
    """Before: the server started, and every call of every tenant answered the model "index address ... has an empty
    part" (a fix only the operator can make, and never said to the operator); now ``serve`` stops at once, naming
    --db. No store is asked: the address is refused as written."""
    result = subprocess.run([sys.executable, "-m", "memsearch", "serve", "--roots", str(parent), "--http", "--no-warm",
                             "--port", str(free_port()), "--db", template], capture_output=True, text=True, cwd=REPO, timeout=120,
                            env=dict(os.environ, MEMSEARCH_DB="", MEMSEARCH_AUTOSTART="0"))
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert result.stderr.startswith(f"error: --db '{template}': ") and result.stderr.count("\n") == 1, result.stderr


def status_of(url: str) -> int:
    try:
        with urllib.request.urlopen(
            urllib.request.Request(url, data=b"{}", headers={"content-type": "application/json"}), timeout=10
        ) as answer:
            return answer.status
    except urllib.error.HTTPError as exc:
        return exc.code


@pytest.mark.slow
def test_each_tenant_sees_only_its_own_memory_through_one_server(parent):
    with TenantServer(parent, env=dict(os.environ, MEMSEARCH_DB="")) as server:
        for name, secret in SECRETS.items():
            result = call(server.url(name), "memory_search", {"query": "which warehouse did we choose", "k": 5})
            snippets = " ".join(h["snippet"] for h in result["hits"])
            assert secret in snippets and all(s not in snippets for s in SECRETS.values() if s != secret)
            core = call(server.url(name), "memory_core", {})
            assert f"Core memory of {name}." in core["rendered"]
        escape = call(server.url("ada"), "memory_read", {"path": "../bob/notes/decisions.md"})
        assert escape["error"]["type"] == "PathOutsideRoot"
        base = f"http://127.0.0.1:{server.port}"
        for path in (
            "/tenants/nobody/mcp",
            "/tenants/.hidden/mcp",
            "/tenants/link/mcp",
            "/tenants/%2e%2e/mcp",
            "/mcp",
            "/tenants/ada/x",
        ):
            assert status_of(base + path) == 404, path
        assert (parent / "ada" / ".memsearch").is_dir() and not (parent / ".memsearch").exists()
