"""The memory tools: specs and their OpenAI / Anthropic exports, the dispatcher (every tool,
every kind of bad argument, path escapes), token budgets and the worked harness example.

Search runs the real model (loaded once for the module) on a copy of examples/memory.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys

import jsonschema
import pytest

from memsearch.engine.storage.lock import WriterLock
from memsearch.errors import InvalidArgument, MemoryFileNotFound, MemsearchError, NotMemoryFile, PathOutsideRoot
from memsearch.memory.contract import list_dir, load_core
from memsearch.tools import (
    TOOL_NAMES,
    TOOLS,
    ToolBox,
    ToolSpec,
    UnknownTool,
    anthropic_tools,
    openai_tools,
    validate_arguments,
)
from tests.conftest import EXAMPLES, REPO

NAME = r"^[a-zA-Z0-9_-]{1,64}$"
META = jsonschema.Draft202012Validator


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    dest = tmp_path_factory.mktemp("tools") / "memory"
    shutil.copytree(EXAMPLES, dest, ignore=shutil.ignore_patterns(".memsearch"))
    return dest


@pytest.fixture(scope="module")
def box(root):
    return ToolBox(root)


@pytest.fixture(scope="module")
def escape_link(root, tmp_path_factory):
    """ROOT/escape.md: a link to a Markdown file outside the root."""
    outside = tmp_path_factory.mktemp("outside") / "secret.md"
    outside.write_text("# secret\n")
    (root / "escape.md").symlink_to(outside)
    yield root / "escape.md"
    (root / "escape.md").unlink()


class NoIndex:
    """An index that fails the test when touched: bad calls must never load the model."""

    def __getattr__(self, name):
        raise AssertionError(f"the index was touched ({name}) by a call that should have been refused")


# --- specs and exports -------------------------------------------------------------------------------
def test_four_tools_with_model_facing_descriptions_and_schemas():
    assert TOOL_NAMES == ("memory_search", "memory_read", "memory_list", "memory_core")
    for spec in TOOLS:
        META.check_schema(spec.parameters)  # a valid Draft 2020-12 schema
        assert spec.parameters["type"] == "object" and spec.parameters["additionalProperties"] is False
        assert len(spec.description) > 80
        for name, prop in spec.parameters["properties"].items():
            assert prop.get("description"), f"{spec.name}.{name} has no description"
    with pytest.raises(Exception):
        TOOLS[0].name = "x"  # frozen
    exported = openai_tools()
    exported[0]["function"]["parameters"]["properties"].clear()  # callers cannot corrupt the specs
    assert TOOLS[0].parameters["properties"]


OPENAI_CHAT = {
    "type": "object", "required": ["type", "function"], "additionalProperties": False,
    "properties": {
        "type": {"const": "function"},
        "function": {"type": "object", "required": ["name"], "additionalProperties": False, "properties": {
            "name": {"type": "string", "pattern": NAME}, "description": {"type": "string"},
            "parameters": {"type": "object"}, "strict": {"type": ["boolean", "null"]}}},
    },
}
OPENAI_RESPONSES = {
    "type": "object", "required": ["type", "name", "parameters"], "additionalProperties": False,
    "properties": {"type": {"const": "function"}, "name": {"type": "string", "pattern": NAME}, "description": {"type": ["string", "null"]},
                   "parameters": {"type": ["object", "null"]}, "strict": {"type": ["boolean", "null"]}},
}
ANTHROPIC = {
    "type": "object", "required": ["name", "input_schema"], "additionalProperties": False,
    "properties": {
        "name": {"type": "string", "pattern": NAME}, "description": {"type": "string"},
        "input_schema": {"type": "object", "required": ["type"], "properties": {
            "type": {"const": "object"}, "properties": {"type": "object"}, "required": {"type": "array", "items": {"type": "string"}}}},
        "cache_control": {"type": ["object", "null"]}, "type": {"enum": ["custom", None]},
    },
}


@pytest.mark.parametrize("export, shape, schema_of", [
    (lambda: openai_tools(), OPENAI_CHAT, lambda t: t["function"]["parameters"]),
    (lambda: openai_tools("responses"), OPENAI_RESPONSES, lambda t: t["parameters"]),
    (anthropic_tools, ANTHROPIC, lambda t: t["input_schema"]),
], ids=["openai-chat", "openai-responses", "anthropic"])
def test_exports_match_each_api_documented_shape(export, shape, schema_of):
    tools = export()
    assert len(tools) == 4
    for tool in tools:
        jsonschema.validate(tool, shape, cls=META)
        META.check_schema(schema_of(tool))
        assert schema_of(tool)["type"] == "object"
    names = [t.get("name") or t["function"]["name"] for t in tools]
    assert names == list(TOOL_NAMES)


def test_responses_export_turns_strict_off_because_arguments_are_optional():
    # The Responses API defaults strict to true, which requires every property in `required`.
    for tool in openai_tools("responses"):
        assert tool["strict"] is False
    assert set(TOOLS[0].parameters["properties"]) != set(TOOLS[0].parameters["required"])
    with pytest.raises(InvalidArgument):
        openai_tools("completions")


def test_bad_export_shape_is_caught_by_the_shape_schemas():
    bad = openai_tools()[0]
    bad["function"]["name"] = "memory search"  # a space: not a valid function name
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, OPENAI_CHAT, cls=META)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"name": "x", "parameters": {}}, ANTHROPIC, cls=META)


# --- argument validation --------------------------------------------------------------------------------
CASES = [
    ("memory_search", {"query": "atlas"}, True),
    (
        "memory_search",
        {
            "query": "atlas",
            "k": 3,
            "scope": "projects",
            "mode": "keyword",
            "since": "2026-08-01",
            "until": "2026-09-01",
        },
        True,
    ),
    ("memory_search", {"query": "atlas", "k": 3.0}, True),
    ("memory_search", {"query": "summarise how atlas went", "mode": "timeline"}, True),
    ("memory_search", {}, False),
    ("memory_search", {"query": ""}, False),
    ("memory_search", {"query": 7}, False),
    ("memory_search", {"query": "a", "k": "5"}, False),
    ("memory_search", {"query": "a", "k": True}, False),
    ("memory_search", {"query": "a", "k": 2.5}, False),
    ("memory_search", {"query": "a", "k": 0}, False),
    ("memory_search", {"query": "a", "k": 51}, False),
    ("memory_search", {"query": "a", "mode": "fuzzy"}, False),
    ("memory_search", {"query": "a", "since": "last week"}, False),
    ("memory_search", {"query": "a", "limit": 3}, False),
    ("memory_read", {"path": "notes/MEMORY.md", "start_line": 2, "end_line": 4}, True),
    ("memory_read", {"start_line": 2}, False),
    ("memory_read", {"path": ["notes/MEMORY.md"]}, False),
    ("memory_read", {"path": "a.md", "start_line": 0}, False),
    ("memory_read", {"path": "a.md", "start_line": "3"}, False),
    ("memory_list", {}, True),
    ("memory_list", {"path": "projects", "offset": 2}, True),
    ("memory_list", {"offset": -1}, False),
    ("memory_list", {"dir": "projects"}, False),
    ("memory_core", {}, True),
    ("memory_core", {"path": "."}, False),
]


@pytest.mark.parametrize("tool, args, ok", CASES)
def test_validation_agrees_with_jsonschema_on_the_published_schemas(tool, args, ok):
    schema = next(t.parameters for t in TOOLS if t.name == tool)
    assert META(schema).is_valid(args) is ok
    if ok:
        validate_arguments(tool, args)
    else:
        with pytest.raises(InvalidArgument):
            validate_arguments(tool, args)


def test_nulls_are_omitted_and_whole_floats_become_integers():
    assert validate_arguments("memory_search", {"query": "a", "k": 3.0, "scope": None}) == {"query": "a", "k": 3}
    assert type(validate_arguments("memory_search", {"query": "a", "k": 3.0})["k"]) is int
    assert validate_arguments("memory_list", None) == {} and validate_arguments("memory_list", "") == {}
    assert validate_arguments("memory_read", '{"path": "a.md", "end_line": null}') == {"path": "a.md"}


@pytest.mark.parametrize(
    "tool, args, message",
    [
        (
            "memory_search",
            {"query": "a", "since": "last week"},
            "memory_search: argument 'since' must be a date YYYY-MM-DD, e.g. 2026-08-12, got 'last week'",
        ),
        ("memory_search", {"query": "a", "k": "5"}, "memory_search: argument 'k' must be an integer, got string '5'"),
        (
            "memory_search",
            {"query": "a", "k": True},
            "memory_search: argument 'k' must be an integer, got boolean True",
        ),
        ("memory_search", {"query": "a", "k": 0}, "memory_search: argument 'k' must be from 1 to 50, got 0"),
        ("memory_search", {"query": ""}, "memory_search: argument 'query' must not be empty"),
        (
            "memory_read",
            {"path": "a.md", "start_line": 0},
            "memory_read: argument 'start_line' must be at least 1, got 0",
        ),
        ("memory_read", {"path": ["a.md"]}, "memory_read: argument 'path' must be a string, got array ['a.md']"),
        ("memory_list", {"dir": "x", "path": 3}, "memory_list: unknown argument 'dir'; arguments: path, offset"),
        ("memory_core", [1], "memory_core: arguments must be a JSON object, got array"),
    ],
)
def test_messages_name_the_argument_and_what_it_accepts(tool, args, message):
    with pytest.raises(InvalidArgument) as raised:
        validate_arguments(tool, args)
    assert str(raised.value) == message


def test_every_schema_keyword_gets_a_message_naming_its_argument():
    """Schemas beyond today's four tools (numbers, booleans, arrays, nested objects) validate the same way."""
    spec = ToolSpec(
        "memory_edit",
        "test",
        {
            "type": "object",
            "additionalProperties": False,
            "required": ["ops"],
            "properties": {
                "ratio": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
                "dry_run": {"type": "boolean"},
                "tag": {"type": "string", "maxLength": 3, "pattern": "^[a-z]+$"},
                "ops": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": 2,
                    "items": {
                        "type": "object",
                        "additionalProperties": False,
                        "required": ["text"],
                        "properties": {"text": {"type": "string"}, "op": {"const": "append"}},
                    },
                },
            },
        },
    )
    ok = {"ops": [{"text": "x", "op": "append"}], "ratio": 0.5, "dry_run": False, "tag": "ab"}
    assert spec.validate(ok) == ok
    cases = [
        ({"ops": [{"text": "x"}], "ratio": 0}, "argument 'ratio' must be greater than 0 and at most 1, got 0"),
        (
            {"ops": [{"text": "x"}], "dry_run": "no"},
            "argument 'dry_run' must be a boolean (true or false), got string 'no'",
        ),
        ({"ops": [{"text": "x"}], "tag": "abcd"}, "argument 'tag' must be at most 3 characters long, got 4"),
        ({"ops": [{"text": "x"}], "tag": "AB"}, "argument 'tag' must be a string matching ^[a-z]+$, got 'AB'"),
        ({"ops": []}, "argument 'ops' must hold at least 1 item, got 0"),
        ({"ops": [{"text": "x"}] * 3}, "argument 'ops' must hold at most 2 items, got 3"),
        ({"ops": [{}]}, "argument 'ops[0]' lacks the required key 'text'"),
        ({"ops": [{"text": 1}]}, "argument 'ops[0].text' must be a string, got integer 1"),
        ({"ops": [{"text": "x", "op": "drop"}]}, "argument 'ops[0].op' must be 'append', got 'drop'"),
        ({"ops": [{"text": "x", "at": 1}]}, "unknown key 'at' in argument 'ops[0]'; keys: text, op"),
        ({}, "missing required argument 'ops'"),
    ]
    for args, words in cases:
        assert not META(spec.parameters).is_valid(args)
        with pytest.raises(InvalidArgument) as raised:
            spec.validate(args)
        assert str(raised.value) == f"memory_edit: {words}"


