"""The ``memory`` tool against Claude's own: the ``anthropic`` SDK's ``BetaLocalFilesystemMemoryTool`` and
memsearch's writable ``ToolBox`` run the same commands on two copies of one tree, and must end the same
way (success or error) with the same files, except memsearch's deliberate refusals (each checked to say
what to do instead).

Two suites:

* ``SDK_CASES``: the scenarios of the SDK's own test file for the tool (anthropic-sdk-python,
  ``tests/lib/tools/memory_tools/test_filesystem.py``, MIT licence, the synchronous class), restated here
  as data: the commands, the expected outcome and the expected files. Each runs on the SDK tool (as
  written) and on memsearch through an adapter that renames ``.txt`` to ``.md`` (memsearch makes
  Markdown files only) and ignores the ``MEMORY.md`` files memsearch adds to keep folders valid.
  Success texts must match as a prefix (memsearch may add a line, e.g. the core memory tokens); an
  error may be worded differently.
* ``SEQUENCE``: 64 commands of our own on one tree holding ``.txt`` files, an empty file, files with and
  without a final newline, CRLF, views in and out of range, and paths that escape; every one must end
  the same way on both, with byte-identical files after each step.

Run ``python tests/harness/test_sdk_parity.py`` to print the tally.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

import pytest

anthropic_memory = pytest.importorskip("anthropic.lib.tools._beta_builtin_memory_tool")

from memsearch.engine.embed.embedder import HashEmbedder  # noqa: E402 (after the importorskip)
from memsearch.engine.index import MemoryIndex  # noqa: E402
from memsearch.tools import ToolBox  # noqa: E402

OK, ERR = "ok", "error"


# --- the two tools ------------------------------------------------------------------------------
class Sides:
    """The SDK tool on ``base/sdk/memories`` and memsearch's ``memory`` tool on ``base/ms/memories``."""

    def __init__(self, base: Path, files: dict[str, bytes] | None = None, core_budget: int | None = None):
        self.sdk_root, self.ms_root = base / "sdk" / "memories", base / "ms" / "memories"
        for root in (self.sdk_root, self.ms_root):
            root.mkdir(parents=True, mode=0o700)
            for rel, data in (files or {}).items():
                (root / rel).parent.mkdir(parents=True, exist_ok=True)
                (root / rel).write_bytes(data)
        self.sdk = anthropic_memory.BetaLocalFilesystemMemoryTool(base_path=str(base / "sdk"))
        index = MemoryIndex(self.ms_root, embedder=HashEmbedder())
        index.sync()
        self.box = ToolBox(self.ms_root, index=index, writable=True, sync=False, core_budget=core_budget)

    def run_sdk(self, call: dict) -> tuple[str, str]:
        try:
            return OK, str(self.sdk.call(dict(call)))
        except Exception as exc:  # noqa: BLE001 - ToolError and whatever else the SDK lets through: an error
            return ERR, f"{type(exc).__name__}: {exc}"

    def run_ms(self, call: dict) -> tuple[str, str]:
        result = self.box.dispatch("memory", dict(call))
        if "error" in result:
            return ERR, result["error"]["message"]
        return OK, result["result"]


def snapshot(root: Path) -> dict[str, bytes]:
    """Every regular, non-hidden file below ``root``: relative path -> bytes."""
    out = {}
    for base, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in files:
            full = Path(base) / name
            if not name.startswith(".") and not full.is_symlink():
                out[full.relative_to(root).as_posix()] = full.read_bytes()
    return out


def same_files(sides: Sides) -> tuple[bool, str]:
    """The trees hold the same files, but for the ``MEMORY.md`` files memsearch made to keep folders valid."""
    sdk, ms = snapshot(sides.sdk_root), snapshot(sides.ms_root)
    ms = {rel: data for rel, data in ms.items() if rel in sdk or rel.rsplit("/", 1)[-1] != "MEMORY.md"}
    if sdk == ms:
        return True, ""
    diff = sorted(k for k in set(sdk) | set(ms) if sdk.get(k) != ms.get(k))
    return False, "; ".join(f"{k}: sdk={sdk.get(k)!r} memsearch={ms.get(k)!r}" for k in diff[:4])


