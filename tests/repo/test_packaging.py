"""Packaging: every distribution the code imports is declared, and the wheel's data files are listed.

The end-to-end check (build the wheel, install it into a fresh virtualenv, run the CLI on a copy of
examples/memory) is ``make dist-check``, run by ``.ci/run``: it needs pip and minutes, not a unit test.
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions

import pytest

from tests.conftest import REPO

PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _declared(*extras: str) -> set[str]:
    project = PYPROJECT["project"]
    reqs = list(project["dependencies"]) + [r for e in extras for r in project["optional-dependencies"][e]]
    return {_normal(re.match(r"[A-Za-z0-9._-]+", r).group()) for r in reqs}


def _imports(*folders: str, skip: tuple[str, ...] = ()) -> dict[str, set[str]]:
    """Top-level third-party import name -> the files importing it (absolute imports, at any depth)."""
    found: dict[str, set[str]] = {}
    for folder in folders:
        for path in sorted((REPO / folder).rglob("*.py")):
            rel = str(path.relative_to(REPO))
            if rel.startswith(skip):
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                names = []
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                    names = [node.module]
                for name in names:
                    top = name.split(".")[0]
                    local = (path.parent / f"{top}.py").is_file() or (path.parent / top).is_dir()  # e.g. conftest
                    if not local and top not in sys.stdlib_module_names and top not in ("memsearch", "benchmarks", "tests", "__future__"):
                        found.setdefault(top, set()).add(rel)
    return found


def _undeclared(imports: dict[str, set[str]], declared: set[str]) -> list[str]:
    owners = packages_distributions()
    missing = []
    for top, files in sorted(imports.items()):
        dists = {_normal(d) for d in owners.get(top, [])}
        if not dists & declared:
            missing.append(f"{top} ({', '.join(sorted(dists)) or 'not installed'}; imported by {', '.join(sorted(files))})")
    return missing


@pytest.mark.slow
def test_every_import_of_the_package_is_a_declared_dependency():
    # runtime dependencies, or a feature extra such as `ray` (imported lazily, its absence a typed error)
    features = [e for e in PYPROJECT["project"]["optional-dependencies"] if e not in ("dev", "bench")]
    missing = _undeclared(_imports("memsearch"), _declared(*features))
    assert not missing, f"imported but not in [project] dependencies or a feature extra: {missing}"


@pytest.mark.slow
def test_benchmarks_and_tests_need_only_the_bench_and_dev_extras():
    # the peer adapters run in the peers' own virtual environments, never in ours
    missing = _undeclared(_imports("benchmarks", skip=("benchmarks/peers/",)), _declared("bench"))
    missing += _undeclared(_imports("tests"), _declared("dev", "bench"))
    assert not missing, f"imported but not declared: {missing}"


def test_bundled_model_package_is_a_dependency_and_the_registry_ships_in_the_wheel():
    registry = tomllib.loads((REPO / "memsearch/engine/embed/models.toml").read_text())
    default = registry["models"][registry["default"]]
    assert _normal(default["package"]) in _declared(), "the default model must install with memsearch (offline)"
    assert "engine/embed/models.toml" in PYPROJECT["tool"]["setuptools"]["package-data"]["memsearch"]
    assert PYPROJECT["tool"]["setuptools"]["packages"]["find"]["include"] == ["memsearch*"]  # no benchmarks, no tests


def test_pins_match_the_code():
    deps = {_normal(re.match(r"[A-Za-z0-9._-]+", r).group()): r for r in PYPROJECT["project"]["dependencies"]}
    assert deps["mcp"].replace(" ", "") == "mcp>=2,<3"  # mcp_types and MCPError are mcp 2
    assert isinstance(PYPROJECT["project"]["license"], str)  # an SPDX expression, not a deprecated table


@pytest.mark.slow
def test_without_fcntl_the_index_is_a_typed_error_and_the_cli_says_so_in_one_line(tmp_path):
    """Windows has no fcntl: importing the index layer raises UnsupportedPlatform, the CLI prints one line."""
    import subprocess

    (tmp_path / "MEMORY.md").write_text("# m\n")
    code = ("import sys; sys.modules['fcntl'] = None\n"  # what `import fcntl` does on Windows: ImportError
            "from memsearch.errors import UnsupportedPlatform\n"
            "try:\n    import memsearch.engine.storage.lock\nexcept UnsupportedPlatform:\n    pass\n"
            "else:\n    sys.exit('imported without fcntl')\n"
            "from memsearch.cli import main\nsys.exit(main(['index', sys.argv[1]]))\n")
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr and "needs a POSIX system" in done.stderr and "WSL" in done.stderr


def test_models_toml_has_one_source_at_the_top_of_the_repository():
    """The registry is the repository's top-level models.toml; the package reads it through a link, and the
    wheel ships its content (.ci/dist-check compares the bytes)."""
    from memsearch.engine.embed import models

    top = REPO / "models.toml"
    assert top.is_file() and not top.is_symlink()
    assert models.REGISTRY_PATH.is_symlink() and models.REGISTRY_PATH.resolve() == top.resolve()
    assert models.registry()[0] == "all-MiniLM-L6-v2"


def test_ci_runs_the_readme_s_two_commands_then_the_packaging_check():
    """``.ci/run`` fails on the first failing step (``set -e``) and runs ``make run`` on its clean checkout before
    ``make test`` and ``make dist-check`` (issue 28 item 6: the README's first command broke with CI green)."""
    script = (REPO / ".ci" / "run").read_text()
    steps = [line.strip() for line in script.splitlines() if re.fullmatch(r"\s*make [a-z-]+\s*", line)]
    assert steps == ["make run", "make test", "make dist-check"]
    assert "set -euo pipefail" in script
    readme = (REPO / "README.md").read_text()
    assert "make run" in readme and "make test" in readme