def test_validation_does_not_import_jsonschema_at_import_time():
    code = "import sys, memsearch, memsearch.tools; assert 'jsonschema' not in sys.modules, 'imported early'"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO)


@pytest.mark.parametrize(
    "name, args, error, words",
    [
        ("memory_delete", {"path": "x.md"}, UnknownTool, "memory_search, memory_read"),
        ("memory_search", {}, InvalidArgument, "missing required argument 'query'"),
        ("memory_read", {"start_line": 1}, InvalidArgument, "missing required argument 'path'"),
        ("memory_search", {"query": "a", "k": "5"}, InvalidArgument, "'k' must be an integer"),
        ("memory_search", {"query": "a", "k": 500}, InvalidArgument, "from 1 to 50"),
        ("memory_search", {"query": "a", "mode": "fuzzy"}, InvalidArgument, "'hybrid', 'vector', 'keyword', 'timeline'"),
        ("memory_search", {"query": "a", "since": "2026-02-31"}, InvalidArgument, "not a calendar date"),
        ("memory_search", {"query": "a", "since": "2026-09-01", "until": "2026-08-01"}, InvalidArgument, "swap them"),
        ("memory_search", {"query": "   "}, InvalidArgument, "empty"),
        ("memory_search", {"query": "a", "scope": "../.."}, PathOutsideRoot, "leaves the memory root"),
        ("memory_search", {"query": "a", "scope": "/etc"}, PathOutsideRoot, "absolute"),
        ("memory_search", {"query": "a", "scope": "projetcs"}, MemoryFileNotFound, "not a directory"),
        ("memory_read", {"path": "../../etc/passwd"}, PathOutsideRoot, "leaves the memory root"),
        ("memory_read", {"path": "notes/../../outside.md"}, PathOutsideRoot, "'..'"),
        ("memory_read", {"path": "/etc/passwd"}, PathOutsideRoot, "absolute"),
        ("memory_read", {"path": "~/notes.md"}, PathOutsideRoot, "absolute"),
        ("memory_read", {"path": "escape.md"}, PathOutsideRoot, "link"),
        ("memory_read", {"path": "skills/release-notes/SKILL.md"}, NotMemoryFile, "foreign"),
        ("memory_read", {"path": "projects/atlas/diagram.txt"}, NotMemoryFile, "not a Markdown"),
        ("memory_read", {"path": "notes/2030-01-01.md"}, MemoryFileNotFound, "no memory file"),
        ("memory_read", {"path": "notes/MEMORY.md", "start_line": 500}, InvalidArgument, "past the end"),
        ("memory_read", {"path": "notes/MEMORY.md", "start_line": 5, "end_line": 2}, InvalidArgument, "start_line <= end_line"),
        ("memory_list", {"path": ".."}, PathOutsideRoot, "leaves the memory root"),
        ("memory_list", {"path": "skills"}, NotMemoryFile, "another format"),
        ("memory_list", {"path": "projects", "offset": 99}, InvalidArgument, "past the end"),
        ("memory_core", "[1, 2]", InvalidArgument, "JSON object"),
        ("memory_core", "{not json", InvalidArgument, "not valid JSON"),
    ],
)
def test_bad_calls_raise_typed_errors_and_dispatch_returns_error_objects(root, escape_link, name, args, error, words):
    box = ToolBox(root, index=NoIndex())  # a refused search never loads the model
    with pytest.raises(error) as raised:
        box.call(name, args)
    assert words in str(raised.value)
    result = box.dispatch(name, args)
    assert result == {"error": {"type": error.__name__, "message": str(raised.value)}}
    json.dumps(result)


