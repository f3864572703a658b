"""The JSON Schema of each tool's result (MCP ``outputSchema``): what ``structuredContent`` holds when a call succeeds.

Each schema names the keys every result has (``required``) and the optional ones a cut adds
(``truncated``, ``note``, ...); objects stay open to new keys, so that a result may grow a field
without breaking a client that validates it. A failed call is ``{"error": {"type", "message"}}``
with ``isError: true`` instead (:data:`ERROR_SCHEMA`), which MCP clients do not check against these.
"""

from __future__ import annotations

__all__ = ["OUTPUT_SCHEMAS", "ERROR_SCHEMA"]

_STR = {"type": "string"}
_INT = {"type": "integer", "minimum": 0}
_LINE = {"type": "integer", "minimum": 1}
_OPT_STR = {"type": ["string", "null"]}
_CUT = {
    "truncated": {"type": "boolean", "description": "Present and true when the result was cut to the token budget."},
    "note": {
        "type": "string",
        "description": "What was cut, and which call reads on; or a hint when nothing was found.",
    },
}


def _obj(properties: dict, required: tuple[str, ...] = ()) -> dict:
    return {"type": "object", "properties": properties, "required": list(required or properties)}


_MEMORY_MD = {"anyOf": [{"type": "null"}, _obj({"path": _STR, "title": _STR, "summary": _STR})]}
_HIT = _obj(
    {
        "path": _STR,
        "start_line": _LINE,
        "end_line": _LINE,
        "heading": _STR,
        "date": _OPT_STR,
        "score": {"type": "number"},
        "snippet": _STR,
        "memory_md": _MEMORY_MD,
        "cut": {"type": "boolean", "description": "The snippet was cut to fit the budget."},
        "stale": {
            "type": "boolean",
            "description": "The file changed since it was indexed: read it for its current text.",
        },
        "partial": {
            "type": "boolean",
            "description": "The file is still being indexed: found by its words only, not yet by meaning.",
        },
    },
    ("path", "start_line", "end_line", "heading", "date", "score", "snippet", "memory_md", "stale", "partial"),
)
_DIR = _obj({"path": _STR, "memory_md": _OPT_STR, "title": _STR, "summary": _STR})
_FILE = _obj({"path": _STR, "title": _STR, "tokens": _INT})

OUTPUT_SCHEMAS: dict[str, dict] = {
    "memory_search": _obj({"query": _STR, "hits": {"type": "array", "items": _HIT}} | _CUT, ("query", "hits")),
    "memory_read": _obj(
        {
            "path": _STR,
            "start_line": _LINE,
            "end_line": _LINE,
            "total_lines": _INT,
            "text": _STR,
            "next_start_line": _LINE,
        }
        | _CUT,
        ("path", "start_line", "end_line", "total_lines", "text"),
    ),
    "memory_list": _obj(
        {
            "path": _STR,
            "memory_md": _OPT_STR,
            "title": _STR,
            "summary": _STR,
            "dirs": {"type": "array", "items": _DIR},
            "files": {"type": "array", "items": _FILE},
            "total_entries": _INT,
            "offset": _INT,
        }
        | _CUT,
        ("path", "memory_md", "title", "summary", "dirs", "files", "total_entries"),
    ),
    "memory_core": _obj(
        {
            "files": {"type": "array", "items": _obj({"path": _STR, "tokens": _INT})},
            "total_tokens": _INT,
            "encoding": _STR,
            "rendered": _STR,
        }
        | _CUT,
        ("files", "total_tokens", "encoding", "rendered"),
    ),
    "memory": _obj(
        {
            "command": _STR,
            "path": _STR,
            "result": {"type": "string", "description": "The text for the model."},
            "changed": {"type": "array", "items": _STR},
            "created": {"type": "array", "items": _STR},
            "core_tokens": _INT,
            "index": {
                "type": "object",
                "description": "How the index took the write (synced, via, files, ms, note or error).",
            },
        }
        | _CUT,
        ("command", "path", "result"),
    ),
}
#: The result of a failed call (``isError: true``).
ERROR_SCHEMA = _obj({"error": _obj({"type": _STR, "message": _STR})})