# --- the side-by-side sequence ------------------------------------------------------------------
TREE = {
    "MEMORY.md": b"# Memory\n\nCore memory.\n",
    "persona.md": b"# Persona\n\nPrefers tea.\n",
    "notes/MEMORY.md": b"# Notes\n\nDaily notes.\n",
    "notes/2026-01-05.md": b"# Jan 5\n\nshipped atlas\n",
    "notes/nofinal.md": b"alpha\nbeta",
    "notes/nofinal2.md": b"x\ny",
    "notes/empty.md": b"",
    "notes/todo.txt": b"buy milk\n",
    "projects/MEMORY.md": b"# Projects\n",
    "projects/crlf.md": b"one\r\ntwo\r\n",
    "projects/atlas/MEMORY.md": b"# Atlas\n",
    "projects/atlas/plan.md": b"# Plan\n\nstep one\nstep two\nstep three\n",
    "projects/atlas/log.txt": b"old log\n",
}
M = "/memories"
PLAN = f"{M}/projects/atlas/plan.md"


def _v(path: str, view_range=None) -> dict:
    return {"command": "view", "path": path} | ({"view_range": view_range} if view_range else {})


SEQUENCE: list[dict] = [
    _v(M), _v(f"{M}/notes"), _v(f"{M}/projects"), _v(f"{M}/notes/2026-01-05.md"), _v(f"{M}/notes/empty.md"),
    _v(f"{M}/notes/nofinal.md"), _v(PLAN, [2, 3]), _v(PLAN, [2, -1]), _v(PLAN, [0, 2]), _v(PLAN, [3, 100]),
    _v(PLAN, [50, 60]), _v(PLAN, [4, 2]), _v(f"{M}/notes/todo.txt"), _v(f"{M}/projects/atlas/log.txt"),
    _v(f"{M}/notes/missing.md"), _v(f"{M}/nope"),
    {"command": "create", "path": f"{M}/notes/2026-01-12.md", "file_text": "# Jan 12\n\nmet Bo\n"},
    {"command": "create", "path": f"{M}/notes/2026-01-12.md", "file_text": "again"},
    {"command": "create", "path": f"{M}/projects/atlas/risks.md", "file_text": "# Risks\n\n- the schedule"},
    {"command": "create", "path": f"{M}/people/bo.md", "file_text": "# Bo\n\nBo runs the atlas launch.\n"},
    {"command": "create", "path": f"{M}/people/ana.md", "file_text": ""},
    _v(f"{M}/people/ana.md"),
    {"command": "str_replace", "path": PLAN, "old_str": "step two", "new_str": "step 2"},
    {"command": "str_replace", "path": PLAN, "old_str": "step", "new_str": "stage"},
    {"command": "str_replace", "path": PLAN, "old_str": "nothing like this", "new_str": "x"},
    {"command": "str_replace", "path": f"{M}/notes/nofinal.md", "old_str": "beta", "new_str": "BETA"},
    {"command": "str_replace", "path": f"{M}/projects/crlf.md", "old_str": "two", "new_str": "TWO"},
    {"command": "str_replace", "path": f"{M}/notes/missing.md", "old_str": "a", "new_str": "b"},
    {"command": "str_replace", "path": f"{M}/notes", "old_str": "a", "new_str": "b"},
    {"command": "insert", "path": f"{M}/notes/nofinal.md", "insert_line": 2, "insert_text": "gamma"},
    {"command": "insert", "path": f"{M}/notes/nofinal2.md", "insert_line": 0, "insert_text": "top"},
    {"command": "insert", "path": f"{M}/notes/empty.md", "insert_line": 0, "insert_text": "first"},
    {"command": "insert", "path": PLAN, "insert_line": 0, "insert_text": "# Top"},
    {"command": "insert", "path": PLAN, "insert_line": 1, "insert_text": "two\nlines\n"},
    {"command": "insert", "path": PLAN, "insert_line": 99, "insert_text": "x"},
    {"command": "insert", "path": PLAN, "insert_line": -1, "insert_text": "x"},
    {"command": "insert", "path": f"{M}/notes/2026-01-05.md", "insert_line": 1, "insert_text": "note\n\n"},
    {"command": "insert", "path": f"{M}/projects/crlf.md", "insert_line": 1, "insert_text": "mid"},
    {"command": "insert", "path": f"{M}/notes/missing.md", "insert_line": 0, "insert_text": "x"},
    {"command": "rename", "old_path": f"{M}/notes/2026-01-12.md", "new_path": f"{M}/notes/archive/2026-01-12.md"},
    {"command": "rename", "old_path": f"{M}/notes/nofinal.md", "new_path": f"{M}/notes/nofinal2.md"},
    {"command": "rename", "old_path": f"{M}/notes/missing.md", "new_path": f"{M}/notes/found.md"},
    {"command": "rename", "old_path": f"{M}/people", "new_path": f"{M}/team"},
    {"command": "rename", "old_path": f"{M}/team/bo.md", "new_path": f"{M}/bo.md"},
    {"command": "delete", "path": f"{M}/bo.md"},
    {"command": "delete", "path": f"{M}/notes/todo.txt"},
    {"command": "delete", "path": f"{M}/projects/atlas/log.txt"},
    {"command": "delete", "path": f"{M}/notes/missing.md"},
    {"command": "delete", "path": M},
    _v(f"{M}/team"), _v(f"{M}/notes/archive/2026-01-12.md"),
    {"command": "create", "path": f"{M}/notes/x.md", "file_text": "line\n"},
    _v(f"{M}/notes/x.md", [2, 2]), _v(f"{M}/notes/x.md", [1, 1]),
    {"command": "delete", "path": f"{M}/notes/archive"},
    {"command": "delete", "path": f"{M}/team"},
    _v(f"{M}/../etc"),
    {"command": "create", "path": f"{M}/../outside.md", "file_text": "x"},
    {"command": "create", "path": "/etc/outside.md", "file_text": "x"},
    {"command": "rename", "old_path": M, "new_path": f"{M}/moved"},
    _v("notes"),
    {"command": "create", "path": "notes/relative.md", "file_text": "x"},
    {"command": "str_replace", "path": f"{M}/persona.md", "old_str": "tea", "new_str": "green tea"},
    _v(f"{M}/persona.md"),
    {"command": "delete", "path": f"{M}/projects/crlf.md"},
    {"command": "create", "path": f"{M}/notes/unicode.md", "file_text": "naïve café ✓\n"},
    {"command": "str_replace", "path": PLAN, "old_str": "# Top\n", "new_str": ""},
    _v(PLAN),
]


