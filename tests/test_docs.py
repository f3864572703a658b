"""The README documents every command and every option the CLI really has (from --help)."""

from __future__ import annotations

import typer.main

from memsearch.cli import app
from tests.conftest import REPO


def _commands():
    group = typer.main.get_command(app)
    return group.commands


def test_every_command_and_option_is_documented():
    readme = (REPO / "README.md").read_text()
    missing = []
    for name, command in _commands().items():
        if f"memsearch {name}" not in readme:
            missing.append(f"command {name}")
        for param in command.params:
            if getattr(param, "hidden", False):
                continue
            for opt in list(param.opts) + list(getattr(param, "secondary_opts", [])):
                if opt.startswith("--") and opt != "--help" and opt not in readme:
                    missing.append(f"{name} {opt}")
    assert not missing, f"README.md lacks: {', '.join(missing)}"
