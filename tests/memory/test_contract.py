"""The harness contract: load core, defer nested, surface directories, selective reads."""

from __future__ import annotations

import datetime as dt

import pytest

from memsearch.errors import InvalidArgument, MemoryFileNotFound, NotMemoryFile, PathOutsideRoot
from memsearch.memory.contract import MemoryRef, list_dir, load_core, memory_chain, memory_ref, parse_lines, read
from memsearch.memory.document import decode, parse_date

TREE = {
    "MEMORY.md": "# Root index\n\nPoints to projects/ and notes/.\n",
    "persona.md": "# Persona\nCalm.\n",
    "human.md": "# Human\nLikes tea.\n",
    "projects/MEMORY.md": "---\ntitle: Projects\n---\n# ignored heading\n\nAll active projects,\nwith owners.\n\nMore text.\n",
    "projects/atlas.md": "# Atlas\n\nline3\nline4\nline5\n",
    "projects/atlas/MEMORY.md": "# Atlas internals\n\nSchema and incidents.\n",
    "projects/atlas/schema.md": "# Schema\nSECRET_NESTED_TEXT\n",
    "notes/MEMORY.md": "# Notes\n\nDaily notes.\n",
    "notes/2026-08-12.md": "# Aug 12\nDEEP_NOTE_TEXT\n",
    "notes/data.csv": "a,b\n",
    "skills/pdf/SKILL.md": "# skill\n",
    ".private/x.md": "hidden\n",
}


def test_load_core_order_tokens_and_rendering(make_tree):
    core = load_core(make_tree(TREE))
    assert [f.path for f in core.files] == ["MEMORY.md", "human.md", "persona.md"]
    assert core.total_tokens == sum(f.tokens for f in core.files) > 0
    rendered = core.render()
    assert rendered.index('path="MEMORY.md"') < rendered.index('path="human.md"')
    assert "Likes tea." in rendered


def test_nested_markdown_is_deferred(make_tree):
    rendered = load_core(make_tree(TREE)).render()
    for marker in ("SECRET_NESTED_TEXT", "DEEP_NOTE_TEXT", "All active projects", "skill", "hidden"):
        assert marker not in rendered


def test_list_root_surfaces_child_indexes(make_tree):
    listing = list_dir(make_tree(TREE))
    assert listing.memory_md == "MEMORY.md" and listing.title == "Root index"
    assert [d.path for d in listing.dirs] == ["notes", "projects"]
    projects = listing.dirs[1]
    assert projects.memory_md == "projects/MEMORY.md"
    assert projects.title == "Projects"
    assert projects.summary == "All active projects, with owners."
    assert [f.path for f in listing.files] == ["MEMORY.md", "human.md", "persona.md"]


def test_list_nested(make_tree):
    listing = list_dir(make_tree(TREE), "projects")
    assert [d.path for d in listing.dirs] == ["projects/atlas"]
    assert listing.dirs[0].summary == "Schema and incidents."
    assert [(f.path, f.title) for f in listing.files] == [("projects/MEMORY.md", "Projects"), ("projects/atlas.md", "Atlas")]
    assert all(f.tokens > 0 for f in listing.files)
    assert list_dir(make_tree(TREE), "projects/atlas/").path == "projects/atlas"


def test_list_refuses_non_memory(make_tree):
    root = make_tree(TREE)
    with pytest.raises(NotMemoryFile):
        list_dir(root, "skills")
    with pytest.raises(MemoryFileNotFound):
        list_dir(root, "nope")
    with pytest.raises(PathOutsideRoot):
        list_dir(root, "..")


def test_read_whole_and_ranges(make_tree):
    root = make_tree(TREE)
    whole = read(root, "projects/atlas.md")
    assert whole.text.startswith("# Atlas") and whole.total_lines == 5 and whole.end_line == 5
    part = read(root, "projects/atlas.md", "3:4")
    assert part.text == "line3\nline4\n" and (part.start_line, part.end_line) == (3, 4)
    assert read(root, "projects/atlas.md", (4, 99)).text == "line4\nline5\n"
    assert read(root, "projects/atlas.md", "5").text == "line5\n"
    assert read(root, "MEMORY.md").path == "MEMORY.md"
    with pytest.raises(InvalidArgument):
        read(root, "projects/atlas.md", "9:10")