def run_sequence(base: Path) -> list[tuple[dict, str, str, str]]:
    """Each command on both sides: (call, sdk outcome, memsearch outcome, file difference or '')."""
    sides = Sides(base, TREE)
    rows = []
    for call in SEQUENCE:
        sdk, ms = sides.run_sdk(call), sides.run_ms(call)
        same, diff = same_files(sides)
        rows.append((call, sdk[0], ms[0], "" if same else diff))
    return rows


def test_the_sequence_ends_the_same_way_on_both_tools(tmp_path):
    assert len(SEQUENCE) >= 60
    rows = run_sequence(tmp_path)
    differ = [(call, sdk, ms, diff) for call, sdk, ms, diff in rows if sdk != ms or diff]
    assert not differ, differ
    assert {sdk for _, sdk, _, _ in rows} == {OK, ERR}  # the sequence holds both outcomes


# --- memsearch's deliberate refusals: the SDK does it, memsearch refuses and says what to do instead -----
LINK = "link"  # a link inside the root, to a directory inside the root
REFUSALS = [
    ("hidden file", {"command": "create", "path": f"{M}/.secret.md", "file_text": "x"}, "choose a name without a leading dot"),
    ("write through a link", {"command": "create", "path": f"{M}/{LINK}/x.md", "file_text": "x"}, "use a real file or directory"),
    # before: a view was told 'memory writes never follow links ... write to a real file or directory'
    ("view through a link", {"command": "view", "path": f"{M}/{LINK}"}, "never follows links, to read or to write"),
    ("core budget", {"command": "create", "path": f"{M}/big.md", "file_text": "word " * 400},
     "Move the detail into a subdirectory instead, e.g. create /memories/notes/big.md"),
    ("a MEMORY.md its folder needs", {"command": "delete", "path": f"{M}/notes/MEMORY.md"}, "Edit it instead"),
    ("moving a MEMORY.md its folder needs", {"command": "rename", "old_path": f"{M}/notes/MEMORY.md",
                                             "new_path": f"{M}/notes/index.md"}, "Create the new file with its text instead"),
    ("the root MEMORY.md", {"command": "delete", "path": f"{M}/MEMORY.md"}, "Edit it instead"),
    ("/memoriesX (the SDK writes it into /memories/X)", {"command": "create", "path": "/memoriesX/a.md", "file_text": "x"},
     "give '/memories/...'"),
    ("a new file that is not Markdown", {"command": "create", "path": f"{M}/notes/a.txt", "file_text": "x"},
     "memory files end in '.md', e.g. '/memories/notes/a.md'"),
    ("editing a file that is not Markdown", {"command": "str_replace", "path": f"{M}/notes/todo.txt", "old_str": "milk",
                                             "new_str": "tea"}, "rename it to /memories/notes/todo.md first"),
    ("inserting into a file that is not Markdown", {"command": "insert", "path": f"{M}/notes/todo.txt", "insert_line": 0,
                                                    "insert_text": "x"}, "rename it to /memories/notes/todo.md first"),
]


