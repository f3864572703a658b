"""The tree model: every spec configuration and the edge cases of the walk."""

from __future__ import annotations

from pathlib import PurePosixPath

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memsearch.errors import InvalidArgument, NotAMemoryRoot, PathOutsideRoot
from memsearch.memory.tree import classify, foreign_dirs, safe_path, scan
from tests.conftest import build


def test_spec_first_example(make_tree):
    root = make_tree({
        "MEMORY.md": "# Root\n", "persona.md": "p", "human.md": "h",
        "projects/MEMORY.md": "# P", "projects/project.md": "x",
        "notes/MEMORY.md": "# N", "notes/2026-08-12.md": "n",
    })
    tree = scan(root)
    assert tree.core_files == ("MEMORY.md", "human.md", "persona.md")
    assert tree.external_files == ("notes/2026-08-12.md", "notes/MEMORY.md", "projects/MEMORY.md", "projects/project.md")
    assert tree.memory_dirs == ("notes", "projects")
    assert tree.has_root_index and tree.dirs_missing_index == ()


def test_chain_makes_every_ancestor_memory(make_tree):
    root = make_tree({"MEMORY.md": "", "a/b/c/note.md": "deep"})
    tree = scan(root)
    assert tree.memory_dirs == ("a", "a/b", "a/b/c")
    assert tree.dirs_missing_index == ("a", "a/b", "a/b/c")
    assert tree.child_dirs(".") == ("a",) and tree.child_dirs("a") == ("a/b",)


def test_empty_and_non_markdown_dirs_are_not_memory(make_tree):
    root = make_tree({"MEMORY.md": "", "empty/": "", "assets/logo.png": b"\x89PNG", "data/notes.txt": "t", "docs/README.MD": "upper"})
    tree = scan(root)
    assert tree.memory_dirs == ()
    assert tree.external_files == ()


def test_foreign_and_hidden_are_skipped_whole(make_tree):
    root = make_tree({
        "MEMORY.md": "", "skills/pdf/SKILL.md": "s", "skills/pdf/ref/guide.md": "g",
        ".git/HEAD.md": "x", ".memsearch/x.md": "x", "notes/.draft.md": "d", "notes/MEMORY.md": "",
        "notes/.obsidian/cfg.md": "c",
    })
    tree = scan(root)
    assert tree.foreign_dirs == ("skills",)
    assert tree.external_files == ("notes/MEMORY.md",)
    assert tree.memory_dirs == ("notes",)


def test_foreign_is_configurable(make_tree, monkeypatch):
    root = make_tree({"MEMORY.md": "", "skills/MEMORY.md": "", "skills/a.md": "", "vendor/MEMORY.md": "", "vendor/x.md": ""})
    assert scan(root, foreign=["vendor"]).memory_dirs == ("skills",)
    monkeypatch.setenv("MEMSEARCH_FOREIGN", "none")
    assert scan(root).memory_dirs == ("skills", "vendor")
    monkeypatch.setenv("MEMSEARCH_FOREIGN", "vendor,skills")
    assert scan(root).memory_dirs == ()
    with pytest.raises(InvalidArgument):
        foreign_dirs(["../up"])


def test_skills_below_root_is_ordinary_memory(make_tree):
    root = make_tree({"MEMORY.md": "", "team/MEMORY.md": "", "team/skills/MEMORY.md": "", "team/skills/go.md": "go"})
    assert "team/skills" in scan(root).memory_dirs


def test_index_name_is_case_sensitive(make_tree):
    root = make_tree({"memory.md": "# lower", "notes/Memory.md": "x"})
    tree = scan(root)
    assert not tree.has_root_index
    assert tree.dirs_missing_index == ("notes",)


