"""The auto-started daemon (issue 22 item 1), with the real model and real processes: racing
clients start one daemon, the call after it listens goes through it, and nobody's asking makes it exit."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memsearch.location import IndexLocation, service_log_file
from memsearch.service.process import daemon_status, service_status, stop, verified_holder
from tests.conftest import REPO

pytestmark = pytest.mark.slow

RACE = """
import sys
from memsearch.location import IndexLocation, service_log_file
from memsearch.service.autostart import ensure
where = IndexLocation.of(sys.argv[1])
sys.stdin.readline()  # all racers start together
print(ensure(where, enabled=True, idle_exit=int(sys.argv[2])), flush=True)
"""


def _env(**extra) -> dict:
    return dict(os.environ, PYTHONPATH=str(REPO), HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false", **extra)


def _until(predicate, timeout: float = 240.0, step: float = 0.2):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(step)
    raise AssertionError(f"not within {timeout:.0f} s")


def _serving(root) -> dict | None:
    info = daemon_status(root)
    return info if info["serving"] else None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_racing_clients_start_one_daemon_which_exits_when_nobody_asks(examples_copy):
    root = examples_copy
    racers = [subprocess.Popen([sys.executable, "-c", RACE, str(root), "8"], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True, env=_env()) for _ in range(4)]
    try:
        for proc in racers:
            proc.stdin.write("go\n")
            proc.stdin.flush()
        answers = [proc.communicate(timeout=120)[0].strip() for proc in racers]
        started = [int(a) for a in answers if a != "None"]
        assert len(started) == 1, answers  # exactly one client started a daemon
        pid = started[0]
        info = _until(lambda: _serving(root))
        assert info["pid"] == pid and info["running"]
        # a client arriving now finds it (no second daemon), and the holder is the one started
        assert subprocess.run([sys.executable, "-c", RACE, str(root), "8"], input="go\n", capture_output=True,
                              text=True, env=_env(), timeout=120).stdout.strip() == "None"
        assert verified_holder(IndexLocation.of(root))["pid"] == pid
        # idle exit: 8 s without a request, then it stops cleanly and lets go of the index
        _until(lambda: not _alive(pid), timeout=180)
        assert verified_holder(IndexLocation.of(root)) is None
        assert json.loads(IndexLocation.of(root).state_file.read_text())["state"] == "stopped"
        assert "idle exit" in service_log_file().read_text()
    finally:
        stop(root, timeout=60)


def test_the_first_cli_call_answers_in_process_and_the_next_goes_through_the_daemon(examples_copy):
    root = examples_copy
    env = _env(MEMSEARCH_AUTOSTART="1", MEMSEARCH_IDLE_EXIT="120")
    try:
        first = subprocess.run([sys.executable, "-m", "memsearch", "search", str(root), "vendor contract", "--json"],
                               capture_output=True, text=True, env=env, timeout=300)
        assert first.returncode == 0, first.stderr
        local_hits = json.loads(first.stdout)["hits"]
        _until(lambda: _serving(root))
        second = subprocess.run([sys.executable, "-X", "importtime", "-m", "memsearch", "search", str(root),
                                 "vendor contract", "--json"], capture_output=True, text=True, env=env, timeout=300)
        assert second.returncode == 0, second.stderr
        imported = {line.split("|")[-1].strip() for line in second.stderr.splitlines()
                    if line.startswith("import time:")}
        assert "memsearch.service.client" in imported  # the daemon answered: the engine never loaded here
        assert "memsearch.engine.index" not in imported
        assert json.loads(second.stdout)["hits"] == local_hits
        # opting out: --no-daemon and MEMSEARCH_AUTOSTART=0 start nothing (once the service, its only root
        # unloaded, has exited)
        assert stop(root, timeout=60).service
        _until(lambda: service_status() is None, timeout=60)
        for extra, flag in (({}, ["--no-daemon"]), ({"MEMSEARCH_AUTOSTART": "0"}, [])):
            done = subprocess.run([sys.executable, "-m", "memsearch", "search", str(root), "vendor contract", *flag],
                                  capture_output=True, text=True, env=dict(env, **extra), timeout=300)
            assert done.returncode == 0, done.stderr
            time.sleep(2)
            assert not daemon_status(root)["running"] and service_status() is None
    finally:
        stop(root, timeout=60)


def _as_nobody() -> None:
    import pwd

    user = pwd.getpwnam("nobody")
    os.setgroups([])
    os.setgid(user.pw_gid)
    os.setuid(user.pw_uid)


def _without_capabilities() -> None:
    """Root without its capabilities (no CAP_DAC_OVERRIDE): file modes bind it as they bind anyone."""
    import ctypes

    prctl = ctypes.CDLL(None, use_errno=True).prctl
    for capability in range(64):  # PR_CAPBSET_DROP: execve then gives uid 0 an empty permitted set
        prctl(24, capability, 0, 0, 0)


def _unprivileged(probe_dir: str):
    """How to run a child that cannot write ``probe_dir`` (mode 0555): ``(preexec_fn, who)``. None when this
    process is not root (it is unprivileged already); ``nobody`` when that user can run this Python and import
    memsearch; else root without capabilities (the interpreter may live where nobody can reach, e.g. /root)."""
    if os.geteuid() != 0:
        return None, "this user"
    probe = f"import os, sys, memsearch.cli; sys.exit(1 if os.access({probe_dir!r}, os.W_OK) else 0)"
    for preexec, who in ((_as_nobody, "nobody"), (_without_capabilities, "root without capabilities")):
        try:
            done = subprocess.run([sys.executable, "-c", probe], preexec_fn=preexec, env=_env(), cwd="/",
                                  capture_output=True, timeout=60)
        except (OSError, subprocess.SubprocessError):
            continue
        if done.returncode == 0:
            return preexec, who
    pytest.skip("no unprivileged user can run this Python here, and capabilities cannot be dropped")


def _chmod_tree(path, writable: bool) -> None:
    for folder, dirs, files in os.walk(path):
        os.chmod(folder, 0o755 if writable else 0o555)
        for name in files:
            os.chmod(os.path.join(folder, name), 0o644 if writable else 0o444)


def test_no_autostart_for_a_read_only_root(examples_copy):
    """A user who can read a tree but write neither it nor its index location: no daemon starts, and every call
    answers in-process or fails in one clear line (search with no index to read: it names --db)."""
    import shutil
    import tempfile

    base = tempfile.mkdtemp(prefix="memsearch-readonly-")
    os.chmod(base, 0o755)  # others may enter (nobody); nothing in it is theirs to write
    root = os.path.join(base, "memory")
    shutil.copytree(examples_copy, root)
    where = IndexLocation.of(root)
    try:
        _chmod_tree(root, writable=False)
        preexec, who = _unprivileged(root)

        def cli(*argv):
            return subprocess.run([sys.executable, "-m", "memsearch", argv[0], root, *argv[1:]], capture_output=True,
                                  text=True, env=_env(MEMSEARCH_AUTOSTART="1"), preexec_fn=preexec, cwd="/",
                                  timeout=240)

        listed = cli("ls")
        assert listed.returncode == 0 and "projects/" in listed.stdout, (who, listed.stderr)
        searched = cli("search", "deploy checklist")
        assert searched.returncode == 2, (who, searched.stdout, searched.stderr)
        assert searched.stderr.startswith("error: cannot write the index") and "--db" in searched.stderr
        assert len(searched.stderr.strip().splitlines()) == 1 and "Traceback" not in searched.stderr
        assert not where.state.exists()  # nothing written, nothing started

        _chmod_tree(root, writable=True)  # its owner indexes it; the reader still cannot write the index
        built = subprocess.run([sys.executable, "-m", "memsearch", "index", root], capture_output=True, text=True,
                               env=_env(MEMSEARCH_AUTOSTART="0"), timeout=600)
        assert built.returncode == 0, built.stderr
        _chmod_tree(root, writable=False)
        before = sorted(os.listdir(where.state))
        searched = cli("search", "deploy checklist", "--json")
        assert searched.returncode == 0, (who, searched.stderr)
        assert json.loads(searched.stdout)["hits"][0]["path"] == "projects/atlas.md"
        assert "not synced" in searched.stderr and "Traceback" not in searched.stderr
        assert sorted(os.listdir(where.state)) == before  # no daemon.json, pid, log, start lock or socket
        assert not daemon_status(root)["running"]
    finally:
        _chmod_tree(base, writable=True)
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.slow
def test_no_autostart_for_a_remote_index_or_when_turned_off(examples_copy, tmp_path, monkeypatch):
    from memsearch.service.autostart import ensure

    monkeypatch.setenv("MEMSEARCH_STATE_DIR", str(tmp_path / "state"))
    remote = IndexLocation.of(examples_copy, "s3://bucket/p")
    assert ensure(remote, enabled=True) is None and not remote.state.exists()
    local = IndexLocation.of(examples_copy)
    assert ensure(local, enabled=False) is None and not local.state.exists()


# --- the first call on a tree never indexed ---------------------------------------------------------

COLD_CHUNKS = 1200  # about 280 files: well over MEMSEARCH_TEXT_FIRST_FILES, and a minute of embedding or so


def _cli_search(root, query: str, env: dict, *extra: str) -> list[dict]:
    done = subprocess.run([sys.executable, "-m", "memsearch", "search", str(root), query, "--json", "-k", "5", *extra],
                          capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["hits"]


def _ranked(hits: list[dict]) -> list[tuple]:
    return [(h["path"], h["start_line"], h["end_line"], round(h["score"], 4)) for h in hits]


def test_the_first_call_on_a_cold_tree_answers_partial_hits_and_the_daemon_completes_the_index(tmp_path):
    from benchmarks.synthetic import generate_chunks

    root = tmp_path / "memory"
    planted = generate_chunks(root, COLD_CHUNKS)
    env = _env(MEMSEARCH_AUTOSTART="1", MEMSEARCH_IDLE_EXIT="600")
    try:
        first = _cli_search(root, planted[0].query, env)
        # answered from the text rows, before the embedding was done: keyword hits, each flagged partial
        assert first and all(h["partial"] for h in first)
        # the auto-started daemon owns the index and embeds the rest
        info = _until(lambda: _serving(root), timeout=300)
        assert verified_holder(IndexLocation.of(root))["pid"] == info["pid"]
        done = _until(lambda: (lambda s: s["partial_files"] == 0 and s["last_sync"] and s)(daemon_status(root)),
                      timeout=900, step=1.0)
        # the files the first call wrote text only were added by the embedding pass, not changed: the user changed none
        assert done["last_sync"]["files_added"] > 0 and done["last_sync"]["files_changed"] == 0, done["last_sync"]
        later = _cli_search(root, planted[0].query, env)
        assert not any(h["partial"] for h in later)
        # a one-pass build in a process that reaches no service (the running one takes a search of another
        # index of the root over and answers it partial while it embeds: right, but not a one-pass build)
        alone = tmp_path / "alone-runtime"
        alone.mkdir(mode=0o700)
        fresh = _cli_search(root, planted[0].query, dict(env, MEMSEARCH_TEXT_FIRST_FILES="0", MEMSEARCH_AUTOSTART="0",
                                                         XDG_RUNTIME_DIR=str(alone)), "--db", str(tmp_path / "fresh"))
        assert _ranked(later) == _ranked(fresh)  # the daemon's index searches as a fresh one-pass build's
    finally:
        stop(root, timeout=60)


def test_a_daemon_on_a_tree_never_indexed_answers_index_building_or_partial_hits_never_damage(tmp_path):
    from benchmarks.synthetic import generate_chunks
    from memsearch.errors import IndexBuilding
    from memsearch.service.client import Client, DaemonUnavailable

    root = tmp_path / "memory"
    planted = generate_chunks(root, COLD_CHUNKS)
    watch = subprocess.Popen([sys.executable, "-m", "memsearch", "watch", str(root)], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, env=_env())
    seen: list[str] = []
    try:
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            try:
                hits = Client(root).call("search", query=planted[0].query, k=3)["hits"]
            except DaemonUnavailable:
                seen.append("not listening")
            except IndexBuilding as exc:
                assert exc.hint.action == "wait"
                seen.append("building")
            else:  # any other error (IndexDamaged before) fails the test here
                seen.append("partial" if hits and all(h["partial"] for h in hits) else "hits" if hits else "empty")
                if seen[-1] == "partial":
                    break
            time.sleep(0.05)
        assert seen[-1] == "partial", seen[-5:]
        assert "empty" not in seen and "hits" not in seen  # never an empty answer, nor whole hits before the embedding
    finally:
        watch.terminate()
        watch.wait(60)


def test_a_service_stopped_on_purpose_is_started_again_at_once_a_failed_one_is_not(examples_copy):
    from memsearch.service.autostart import ensure
    from memsearch.service.process import stop_service

    root, where = examples_copy, IndexLocation.of(examples_copy)
    first = ensure(where, enabled=True, idle_exit=120)
    try:
        assert first is not None
        _until(lambda: _serving(root))
        assert stop_service(timeout=60)["pid"] == first  # `memsearch stop --all`
        # within autostart's RETRY_AFTER_S of that start, the next client starts a service again
        second = ensure(where, enabled=True, idle_exit=120)
        assert second is not None and second != first
        _until(lambda: _serving(root))
        assert stop_service(timeout=60)["pid"] == second
        # a service whose root cannot load (no such model) exits at once: that one is not retried yet
        third = ensure(where, model="no-such-model", enabled=True, idle_exit=120)
        assert third is not None
        _until(lambda: not _alive(third), timeout=120)
        assert ensure(where, enabled=True, idle_exit=120) is None
    finally:
        stop_service(timeout=60)


def test_a_runtime_dir_too_long_for_a_socket_still_gets_the_service(examples_copy, tmp_path):
    """XDG_RUNTIME_DIR too long for ``sun_path``: the service listens in the temp dir instead of failing to
    start on every call (which left each search in-process, loading the model, with no word why)."""
    import tempfile

    long_runtime = tmp_path / ("r" * 120)
    long_runtime.mkdir(mode=0o700)
    short = Path(tempfile.mkdtemp(prefix="ms-t-"))  # a private temp dir, so the service is this test's own
    env = _env(XDG_RUNTIME_DIR=str(long_runtime), TMPDIR=str(short))

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "memsearch", *args], capture_output=True, text=True,
                              env=env, timeout=300)

    try:
        assert cli("search", str(examples_copy), "warehouse", "-k", "1").returncode == 0
        status = _until(lambda: (s := cli("status", "--json")) and json.loads(s.stdout).get("running") and s)
        info = json.loads(status.stdout)
        assert info["socket"] == str(short / f"memsearch-{os.getuid()}" / "service.sock")
        assert len(os.fsencode(info["socket"])) <= 100
    finally:
        cli("stop", "--all")
        import shutil

        shutil.rmtree(short, ignore_errors=True)


def test_ctrl_c_while_the_service_rebuilds_says_it_goes_on_and_it_does(tmp_path):
    """Ctrl-C in ``memsearch index ROOT --rebuild`` that the running service carries out: the command says in one
    line that the service goes on and how to follow it (exit 130, as any Ctrl-C), and the service finishes the
    rebuild: it exited 130 with nothing said before, while the service went on."""
    from benchmarks.synthetic import generate_chunks

    root = tmp_path / "memory"
    planted = generate_chunks(root, COLD_CHUNKS)
    env = _env(MEMSEARCH_AUTOSTART="1", MEMSEARCH_IDLE_EXIT="600")
    try:
        _cli_search(root, planted[0].query, env)  # starts the service, which builds the index
        _until(lambda: (lambda s: s["partial_files"] == 0 and s["last_sync"] and s)(daemon_status(root)),
               timeout=900, step=1.0)
        pid = _serving(root)["pid"]
        rebuild = subprocess.Popen([sys.executable, "-m", "memsearch", "index", str(root), "--rebuild"],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        # interrupted once the service holds the rebuild: the index's files are being indexed again
        _until(lambda: daemon_status(root)["partial_files"] > 0 or rebuild.poll() is not None, timeout=120, step=0.1)
        assert rebuild.poll() is None, rebuild.communicate()
        rebuild.send_signal(signal.SIGINT)
        out, err = rebuild.communicate(timeout=60)
        assert rebuild.returncode == 130, (out, err)
        assert "Traceback" not in err
        line = err.strip().splitlines()[-1]
        assert line == f"interrupted: the memsearch service goes on with the rebuild; follow it with `memsearch " \
                       f"status {shlex.quote(str(root))}`", err
        # and it does: the same service completes the rebuilt index, which answers whole again
        done = _until(lambda: (lambda s: s["partial_files"] == 0 and s["last_sync"] and s)(daemon_status(root)),
                      timeout=900, step=1.0)
        assert done["pid"] == pid
        assert not any(h["partial"] for h in _cli_search(root, planted[0].query, env))
    finally:
        stop(root, timeout=60)


def test_an_index_and_a_repair_the_service_carries_out_are_in_its_log(make_tree):
    """``memsearch index ROOT --rebuild`` (and ``check --repair``) done by the service for a client wrote nothing to
    the service's log: now one line when the job starts (root, what) and one when it ends (files, chunks, seconds)."""
    root = make_tree({"MEMORY.md": "# Memory\n\nCore.\n", "notes/MEMORY.md": "# Notes\n\nDaily notes.\n",
                      "notes/a.md": "# Atlas\n\nWe chose ClickHouse for the warehouse.\n"}).resolve()
    env = _env(MEMSEARCH_AUTOSTART="1", MEMSEARCH_IDLE_EXIT="600")

    def cli(*args: str) -> subprocess.CompletedProcess:
        done = subprocess.run([sys.executable, "-m", "memsearch", *args], capture_output=True, text=True, env=env,
                              timeout=600)
        assert done.returncode == 0, (done.stdout, done.stderr)
        return done

    try:
        _cli_search(root, "clickhouse", env)  # starts the service
        _until(lambda: (lambda s: s["serving"] and s["last_sync"] and s)(daemon_status(root)), timeout=300)
        cli("index", str(root), "--rebuild")
        cli("check", str(root), "--repair")
        log = service_log_file().read_text()
        assert f"{root}: rebuild started" in log, log
        done = [line for line in log.splitlines() if f"{root}: rebuild done in " in line]
        assert len(done) == 1 and "INFO" in done[0] and "2 files added" in done[0] and " chunks embedded" in done[0]
        assert f"{root}: repair started" in log and f"{root}: repair done in " in log, log
    finally:
        stop(root, timeout=60)