@pytest.mark.parametrize("name, call, hint", REFUSALS, ids=[r[0] for r in REFUSALS])
def test_deliberate_refusals_say_what_to_do_instead(tmp_path, name, call, hint):
    sides = Sides(tmp_path, TREE, core_budget=300)
    for root in (sides.sdk_root, sides.ms_root):
        os.symlink(root / "projects", root / LINK)
    sdk, ms = sides.run_sdk(call), sides.run_ms(call)
    assert sdk[0] == OK, sdk  # Claude's tool does it
    assert ms[0] == ERR and hint in ms[1], ms
    assert snapshot(sides.ms_root) == TREE  # nothing written


# --- the SDK's own test scenarios ------------------------------------------------------------------
def _c(path, text):
    return {"command": "create", "path": path, "file_text": text}


SDK_CASES: dict[str, list[tuple]] = {
    "create": [
        ("call", _c(f"{M}/test_file.txt", "Hello, World!"), "File created successfully at: /memories/test_file.txt"),
        ("files", {"test_file.txt": "Hello, World!"}),
    ],
    "create_nested_directories": [
        (
            "call",
            _c(f"{M}/deep/nested/file.txt", "Nested file"),
            "File created successfully at: /memories/deep/nested/file.txt",
        ),
        ("files", {"deep/nested/file.txt": "Nested file"}),
    ],
    "create_error_if_file_already_exists": [
        ("call", _c(f"{M}/existing.txt", "Original"), OK),
        ("call", _c(f"{M}/existing.txt", "New"), ERR),
    ],
    "view_file": [
        ("call", _c(f"{M}/view_test.txt", "Line 1\nLine 2\nLine 3"), OK),
        (
            "call",
            _v(f"{M}/view_test.txt"),
            (
                "Here's the content of /memories/view_test.txt with line numbers:\n"
                "     1\tLine 1\n     2\tLine 2\n     3\tLine 3"
            ),
        ),
    ],
    "view_directory": [
        ("call", _c(f"{M}/dir/file1.txt", "File 1"), OK),
        ("call", _c(f"{M}/dir/file2.txt", "File 2"), OK),
        (
            "call",
            _v(f"{M}/dir"),
            (
                "Here're the files and directories up to 2 levels deep in /memories/dir",
                "/memories/dir/file1.txt",
                "/memories/dir/file2.txt",
            ),
        ),
    ],
    "view_file_with_range": [
        ("call", _c(f"{M}/range_test.txt", "Line 1\nLine 2\nLine 3\nLine 4\nLine 5"), OK),
        (
            "call",
            _v(f"{M}/range_test.txt", [2, 4]),
            (
                "Here's the content of /memories/range_test.txt "
                "with line numbers:\n     2\tLine 2\n     3\tLine 3\n     4\tLine 4"
            ),
        ),
    ],
    "view_error_for_non_existent_file": [("call", _v(f"{M}/nonexistent.txt"), ERR)],
    "view_error_for_non_utf8_file": [
        ("bytes", "binary.dat", b"\xff\xfe\x80 not utf-8"),
        ("call", _v(f"{M}/binary.dat"), ERR),
    ],
    # the SDK creates this file with the tool; here it is put in place (memsearch would refuse a 5 MB core file,
    # its budget, and indexing one takes minutes): the view is the point
    "view_error_for_files_with_too_many_lines": [
        ("bytes", "huge.txt", b"\n".join([b"line"] * 1_000_000)),
        ("call", _v(f"{M}/huge.txt"), ERR),
    ],
    "str_replace": [
        ("call", _c(f"{M}/replace_test.txt", "Line 1\nOld Text\nLine 3"), OK),
        (
            "call",
            {"command": "str_replace", "path": f"{M}/replace_test.txt", "old_str": "Old Text", "new_str": "New Text"},
            (
                "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n"
                "     1\tLine 1\n     2\tNew Text\n     3\tLine 3"
            ),
        ),
        ("files", {"replace_test.txt": "Line 1\nNew Text\nLine 3"}),
    ],
    "str_replace_error_when_string_not_found": [
        ("call", _c(f"{M}/replace_test.txt", "Hello, World!"), OK),
        (
            "call",
            {"command": "str_replace", "path": f"{M}/replace_test.txt", "old_str": "NotFound", "new_str": "Python"},
            ERR,
        ),
    ],
    "str_replace_error_when_string_appears_multiple_times": [
        ("call", _c(f"{M}/replace_test.txt", "Hello\nMiddle\nHello"), OK),
        ("call", {"command": "str_replace", "path": f"{M}/replace_test.txt", "old_str": "Hello", "new_str": "Hi"}, ERR),
    ],
    "str_replace_error_for_non_existent_file": [
        ("call", {"command": "str_replace", "path": f"{M}/nonexistent.txt", "old_str": "old", "new_str": "new"}, ERR)
    ],
    "insert": [
        ("call", _c(f"{M}/insert_test.txt", "Line 1\nLine 2"), OK),
        (
            "call",
            {"command": "insert", "path": f"{M}/insert_test.txt", "insert_line": 1, "insert_text": "Inserted Line"},
            "The file /memories/insert_test.txt has been edited.",
        ),
        ("files", {"insert_test.txt": "Line 1\nInserted Line\nLine 2\n"}),
    ],
    "insert_at_beginning_of_file": [
        ("call", _c(f"{M}/insert_test.txt", "Line 1\nLine 2"), OK),
        (
            "call",
            {"command": "insert", "path": f"{M}/insert_test.txt", "insert_line": 0, "insert_text": "First Line"},
            OK,
        ),
        ("files", {"insert_test.txt": "First Line\nLine 1\nLine 2\n"}),
    ],
    "insert_at_end_of_file": [
        ("call", _c(f"{M}/insert_test.txt", "Line 1\nLine 2"), OK),
        (
            "call",
            {"command": "insert", "path": f"{M}/insert_test.txt", "insert_line": 2, "insert_text": "Last Line"},
            OK,
        ),
        ("files", {"insert_test.txt": "Line 1\nLine 2\nLast Line\n"}),
    ],
    "view_preserves_crlf_line_endings": [
        ("bytes", "crlf.txt", b"line1\r\nline2\r\nline3\r\n"),
        (
            "call",
            _v(f"{M}/crlf.txt"),
            (
                "Here's the content of /memories/crlf.txt with line numbers:\n"
                "     1\tline1\r\n     2\tline2\r\n     3\tline3\r\n     4\t"
            ),
        ),
    ],
    "str_replace_preserves_crlf_line_endings": [
        ("bytes", "crlf.txt", b"line1\r\nline2\r\nline3\r\n"),
        ("call", {"command": "str_replace", "path": f"{M}/crlf.txt", "old_str": "line2", "new_str": "LINE2"}, OK),
        ("files", {"crlf.txt": "line1\r\nLINE2\r\nline3\r\n"}),
    ],
    "insert_preserves_crlf_line_endings": [
        ("bytes", "crlf.txt", b"line1\r\nline2\r\nline3\r\n"),
        ("call", {"command": "insert", "path": f"{M}/crlf.txt", "insert_line": 1, "insert_text": "Inserted"}, OK),
        ("files", {"crlf.txt": "line1\r\nInserted\nline2\r\nline3\r\n"}),
    ],
    "insert_error_for_non_existent_file": [
        ("call", {"command": "insert", "path": f"{M}/nonexistent.txt", "insert_line": 0, "insert_text": "text"}, ERR)
    ],
    "insert_error_for_invalid_insert_line": [
        ("call", _c(f"{M}/insert_test.txt", "Line 1\nLine 2"), OK),
        ("call", {"command": "insert", "path": f"{M}/insert_test.txt", "insert_line": 10, "insert_text": "text"}, ERR),
    ],
    "delete": [
        ("call", _c(f"{M}/delete_me.txt", "To be deleted"), OK),
        ("call", {"command": "delete", "path": f"{M}/delete_me.txt"}, "Successfully deleted /memories/delete_me.txt"),
        ("files", {}),
    ],
    "delete_directory": [
        ("call", _c(f"{M}/subdir/file.txt", "Content"), OK),
        ("call", {"command": "delete", "path": f"{M}/subdir"}, "Successfully deleted /memories/subdir"),
        ("files", {}),
    ],
    "delete_error_when_file_not_found": [("call", {"command": "delete", "path": f"{M}/nonexistent.txt"}, ERR)],
    "delete_not_allow_deleting_memories_directory": [("call", {"command": "delete", "path": M}, ERR)],
    "rename": [
        ("call", _c(f"{M}/old_name.txt", "Original content"), OK),
        (
            "call",
            {"command": "rename", "old_path": f"{M}/old_name.txt", "new_path": f"{M}/new_name.txt"},
            "Successfully renamed /memories/old_name.txt to /memories/new_name.txt",
        ),
        ("files", {"new_name.txt": "Original content"}),
    ],
    "rename_to_nested_path": [
        ("call", _c(f"{M}/file.txt", "Content"), OK),
        (
            "call",
            {"command": "rename", "old_path": f"{M}/file.txt", "new_path": f"{M}/nested/dir/file.txt"},
            "Successfully renamed /memories/file.txt to /memories/nested/dir/file.txt",
        ),
        ("files", {"nested/dir/file.txt": "Content"}),
    ],
    "rename_error_when_source_not_found": [
        ("call", {"command": "rename", "old_path": f"{M}/nonexistent.txt", "new_path": f"{M}/new.txt"}, ERR)
    ],
    "rename_error_when_destination_exists": [
        ("call", _c(f"{M}/file1.txt", "File 1"), OK),
        ("call", _c(f"{M}/file2.txt", "File 2"), OK),
        ("call", {"command": "rename", "old_path": f"{M}/file1.txt", "new_path": f"{M}/file2.txt"}, ERR),
    ],
    "path_validation_reject_paths_not_starting_with_memories": [("call", _c("/invalid/path.txt", "Invalid"), ERR)],
    "path_validation_reject_paths_trying_to_escape_memories": [
        ("call", _c(f"{M}/../../../etc/passwd", "Escape attempt"), ERR)
    ],
    "symlink_validation_reject_symlink_pointing_outside_memories": [
        ("outside_link", "escape_link"),
        ("call", _v(f"{M}/escape_link/secret.txt"), ERR),
    ],
    "symlink_validation_reject_creating_files_through_symlink_pointing_outside": [
        ("outside_link", "bad_link"),
        ("call", _c(f"{M}/bad_link/hacked.txt", "malicious content"), ERR),
    ],
    "symlink_validation_reject_parent_directory_that_is_symlink_pointing_outside": [
        ("outside_link", "subdir"),
        ("call", _c(f"{M}/subdir/nested/file.txt", "content"), ERR),
    ],
    "mkdir_parents_not_world_writable_under_permissive_umask": [
        ("umask0", _c(f"{M}/deep/nested/file.txt", "x")),
        ("modes", {"deep": 0o700, "deep/nested": 0o700, "deep/nested/file.txt": 0o600}),
    ],
}


