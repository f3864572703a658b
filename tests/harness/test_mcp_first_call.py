"""Issue 32 item 3, as a real MCP client sees it: the first ``memory_search`` of a new session, whose ``memsearch
serve ROOT`` auto-starts the per-user service (default settings), answers hits, not an error: keyword hits flagged
``partial`` while the service loads the model (a root already indexed) or embeds the root (a root never indexed);
once the service is warm, full hybrid hits, the same as the in-process server's. Each test has its own
``$XDG_RUNTIME_DIR`` (the ``private_service`` fixture), so the service is its own, stopped at teardown. How long
the first call takes is measured by ``python -m benchmarks.perf.mcp_sessions --first-call``, never asserted here.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import anyio
import pytest

from tests.conftest import EXAMPLES, REPO, stop_service
from tests.harness.test_mcp_thin import BASE, mapped, payload, serve_pids, session

QUERY = {"query": "materialized view that keeps the newest grid value", "k": 3}
TOP = "projects/atlas/schema.md"


def _env(runtime, autostart: bool = True) -> dict:
    return BASE | {"XDG_RUNTIME_DIR": str(runtime), "MEMSEARCH_AUTOSTART": "1" if autostart else "0",
                   "MEMSEARCH_IDLE_EXIT": "300"}


def _copy(tmp_path, name: str):
    root = tmp_path / name
    shutil.copytree(EXAMPLES, root, ignore=shutil.ignore_patterns(".memsearch"))
    return root


def _session(root, env, script):
    return session(root, None, env, script=script, timeout=240)


async def _first_then_warm(client) -> dict:
    """The session's first search at once, then searches until the service has embedded the root (warm)."""
    first = payload(await client.call_tool("memory_search", QUERY))
    seen = {"first": first}
    with anyio.fail_after(180):
        while True:
            warm = payload(await client.call_tool("memory_search", QUERY))
            assert "error" not in warm, warm  # once hits came, never an error again
            if not any(h["partial"] for h in warm["hits"]):
                break
            await anyio.sleep(0.3)
    seen["warm"] = warm
    return seen


def _hits(result: dict) -> list[tuple[str, bool]]:
    assert "error" not in result, result  # the first call of a session is never "the service is starting"
    partial = any(h["partial"] for h in result["hits"])
    assert result.get("note", "").startswith("partial results: the memory is still being indexed") is partial, result
    return [(h["path"], h["partial"]) for h in result["hits"]]


@pytest.mark.slow
def test_the_first_search_of_a_cold_session_answers_hits_on_a_root_never_indexed(tmp_path, private_service):
    root = _copy(tmp_path, "fresh")

    async def script(client):
        seen = await _first_then_warm(client)
        seen["mapped"] = {pid: mapped(pid) for pid in serve_pids(root)}
        return seen

    seen = _session(root, _env(private_service), script)
    first = _hits(seen["first"])
    assert first and first[0][0] == TOP, first  # partial keyword hits from the service's first text rows, or full
    warm = _hits(seen["warm"])
    assert warm[0] == (TOP, False) and not any(partial for _, partial in warm)
    assert seen["mapped"] and all(not libs for libs in seen["mapped"].values()), seen["mapped"]  # a thin client
    stop_service(private_service)
    here = _session(root, _env(private_service, autostart=False),
                    lambda client: client.call_tool("memory_search", QUERY))  # the in-process server's answer
    assert [(h["path"], h["start_line"]) for h in payload(here)["hits"]] == \
        [(h["path"], h["start_line"]) for h in seen["warm"]["hits"]]


@pytest.mark.slow
def test_the_first_search_of_a_cold_session_answers_hits_on_an_indexed_root(tmp_path, private_service):
    root = _copy(tmp_path, "indexed")
    env = _env(private_service)
    done = subprocess.run([sys.executable, "-m", "memsearch", "index", str(root)], env=_env(private_service, False),
                          cwd=str(REPO), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    seen = _session(root, env, _first_then_warm)
    first = _hits(seen["first"])
    assert first and first[0][0] == TOP, first  # by keyword (partial) while the model loads, or full
    assert not any(partial for _, partial in _hits(seen["warm"]))
    warm = _session(root, env, lambda client: client.call_tool("memory_search", QUERY))  # a new session, service warm
    assert _hits(payload(warm)) == _hits(seen["warm"])  # at once the full hybrid hits
    status = subprocess.run([sys.executable, "-m", "memsearch", "status", str(root), "--json"], env=env,
                            cwd=str(REPO), capture_output=True, text=True, timeout=60)
    assert json.loads(status.stdout)["serving"] is True, status.stdout
