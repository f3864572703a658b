"""Settings with bad values at the command line: one line naming the variable and its fix, exit 2, no traceback."""

from __future__ import annotations

import pytest

from memsearch.engine.embed.models import registry, resolve_model
from memsearch.errors import InvalidArgument
from tests.conftest import run_cli


def _one_error_line(err: str) -> str:
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


@pytest.mark.parametrize("registry_file", ["missing.toml", "folder", "garbage.toml", "wrong-shape.toml"])
def test_a_models_registry_that_cannot_be_read_is_named(registry_file, examples_copy, tmp_path, monkeypatch, capsys):
    (tmp_path / "folder").mkdir()
    (tmp_path / "garbage.toml").write_text("garbage [[[\n")
    (tmp_path / "wrong-shape.toml").write_text("models = 3\n")
    monkeypatch.setenv("MEMSEARCH_MODELS", str(tmp_path / registry_file))
    with pytest.raises(InvalidArgument, match="MEMSEARCH_MODELS="):
        registry()
    for argv in (["models"], ["search", str(examples_copy), "atlas", "--local"], ["index", str(examples_copy)]):
        code, _, err = run_cli(argv, capsys)
        assert code == 2 and "MEMSEARCH_MODELS=" in _one_error_line(err), (argv, err)
    assert not (examples_copy / ".memsearch").exists()


def test_a_models_registry_given_is_read(tmp_path, monkeypatch):
    (tmp_path / "models.toml").write_text('default = "mine"\n[models.mine]\ndimension = 8\nhub = "a/b"\n')
    monkeypatch.setenv("MEMSEARCH_MODELS", str(tmp_path / "models.toml"))
    assert resolve_model().name == "mine"


def _cli(argv, **env):
    import os
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "memsearch", *argv], capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, **env))


def test_a_model_cache_that_is_a_file_is_named_not_called_index_damage(examples_copy, tmp_path):
    """The ONNX export goes to MEMSEARCH_CACHE; a file there failed inside the index's error translation and was
    reported as a damaged index to rebuild (which fails the same way)."""
    (tmp_path / "cache").write_text("not a folder\n")
    done = _cli(["index", str(examples_copy)], MEMSEARCH_CACHE=str(tmp_path / "cache"))
    line = _one_error_line(done.stderr)
    assert done.returncode == 2 and "MEMSEARCH_CACHE" in line and "damaged" not in line and "rebuild" not in line, line


@pytest.mark.parametrize("value", ["../x", "/etc", "a/../../b", "."])
def test_a_foreign_folder_outside_the_root_names_the_variable_and_starts_no_service(value, examples_copy, tmp_path):
    """Docs (settings.md): a bad value is one line naming the variable; a command that would start the service
    checks the variables first and starts none. MEMSEARCH_FOREIGN=../x was refused only later, in words that did not
    name it, after the service had been started with it."""
    from memsearch.location import service_start_file

    done = _cli(["search", str(examples_copy), "atlas", "--mode", "keyword"], MEMSEARCH_FOREIGN=value,
                MEMSEARCH_AUTOSTART="1")
    line = _one_error_line(done.stderr)
    assert done.returncode == 2 and f"MEMSEARCH_FOREIGN={value!r} is not valid" in line, line
    assert not service_start_file().exists()  # written before a service is started, under its lock


TINY = {"MEMORY.md": "# Root\n\nCore.\n", "notes/MEMORY.md": "# Notes\n\nDaily notes.\n",
        "notes/2026-01-02.md": "# Jan 2\n\nWe chose ClickHouse.\n"}


@pytest.mark.parametrize("device", ["tpu", "cuda:abc"])
def test_a_device_torch_does_not_know_names_the_variable(device, make_tree):
    """MEMSEARCH_DEVICE=tpu ended in 'cannot load the model at /site-packages/...: Expected one of cpu, cuda, ...',
    after transformers' "Loading weights" bar, never naming the variable."""
    done = _cli(["index", str(make_tree(TINY))], MEMSEARCH_DEVICE=device)
    line = _one_error_line(done.stderr)
    assert done.returncode == 2 and f"MEMSEARCH_DEVICE={device!r} cannot run the model" in line, line
    assert "unset MEMSEARCH_DEVICE" in line


def test_the_service_started_by_hand_refuses_a_bad_variable_before_it_serves(tmp_path):
    """`memsearch service` checked only MEMSEARCH_IDLE_EXIT: with MEMSEARCH_FOREIGN=../x it served, and each root it
    loaded failed there, in its log, out of the user's sight."""
    done = _cli(["service", "--idle-exit", "1"], MEMSEARCH_FOREIGN="../x")
    line = _one_error_line(done.stderr)
    assert done.returncode == 2 and "MEMSEARCH_FOREIGN='../x' is not valid" in line, line
