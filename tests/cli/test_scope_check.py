"""``--scope`` means one thing on both paths of ``memsearch search``: the fast path (answered by the service before
typer loads) and the full CLI check it through one function (:func:`memsearch.cli.spec.check_cli_search`), so a
mistyped, foreign or outside scope gets the same error line and exit status on either."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from memsearch.cli import fast
from tests.conftest import REPO, run_cli

TREE = {"MEMORY.md": "# M\n\nm\n", "notes/MEMORY.md": "# N\n\nn\n", "notes/a.md": "# A\n\natlas\n",
        "skills/deploy/SKILL.md": "# Deploy\n"}


@pytest.mark.parametrize("scope", ["notse", "notes/a.md", "skills", "../elsewhere"])
def test_the_fast_path_and_the_full_cli_refuse_a_bad_scope_alike(make_tree, capsys, scope):
    root = make_tree(TREE)
    argv = ["search", str(root), "atlas", "--scope", scope]
    fast_code = fast.run(list(argv))
    fast_err = capsys.readouterr().err
    full_code, _, full_err = run_cli([*argv, "--local"], capsys)  # --local: never the fast path
    assert fast_code == full_code != 0 and fast_err == full_err and scope in fast_err, (fast_err, full_err)


def test_the_cli_checks_a_search_through_one_function():
    """No CLI module but spec.py calls check_search itself (a second copy of what --scope means)."""
    for path in sorted((REPO / "memsearch" / "cli").glob("*.py")):
        calls = [node for node in ast.walk(ast.parse(Path(path).read_text()))
                 if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == "check_search"]
        assert not calls or path.name == "spec.py", f"{path.name} calls check_search: use spec.check_cli_search"
