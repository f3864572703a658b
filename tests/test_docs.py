"""The README documents every command and every option the CLI really has (from --help)."""

from __future__ import annotations

import typer.main

from memsearch.cli.app import app
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


def test_every_setting_is_documented_in_one_table():
    from memsearch import settings

    readme = (REPO / "README.md").read_text()
    section = readme.split("## Settings", 1)[1].split("\n## ", 1)[0]
    missing = [s.env for s in settings.SETTINGS.values() if f"| `{s.env}` |" not in section]
    assert not missing, f"README.md's settings table lacks: {', '.join(missing)}"


def test_every_module_is_in_the_code_layout_table():
    readme = (REPO / "README.md").read_text()
    section = readme.split("## Code layout", 1)[1].split("\n## ", 1)[0]
    modules = [p.relative_to(REPO / "memsearch").as_posix() for p in (REPO / "memsearch").rglob("*.py")
               if p.name not in ("__init__.py", "__main__.py") and "__pycache__" not in p.parts]
    missing = [m for m in modules if f"`{m}`" not in section]
    assert not missing, f"README.md's Code layout lacks: {', '.join(sorted(missing))}"


def test_every_error_is_documented():
    from memsearch import errors

    readme = (REPO / "README.md").read_text()
    classes = [name for name in errors.__all__ if isinstance(getattr(errors, name), type)]
    missing = [name for name in classes if f"`{name}`" not in readme]
    assert not missing, f"README.md's error list lacks: {', '.join(missing)}"
