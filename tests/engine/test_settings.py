"""Settings: argument, then environment, then default; bad values are typed errors naming the variable."""

from __future__ import annotations

import pytest

from memsearch import settings
from memsearch.errors import InvalidArgument


def test_argument_then_environment_then_default():
    env = {"MEMSEARCH_BATCH_SIZE": "64"}
    assert settings.get("batch_size", environ={}) == 32
    assert settings.get("batch_size", environ=env) == 64
    assert settings.get("batch_size", 8, environ=env) == 8


def test_empty_means_default_everywhere():
    for name, setting in settings.SETTINGS.items():
        assert settings.get(name, environ={setting.env: ""}) == setting.default
        assert settings.get(name, environ={setting.env: "   "}) == setting.default


@pytest.mark.parametrize("name,raw", [("batch_size", "many"), ("batch_size", "0"), ("batch_chunks", "-1"),
                                      ("debounce_ms", "soon"), ("debounce_ms", "60001"), ("fusion", "mean"),
                                      ("log_level", "loud"), ("bench_embedder", "fake")])
def test_bad_environment_value_names_the_variable_and_what_it_accepts(name, raw):
    env = settings.env_name(name)
    with pytest.raises(InvalidArgument) as info:
        settings.get(name, environ={env: raw})
    message = str(info.value)
    assert env in message and raw in message and settings.SETTINGS[name].accepts in message


def test_bad_argument_names_the_argument():
    with pytest.raises(InvalidArgument, match=r"--debounce 0 is not valid"):
        settings.get("debounce_ms", 0, label="--debounce")
    with pytest.raises(InvalidArgument, match="unknown setting"):
        settings.get("no_such_setting")


def test_foreign_list_and_none():
    assert settings.get("foreign", environ={"MEMSEARCH_FOREIGN": "vendor, skills"}) == ("vendor", "skills")
    assert settings.get("foreign", environ={"MEMSEARCH_FOREIGN": "none"}) == ()


@pytest.mark.slow
def test_bad_batch_size_is_one_line_from_the_cli(tmp_path, monkeypatch):
    import os
    import subprocess
    import sys

    (tmp_path / "MEMORY.md").write_text("# m\n")
    env = dict(os.environ, MEMSEARCH_BATCH_CHUNKS="lots")
    done = subprocess.run([sys.executable, "-m", "memsearch", "index", str(tmp_path), "--db", str(tmp_path / "db")],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert "MEMSEARCH_BATCH_CHUNKS='lots' is not valid" in done.stderr
