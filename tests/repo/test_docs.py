"""The documentation (docs/) documents every command, option, setting, module and error the code has,
the README stays a short page for users, and the docs build strictly (no broken link or anchor)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import typer.main

from memsearch.cli.app import app
from tests.conftest import REPO

DOCS = REPO / "docs"
#: The README is the users' first page; everything else lives in docs/ (issue 21: about 300 lines).
README_MAX_LINES = 300


def _page(name: str) -> str:
    return (DOCS / name).read_text()


def _all_docs() -> str:
    return "\n".join(p.read_text() for p in sorted(DOCS.glob("*.md")))


def _section(text: str, heading: str) -> str:
    return text.split(heading, 1)[1].split("\n## ", 1)[0]


def test_every_command_and_option_is_documented():
    commands = _page("commands.md") + _page("harnesses.md") + _page("memory-tool.md")
    missing = []
    for name, command in typer.main.get_command(app).commands.items():
        if f"memsearch {name}" not in commands:
            missing.append(f"command {name}")
        for param in command.params:
            if getattr(param, "hidden", False):
                continue
            for opt in list(param.opts) + list(getattr(param, "secondary_opts", [])):
                if opt.startswith("--") and opt != "--help" and opt not in commands:
                    missing.append(f"{name} {opt}")
    assert not missing, f"docs/commands.md lacks: {', '.join(missing)}"


def test_every_setting_is_documented_in_one_table():
    from memsearch import settings

    table = _page("settings.md")
    missing = [s.env for s in settings.SETTINGS.values() if f"| `{s.env}` |" not in table]
    assert not missing, f"docs/settings.md's table lacks: {', '.join(missing)}"


def test_every_module_is_in_the_code_layout_table():
    section = _section(_page("architecture.md"), "## Code layout")
    modules = [p.relative_to(REPO / "memsearch").as_posix() for p in (REPO / "memsearch").rglob("*.py")
               if p.name not in ("__init__.py", "__main__.py") and "__pycache__" not in p.parts]
    missing = [m for m in modules if f"`{m}`" not in section]
    assert not missing, f"docs/architecture.md's Code layout lacks: {', '.join(sorted(missing))}"


def test_every_error_is_documented():
    from memsearch import errors

    page = _page("python-api.md")
    classes = [name for name in errors.__all__ if isinstance(getattr(errors, name), type)]
    missing = [name for name in classes if f"`{name}`" not in page]
    assert not missing, f"docs/python-api.md's error list lacks: {', '.join(missing)}"


def test_the_readme_is_short_and_links_only_to_what_exists():
    readme = (REPO / "README.md").read_text()
    assert len(readme.splitlines()) <= README_MAX_LINES
    import re

    targets = re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", readme)
    missing = [t for t in targets if not (REPO / t).exists()]
    assert targets and not missing, f"README.md links to missing files: {missing}"


def test_every_docs_page_is_in_the_nav():
    nav = (REPO / "mkdocs.yml").read_text()
    missing = [p.name for p in DOCS.glob("*.md") if f": {p.name}" not in nav]
    assert not missing, f"mkdocs.yml's nav lacks: {missing}"


def test_the_docs_build_strictly(tmp_path):
    """The one strict build of the documentation that `make test` runs (mkdocs is in the dev extra)."""
    mkdocs = shutil.which("mkdocs", path=str(Path(sys.executable).parent))
    assert mkdocs is not None, "mkdocs is not installed beside this Python: `make setup` installs the dev extra"
    done = subprocess.run([mkdocs, "build", "--strict", "--quiet", "--site-dir", str(tmp_path / "site")],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "site" / "index.html").exists()


#: What a measured figure looks like: a percentile, a load average, a rate, resident memory, a
#: three-decimal score, or a ratio to a bare Python start. Settings' defaults ("300 ms") are not figures.
MEASURED = re.compile(
    r"\bp(50|95|99)\b|load average|\bload \d|\d[\d,.]* ?(searches|chunks|turns|queries)/s|\d ?(MB|GB) (resident|RSS)"
    r"|\b0\.\d{3}\b|\d(\.\d+)?x `?python"
)


def test_measured_figures_live_in_the_benchmark_report():
    """Figures are stated once, in docs/benchmarks.md (and the README's one results table): other pages link there."""
    stray = []
    for page in sorted(DOCS.glob("*.md")):
        if page.name == "benchmarks.md":
            continue
        for number, line in enumerate(page.read_text().splitlines(), 1):
            if MEASURED.search(line):
                stray.append(f"{page.name}:{number}: {line.strip()[:100]}")
    readme = (REPO / "README.md").read_text().splitlines()
    tables = [n for n, line in enumerate(readme) if line.startswith("|---")]
    assert len(tables) <= 1, "the README has one results table"
    for number, line in enumerate(readme, 1):
        if MEASURED.search(line) and not line.startswith("|"):
            stray.append(f"README.md:{number}: {line.strip()[:100]}")
    assert not stray, "measured figures outside docs/benchmarks.md (move them there and link):\n" + "\n".join(stray)