def test_arguments_that_are_not_json_are_answered_with_a_good_call_of_that_tool():
    """The example in the error for arguments that are not JSON is a call the same tool accepts. Before: every tool
    showed memory_read's {"path": "notes/MEMORY.md"}, which memory_search, memory_core and memory refuse."""
    from memsearch.harness.specs import specs_for

    for spec in specs_for(True):
        with pytest.raises(InvalidArgument, match="not valid JSON") as raised:
            spec.validate('{"query": "deploy outage"')
        example = str(raised.value).split("e.g. ", 1)[1]
        assert isinstance(spec.validate(example), dict), (spec.name, example)


def test_every_tool_error_is_a_memsearch_error():
    assert issubclass(UnknownTool, InvalidArgument) and issubclass(UnknownTool, MemsearchError)


# --- read, list, core ----------------------------------------------------------------------------------
def test_read_whole_file_and_line_range(root):
    box = ToolBox(root, index=NoIndex())
    text = (root / "projects/atlas/MEMORY.md").read_text()
    whole = box.call("memory_read", {"path": "projects/atlas/MEMORY.md"})
    assert whole == {
        "path": "projects/atlas/MEMORY.md",
        "start_line": 1,
        "end_line": len(text.splitlines()),
        "total_lines": len(text.splitlines()),
        "text": text,
    }
    part = box.call(
        "memory_read", '{"path": "projects/atlas/MEMORY.md", "start_line": 3, "end_line": 4, "end_line": null}'
    )
    assert part["start_line"] == 3 and part["end_line"] == len(text.splitlines())  # null means omitted
    part = box.call("memory_read", {"path": "projects/atlas/MEMORY.md", "start_line": 3, "end_line": 4})
    assert part["text"] == "".join(text.splitlines(keepends=True)[2:4]) and "note" not in part