def test_links_never_leave_root_and_loops_do_not_hang(make_tree, tmp_path):
    outside = build(tmp_path / "outside", {"secret.md": "secret"})
    root = make_tree({"MEMORY.md": "", "notes/MEMORY.md": "", "notes/real.md": "real"})
    (root / "notes" / "alias.md").symlink_to(root / "notes" / "real.md")
    (root / "notes" / "leak.md").symlink_to(outside / "secret.md")
    (root / "outdir").symlink_to(outside, target_is_directory=True)
    (root / "notes" / "loop").symlink_to(root / "notes", target_is_directory=True)
    (root / "notes" / "dangling.md").symlink_to(root / "nowhere.md")
    tree = scan(root)
    assert tree.external_files == ("notes/MEMORY.md", "notes/alias.md", "notes/real.md")
    assert set(tree.skipped_links) >= {"notes/leak.md", "outdir", "notes/loop"}
    assert "outdir" not in tree.memory_dirs


def test_unicode_names(make_tree):
    root = make_tree({"MEMORY.md": "", "notizen/MEMORY.md": "", "notizen/über-uns.md": "ü", "日记/MEMORY.md": "", "日记/今天.md": "x"})
    tree = scan(root)
    assert "notizen/über-uns.md" in tree.external_files
    assert "日记" in tree.memory_dirs


def test_root_errors(tmp_path):
    with pytest.raises(NotAMemoryRoot):
        scan(tmp_path / "missing")
    (tmp_path / "file.md").write_text("x")
    with pytest.raises(NotAMemoryRoot):
        scan(tmp_path / "file.md")


def test_safe_path_refuses_escapes(make_tree, tmp_path):
    root = make_tree({"MEMORY.md": "", "notes/MEMORY.md": ""}).resolve()
    (root / "notes" / "up").symlink_to(tmp_path, target_is_directory=True)
    for bad in ("../x.md", "/etc/passwd", "notes/../../x.md", "notes/up/x.md", "~/x.md", "a\x00b"):
        with pytest.raises(PathOutsideRoot):
            safe_path(root, bad)
    assert safe_path(root, "notes/MEMORY.md")[1] == "notes/MEMORY.md"
    assert safe_path(root, ".")[1] == "."


def test_classify():
    assert classify("MEMORY.md") == "core"
    assert classify("notes/a.md") == "external"
    assert classify("notes/.a.md") == "hidden"
    assert classify("skills/x/SKILL.md") == "foreign"
    assert classify("notes/a.txt") == "other"


# --- property: the walker agrees with a small independent oracle ---------------------------

_names = st.sampled_from(["a", "b", "skills", ".hid", "MEMORY.md", "n.md", "x.txt", "é.md"])
_paths = st.lists(st.lists(_names, min_size=1, max_size=4), min_size=0, max_size=12)


def _oracle(paths: list[str]):
    """Memory dirs and external files, computed from the path list alone."""
    external, dirs, core = set(), set(), set()
    for p in paths:
        parts = PurePosixPath(p).parts
        if any(x.startswith(".") for x in parts) or not p.endswith(".md"):
            continue
        if len(parts) > 1 and parts[0] == "skills":
            continue
        if len(parts) == 1:
            core.add(p)
            continue
        external.add(p)
        for i in range(1, len(parts)):
            dirs.add("/".join(parts[:i]))
    return core, external, dirs


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_paths)
def test_walker_matches_oracle(tmp_path_factory, raw):
    root = tmp_path_factory.mktemp("prop")
    files: list[str] = []
    for parts in raw:
        # a name used as a file cannot also be a directory: keep the first use
        path = "/".join(parts)
        if any(f == path or f.startswith(path + "/") or path.startswith(f + "/") for f in files):
            continue
        if not parts[-1].endswith((".md", ".txt")):
            path += "/leaf.md"
            if any(f == path or path.startswith(f + "/") for f in files):
                continue
        files.append(path)
    build(root, {f: "x" for f in files})
    core, external, dirs = _oracle(files)
    tree = scan(root)
    assert set(tree.core_files) == core
    assert set(tree.external_files) == external
    assert set(tree.memory_dirs) == dirs
    assert set(tree.dirs_missing_index) == {d for d in dirs if f"{d}/MEMORY.md" not in external}