@pytest.mark.parametrize("path,error", [
    ("../outside.md", PathOutsideRoot),
    ("/etc/passwd", PathOutsideRoot),
    ("notes/../../x.md", PathOutsideRoot),
    (".private/x.md", NotMemoryFile),
    ("skills/pdf/SKILL.md", NotMemoryFile),
    ("notes/data.csv", NotMemoryFile),
    ("notes/missing.md", MemoryFileNotFound),
    ("notes", MemoryFileNotFound),  # a folder: its hint says list it (as for a folder named x.md)
])
def test_read_refusals(make_tree, path, error):
    with pytest.raises(error):
        read(make_tree(TREE), path)


def test_read_refuses_link_out_of_root(make_tree, tmp_path):
    root = make_tree(TREE)
    secret = tmp_path / "secret.md"
    secret.write_text("top secret")
    (root / "notes" / "leak.md").symlink_to(secret)
    with pytest.raises(PathOutsideRoot):
        read(root, "notes/leak.md")


@pytest.mark.parametrize(
    "text,expected", [("3:7", (3, 7)), ("3:", (3, None)), (":7", (1, 7)), ("4", (4, 4)), ("2-5", (2, 5)), (None, None)]
)
def test_parse_lines(text, expected):
    assert parse_lines(text) == expected


@pytest.mark.parametrize("bad", ["a:b", "0:3", "5:2", "1:x"])
def test_parse_lines_bad(bad):
    with pytest.raises(InvalidArgument):
        parse_lines(bad)


def test_memory_chain_walks_up_to_the_root_and_skips_dirs_without_one(make_tree):
    root = make_tree(TREE | {"projects/atlas/deep/x.md": "# x\n"})
    assert memory_chain(root, "projects/atlas/deep") == ("projects/atlas/MEMORY.md", "projects/MEMORY.md", "MEMORY.md")
    assert memory_chain(root, "notes") == ("notes/MEMORY.md", "MEMORY.md")
    assert memory_chain(root, ".") == ("MEMORY.md",)


def test_one_memory_md_summary_for_listings_search_and_mcp(make_tree):
    root = make_tree(TREE)
    ref = memory_ref(root, "projects/MEMORY.md")
    assert ref == MemoryRef(path="projects/MEMORY.md", title="Projects", summary="All active projects, with owners.")
    listed = {d.path: d for d in list_dir(root).dirs}["projects"]
    assert (listed.memory_md, listed.title, listed.summary) == (ref.path, ref.title, ref.summary)
    from memsearch.engine.index import MemoryRef as IndexRef  # the search hits' type is the same class

    assert IndexRef is MemoryRef
    with pytest.raises(MemoryFileNotFound):
        memory_ref(root, "nowhere/MEMORY.md")


def test_one_decoder_drops_bom_and_replaces_bad_bytes():
    assert decode(b"\xef\xbb\xbf# T\n") == "# T\n"
    assert decode(b"caf\xe9\n") == "caf\ufffd\n"


@pytest.mark.parametrize(
    "value, expected",
    [
        (None, None),
        ("", None),
        ("2026-08-12", "2026-08-12"),
        (" 2026-08-12 ", "2026-08-12"),
        (dt.date(2026, 8, 12), "2026-08-12"),
        (dt.datetime(2026, 8, 12, 23, 59), "2026-08-12"),
    ],
)
def test_one_date_parser(value, expected):
    assert parse_date(value, "since") == expected


@pytest.mark.parametrize(
    "bad", ["2026-02-31", "last week", "12/08/2026", "20260812", "2026-W33-1", 20260812, "２０２６-08-12"]
)
def test_one_date_parser_names_the_argument(bad):
    with pytest.raises(InvalidArgument, match=r"^until .* is not a calendar date: use YYYY-MM-DD"):
        parse_date(bad, "until")
