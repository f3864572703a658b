"""The shared whole-file writer and JSON record reader (memsearch.memory.files) on real files."""

from __future__ import annotations

import os
import stat
import threading

import pytest

from memsearch.memory.files import atomic_write_bytes, atomic_write_json, atomic_write_text, read_json


def test_writes_new_file_and_replaces_old(tmp_path):
    target = tmp_path / "a.json"
    atomic_write_text(target, "first\n")
    assert target.read_text() == "first\n"
    atomic_write_bytes(target, b"second")
    assert target.read_bytes() == b"second"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json"]  # no temporary left behind


def test_text_is_utf8_and_newlines_as_given(tmp_path):
    target = tmp_path / "note.md"
    atomic_write_text(target, "naïve\r\nline\n")
    assert target.read_bytes() == "naïve\r\nline\n".encode("utf-8")


def test_new_file_follows_umask_and_existing_file_keeps_its_mode(tmp_path):
    fresh = tmp_path / "fresh"
    atomic_write_text(fresh, "x")
    reference = tmp_path / "reference"
    reference.write_text("x")  # open() applies the process umask to 0o666
    assert stat.S_IMODE(fresh.stat().st_mode) == stat.S_IMODE(reference.stat().st_mode)

    private = tmp_path / "private"
    private.write_text("old")
    os.chmod(private, 0o600)
    atomic_write_text(private, "new")
    assert stat.S_IMODE(private.stat().st_mode) == 0o600 and private.read_text() == "new"


def test_failed_replace_leaves_target_and_no_temporary(tmp_path):
    target = tmp_path / "taken"
    target.mkdir()
    (target / "inside").write_text("kept")
    with pytest.raises(OSError):
        atomic_write_text(target, "cannot replace a directory")
    assert (target / "inside").read_text() == "kept"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken"]


def test_missing_directory_raises(tmp_path):
    with pytest.raises(FileNotFoundError):
        atomic_write_text(tmp_path / "absent" / "x", "x")


def test_concurrent_writers_never_leave_a_torn_file(tmp_path):
    target = tmp_path / "state.json"
    payloads = [{"writer": i, "fill": "x" * 20_000} for i in range(4)]
    errors: list[BaseException] = []

    def write(value):
        try:
            for _ in range(25):
                atomic_write_json(target, value)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(p,)) for p in payloads]
    for t in threads:
        t.start()
    while any(t.is_alive() for t in threads):
        value = read_json(target)
        if value is not None:
            assert value in payloads  # whole old or whole new, never a mix
    for t in threads:
        t.join()
    assert not errors
    assert read_json(target) in payloads
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.json"]


def test_read_json_tolerates_missing_damaged_and_non_objects(tmp_path):
    assert read_json(tmp_path / "absent.json") is None
    (tmp_path / "torn.json").write_text('{"pid": 12')
    assert read_json(tmp_path / "torn.json") is None
    (tmp_path / "list.json").write_text("[1, 2]")
    assert read_json(tmp_path / "list.json") is None
    (tmp_path / "binary.json").write_bytes(b"\xff\xfe\x00")
    assert read_json(tmp_path / "binary.json") is None
    assert read_json(tmp_path) is None  # a directory
    atomic_write_json(tmp_path / "ok.json", {"pid": 7}, indent=2)
    assert read_json(tmp_path / "ok.json") == {"pid": 7}