def test_read_is_cut_to_the_budget_and_the_note_says_how_to_read_on(root):
    box = ToolBox(root, index=NoIndex(), budget=300)
    text = (root / "projects/billing-migration.md").read_text()
    pieces, args, calls = [], {"path": "projects/billing-migration.md"}, 0
    while True:
        result = box.call("memory_read", args)
        calls += 1
        assert box.tokens(result) <= 300
        pieces.append(result["text"])
        if not result.get("truncated"):
            break
        nxt = result["next_start_line"]
        assert f"start_line={nxt}" in result["note"] and nxt == result["end_line"] + 1
        args = {"path": "projects/billing-migration.md", "start_line": nxt}
    assert calls > 3 and "".join(pieces) == text  # following the notes reads the whole file, nothing lost


def test_list_surfaces_child_memory_directories_with_their_summaries(root):
    box = ToolBox(root, index=NoIndex())
    top = box.call("memory_list", {})
    assert [d["path"] for d in top["dirs"]] == ["notes", "people", "projects"]
    assert all(d["memory_md"] == f"{d['path']}/MEMORY.md" and d["summary"] for d in top["dirs"])
    assert [f["path"] for f in top["files"]] == ["MEMORY.md", "human.md", "persona.md"]
    projects = box.call("memory_list", {"path": "projects/"})
    assert projects["memory_md"] == "projects/MEMORY.md" and projects["title"] == "Projects"
    assert projects["dirs"] == [
        {
            "path": "projects/atlas",
            "memory_md": "projects/atlas/MEMORY.md",
            "title": "Atlas: deeper memory",
            "summary": list_dir(root, "projects/atlas").summary,
        }
    ]
    assert "projects/atlas.md" in [f["path"] for f in projects["files"]]
    assert "truncated" not in projects