def _md(value):
    """The adapter onto memsearch: ``.txt`` names become ``.md`` (memsearch writes Markdown files only)."""
    if isinstance(value, str):
        return value.replace(".txt", ".md")
    if isinstance(value, dict):
        return {_md(k): _md(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return tuple(_md(v) for v in value)
    return value


def run_case(base: Path, steps: list[tuple], side: str) -> list[str]:
    """The failures of one SDK scenario on ``side`` (``"sdk"`` or ``"memsearch"``); empty when it passes."""
    sides = Sides(base)
    root = sides.sdk_root if side == "sdk" else sides.ms_root
    run = sides.run_sdk if side == "sdk" else sides.run_ms
    adapt = (lambda v: v) if side == "sdk" else _md
    failures: list[str] = []
    outside = Path(tempfile.mkdtemp(dir=base))
    (outside / "secret.txt").write_text("sensitive data")
    for step in steps:
        kind, *args = step
        if kind == "bytes":
            (root / adapt(args[0])).write_bytes(args[1])
        elif kind == "outside_link":
            os.symlink(outside, root / args[0], target_is_directory=True)
        elif kind in ("call", "umask0"):
            call = adapt(args[0])
            if kind == "umask0":
                old = os.umask(0)
                try:
                    outcome, text = run(call)
                finally:
                    os.umask(old)
                expected = OK
            else:
                outcome, text = run(call)
                expected = adapt(args[1])
            want = ERR if expected == ERR else OK
            if outcome != want:
                failures.append(f"{call}: {outcome} ({text[:200]}), expected {want}")
            elif isinstance(expected, str) and expected not in (OK, ERR) and not text.startswith(expected):
                failures.append(f"{call}: {text!r} does not start with {expected!r}")
            elif isinstance(expected, tuple) and not all(part in text for part in expected):
                failures.append(f"{call}: {text!r} lacks one of {expected!r}")
        elif kind == "files":
            files = {rel: data for rel, data in snapshot(root).items() if rel.rsplit("/", 1)[-1] != "MEMORY.md"}
            want = {adapt(rel): text.encode() for rel, text in args[0].items()}
            if files != want:
                failures.append(f"files {files!r}, expected {want!r}")
        elif kind == "modes":
            for rel, mode in args[0].items():
                got = stat.S_IMODE(os.stat(root / adapt(rel)).st_mode)
                if got != mode:
                    failures.append(f"{rel} has mode {oct(got)}, expected {oct(mode)}")
    return failures


@pytest.mark.parametrize("side", ["sdk", "memsearch"])
@pytest.mark.parametrize("name", sorted(SDK_CASES))
def test_the_sdk_scenarios_pass_on_both_tools(tmp_path, name, side):
    """``sdk`` checks the scenario as restated here against the SDK itself; ``memsearch`` runs it through the adapter."""
    assert not run_case(tmp_path, SDK_CASES[name], side)


if __name__ == "__main__":  # the tally: python tests/harness/test_sdk_parity.py
    with tempfile.TemporaryDirectory() as tmp:
        rows = run_sequence(Path(tmp) / "seq")
        matched = sum(1 for _, sdk, ms, diff in rows if sdk == ms and not diff)
        print(f"sequence: {matched} of {len(rows)} commands end the same way with the same files")
        for call, sdk, ms, diff in rows:
            if sdk != ms or diff:
                print(f"  differs: {call} sdk={sdk} memsearch={ms} {diff}")
        passing = {
            side: sum(not run_case(Path(tempfile.mkdtemp(dir=tmp)), steps, side) for steps in SDK_CASES.values())
            for side in ("sdk", "memsearch")
        }
        print(
            f"SDK scenarios: {passing['memsearch']} of {len(SDK_CASES)} pass on memsearch "
            f"({passing['sdk']} of {len(SDK_CASES)} on the SDK itself)"
        )