def test_list_pages_through_a_long_directory_with_offsets(root):
    box = ToolBox(root, index=NoIndex(), budget=300)
    full = list_dir(root, "notes")
    seen, offset = [], 0
    while True:
        page = box.call("memory_list", {"path": "notes", "offset": offset})
        assert box.tokens(page) <= 300
        seen += [f["path"] for f in page["files"]]
        if not page.get("truncated"):
            break
        offset = offset + len(page["files"]) + len(page["dirs"])
        assert f"offset={offset}" in page["note"]
    assert seen == [f.path for f in full.files] and offset > 0


def test_core_returns_the_rendering_and_token_count_and_cuts_with_a_note(root):
    core = load_core(root)
    result = ToolBox(root, index=NoIndex()).call("memory_core")
    assert result["rendered"] == core.render() and result["total_tokens"] == core.total_tokens > 0
    assert [f["path"] for f in result["files"]] == ["MEMORY.md", "human.md", "persona.md"]
    small = ToolBox(root, index=NoIndex(), budget=400)
    cut = small.call("memory_core", {})
    assert cut["truncated"] and small.tokens(cut) <= 400
    assert "memory_read(path='persona.md')" in cut["note"]
    assert cut["rendered"].startswith('<memory_file path="MEMORY.md">')


def test_system_prompt_holds_core_memory_and_the_next_layer_only(root):
    prompt = ToolBox(root, index=NoIndex()).system_prompt()
    for f in load_core(root).files:
        assert f.text.strip() in prompt  # rule 1
    assert "projects/ (projects/MEMORY.md): Projects." in prompt  # rule 3
    assert "ClickHouse 24.8" not in prompt  # rule 2: projects/atlas.md is deferred
    assert "memory_search" in prompt and "memory_read" in prompt


def test_budget_is_checked():
    with pytest.raises(InvalidArgument):
        ToolBox(EXAMPLES, budget=10)
    with pytest.raises(InvalidArgument):
        ToolBox(EXAMPLES, budget="4000")


# --- search (real model) ------------------------------------------------------------------------------
@pytest.mark.slow
def test_search_hits_carry_path_lines_heading_snippet_date_and_nearest_memory_md(box, root):
    result = box.call("memory_search", {"query": "ClickHouse materialized view for the latest grid values", "k": 4})
    hits = result["hits"]
    assert 1 <= len(hits) <= 4 and "note" not in result
    top = hits[0]
    assert set(top) == {"path", "start_line", "end_line", "heading", "date", "score", "snippet", "memory_md", "stale",
                        "partial"}
    assert top["path"] == "projects/atlas/schema.md"
    assert (
        top["memory_md"]["path"] == "projects/atlas/MEMORY.md" and top["memory_md"]["title"] == "Atlas: deeper memory"
    )
    lines = (root / top["path"]).read_text().splitlines()
    assert top["snippet"].splitlines()[0] == lines[top["start_line"] - 1]
    assert "Materialized views" in top["heading"]
    for hit in hits:  # every hit names its nearest MEMORY.md (the example has one everywhere)
        folder = hit["path"].rpartition("/")[0]
        assert hit["memory_md"]["path"] == f"{folder}/MEMORY.md"


@pytest.mark.slow
def test_search_scope_dates_and_modes(box):
    people = box.call("memory_search", {"query": "who prefers async written updates", "scope": "people", "k": 5})
    assert people["hits"] and all(h["path"].startswith("people/") for h in people["hits"])
    dated = box.call("memory_search", {"query": "cutover", "since": "2026-10-01", "until": "2026-10-31", "k": 5})
    assert dated["hits"] and all(h["date"] and "2026-10-01" <= h["date"] <= "2026-10-31" for h in dated["hits"])
    keyword = box.call("memory_search", {"query": "INC-0412", "mode": "keyword", "k": 3})
    assert keyword["hits"][0]["path"] == "projects/atlas/incidents.md"
    nothing = box.call("memory_search", {"query": "zqxjv", "mode": "keyword"})
    assert nothing["hits"] == [] and "no hits" in nothing["note"]


def test_search_results_are_cut_to_the_budget_with_a_note(box, root):
    small = ToolBox(root, index=box.index, budget=400)
    full = box.call("memory_search", {"query": "Stripe webhooks", "k": 10})
    assert box.tokens(full) > 400
    cut = small.call("memory_search", {"query": "Stripe webhooks", "k": 10})
    assert small.tokens(cut) <= 400
    assert cut["hits"][0]["path"] == full["hits"][0]["path"]  # ranking kept
    assert any(h.get("cut") for h in cut["hits"]) and "memory_read" in cut["note"]
    if len(cut["hits"]) < len(full["hits"]):
        assert "dropped" in cut["note"]


def test_search_syncs_changed_files_unless_a_writer_holds_the_index(box, root):
    box.call("memory_search", {"query": "warm"})
    note = root / "notes" / "2026-12-01.md"
    lock = WriterLock(box.index.db_path, purpose="test daemon").acquire()
    try:
        note.write_text("# 2026-12-01\n\nThe quokkaberry rollout finished.\n")
        held = box.call("memory_search", {"query": "quokkaberry", "mode": "keyword"})
        assert held["hits"] == []  # the "daemon" holds the index: no sync, and no error
    finally:
        lock.release()
    found = box.call("memory_search", {"query": "quokkaberry", "mode": "keyword"})
    assert found["hits"][0]["path"] == "notes/2026-12-01.md" and found["hits"][0]["date"] == "2026-12-01"
    note.unlink()
    gone = box.call("memory_search", {"query": "quokkaberry", "mode": "keyword"})
    assert gone["hits"] == []


# --- the worked example ---------------------------------------------------------------------------------
def test_harness_example_runs_search_then_list_then_read(box, root):
    spec = importlib.util.spec_from_file_location("harness_example", REPO / "examples" / "harness.py")
    harness = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(harness)
    lines: list[str] = []
    transcript = harness.run(
        root, "How do we keep the latest grid values fast in ClickHouse?", toolbox=box, out=lines.append
    )
    calls = [m["tool_call"]["name"] for m in transcript if "tool_call" in m]
    assert calls == ["memory_search", "memory_list", "memory_read"]
    results = [m["content"] for m in transcript if m["role"] == "tool"]
    assert all("error" not in r for r in results)
    assert results[1]["path"] == "projects/atlas" and results[2]["path"] == "projects/atlas/schema.md"
    printed = "\n".join(lines)
    assert load_core(root).files[0].text.strip() in printed and "=== tool call: memory_read" in printed
    assert transcript[-1]["content"].startswith("From projects/atlas/schema.md")


@pytest.mark.parametrize("empty", ["", "  ", None])
def test_an_empty_root_is_refused_not_taken_for_the_working_directory(make_tree, monkeypatch, empty):
    """A root read from an empty setting ('', or None) is refused; before, '' was the working directory (a writable
    toolbox wrote memory into whatever folder the harness ran in) and None a bare TypeError."""
    import memsearch
    from memsearch.errors import NotAMemoryRoot

    cwd = make_tree({"MEMORY.md": "# A project\n", "notes/MEMORY.md": "# Notes\n"})
    monkeypatch.chdir(cwd)
    before = sorted(p.relative_to(cwd) for p in cwd.rglob("*"))
    for attempt in (lambda: ToolBox(empty, writable=True), lambda: memsearch.search("notes", empty, local=True),
                    lambda: memsearch.edit(empty, "create", path="/memories/notes/x.md", file_text="x")):
        with pytest.raises(NotAMemoryRoot, match="no memory root given"):
            attempt()
    assert sorted(p.relative_to(cwd) for p in cwd.rglob("*")) == before


@pytest.mark.parametrize("scope, error, words", [
    ("projects/atlas.md", MemoryFileNotFound, "is not a directory of the memory"),
    ("skills", NotMemoryFile, "is a directory of another format"),
    (".hidden", NotMemoryFile, "is a hidden directory"),
])
def test_the_python_search_refuses_a_scope_as_the_tools_do(root, scope, error, words):
    """Before: memsearch.search(scope=...) found nothing ([]) where ToolBox refused the scope."""
    import memsearch

    (root / ".hidden").mkdir(exist_ok=True)
    with pytest.raises(error, match=words) as raised:
        memsearch.search("atlas", root, scope=scope, local=True, autostart=False)
    tool = ToolBox(root, index=NoIndex()).dispatch("memory_search", {"query": "atlas", "scope": scope})["error"]
    assert tool["type"] == error.__name__ and tool["message"].startswith(f"memory_search: {raised.value.text}")


def test_the_python_search_names_its_own_parameters_for_an_unknown_keyword(root):
    """Before: "check_search() got an unexpected keyword argument 'bogus'", an internal function."""
    import inspect

    import memsearch

    with pytest.raises(TypeError, match=r"^memsearch\.search\(\) got unexpected keyword argument 'bogus'; its "
                                        r"parameters are query, root, k, scope, mode, since, until, db") as raised:
        memsearch.search("atlas", root, bogus=1)
    assert "check_search" not in str(raised.value)
    named = str(raised.value).split("its parameters are ", 1)[1].split(", ")
    assert set(named) <= set(inspect.signature(memsearch.search).parameters)
