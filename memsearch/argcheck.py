"""Arguments checked with ``jsonschema`` (Draft 2020-12) against a published schema, and refused in words.

:func:`check_arguments` takes a parsed arguments object (or None), validates it against the very
schema the model was shown, and raises :class:`~memsearch.errors.InvalidArgument` with one
sentence that names the argument and what it accepts (a ``pattern`` is described in words
through :data:`PATTERN_HINTS`, never shown as a regular expression); a schema's owner may word
the sentence itself (``render``). Light: ``jsonschema`` is imported on first use only, and the
memory layer (the memory tool's commands) uses it as the harness's tools do. Parsing JSON text
and bounding what a caller sends are the harness's (:mod:`memsearch.harness.arguments`).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from .errors import InvalidArgument

__all__ = ["check_arguments", "validator_for", "describe", "json_type", "refuse_keywords", "PATTERN_HINTS",
           "DATE_PATTERN"]

DATE_PATTERN = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"
#: What a ``pattern`` accepts, in words, for messages. A tool adding a pattern adds its hint here.
PATTERN_HINTS = {DATE_PATTERN: "a date YYYY-MM-DD, e.g. 2026-08-12"}
_JSON_TYPES = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "a boolean (true or false)",
    "array": "an array",
    "object": "an object",
    "null": "null",
}


def validator_for(schema: dict):
    """A Draft 2020-12 validator of ``schema`` (build it once per schema: compiling is the slow part)."""
    from jsonschema import Draft202012Validator  # lazily: `import memsearch` stays light

    return Draft202012Validator(schema)


def check_arguments(
    tool: str, schema: dict, arguments: Any, validator=None, render: Callable[[Sequence[Any]], str] | None = None
) -> dict:
    """``arguments`` (an object, or None) validated against ``schema`` and cleaned, or :class:`InvalidArgument`.

    ``null`` for a top-level argument means "omitted" (it is dropped before validation), and
    an integer sent as ``5.0`` is passed on as ``5`` (JSON Schema counts it as an integer).
    When several things are wrong, the message names the first: an unknown argument, then
    the arguments' own errors in the order given, then a missing one. ``render``: the sorted
    jsonschema errors -> the message, or the :class:`InvalidArgument` to raise (a subclass that carries what was wrong
    as data); default: :func:`describe` of the first, prefixed ``tool:``.
    """
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise InvalidArgument(f"{tool}: arguments must be a JSON object, got {json_type(arguments)}")
    clean = {name: value for name, value in arguments.items() if value is not None}
    errors = sorted((validator or validator_for(schema)).iter_errors(clean), key=_order(clean))
    if errors:
        refusal = render(errors) if render else f"{tool}: {describe(errors[0])}"
        raise refusal if isinstance(refusal, InvalidArgument) else InvalidArgument(refusal)
    props = schema.get("properties", {})
    for name, value in clean.items():
        if isinstance(value, float) and value.is_integer() and "integer" in _kinds(props.get(name, {})):
            clean[name] = int(value)
    return clean


def refuse_keywords(function: Callable, called: str, unknown: dict) -> None:
    """For a Python entry point that gathers its keyword arguments (``**unknown``): a ``TypeError`` naming each
    one ``function`` does not take, as ``called`` (``memsearch.search()``, what the caller wrote) with its real
    parameters, rather than the internal function that would otherwise refuse it; nothing when ``unknown`` is empty."""
    if not unknown:
        return
    import inspect

    gathered = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    names = [p.name for p in inspect.signature(function).parameters.values() if p.kind not in gathered]
    plural = "s" if len(unknown) > 1 else ""
    raise TypeError(f"{called} got unexpected keyword argument{plural} {', '.join(map(repr, unknown))}; "
                    f"its parameters are {', '.join(names)}")


def _kinds(schema: dict) -> tuple[str, ...]:
    kind = schema.get("type", ())
    return (kind,) if isinstance(kind, str) else tuple(kind)


def json_type(value: Any) -> str:
    """The JSON name of a value's type (what the model sent, in the schema's words)."""
    if value is None:
        return "null"
    for kind, name in (
        (bool, "boolean"),
        (str, "string"),
        (int, "integer"),
        (float, "number"),
        (list, "array"),
        (dict, "object"),
    ):
        if isinstance(value, kind):
            return name
    return type(value).__name__


def _where(path) -> str:
    """``edits[0].text`` for the JSON path ``["edits", 0, "text"]``."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _bounds(schema: dict) -> str:
    if "minimum" in schema and "maximum" in schema:
        return f"from {schema['minimum']} to {schema['maximum']}"
    words = (
        ("minimum", "at least"),
        ("exclusiveMinimum", "greater than"),
        ("maximum", "at most"),
        ("exclusiveMaximum", "less than"),
    )
    return " and ".join(f"{word} {schema[key]}" for key, word in words if key in schema)


def describe(error) -> str:
    """One jsonschema error as a sentence naming the argument and what it accepts (without the tool's name)."""
    kind, rule, value, schema = error.validator, error.validator_value, error.instance, error.schema
    where = _where(error.absolute_path)
    subject = f"argument {where!r}" if where else "the arguments"
    got = f"got {json_type(value)} {value!r}"
    if kind == "required":
        missing = next((n for n in rule if n not in value), rule[0])
        if where:
            return f"{subject} lacks the required key {missing!r}"
        about = schema.get("properties", {}).get(missing, {}).get("description")
        return f"missing required argument {missing!r}" + (f" ({about})" if about else "")
    if kind == "additionalProperties":
        known = list(schema.get("properties", {}))
        unknown = sorted(set(value) - set(known))
        plural = "s" if len(unknown) > 1 else ""
        if where:
            return (
                f"unknown key{plural} {', '.join(map(repr, unknown))} in {subject}; keys: {', '.join(known) or 'none'}"
            )
        return f"unknown argument{plural} {', '.join(map(repr, unknown))}; arguments: {', '.join(known) or 'none'}"
    if kind == "type":
        kinds = rule if isinstance(rule, list) else [rule]
        return f"{subject} must be {' or '.join(_JSON_TYPES.get(k, k) for k in kinds)}, {got}"
    if kind == "enum":
        return f"{subject} must be one of {', '.join(map(repr, rule))}, got {value!r}"
    if kind == "const":
        return f"{subject} must be {rule!r}, got {value!r}"
    if kind in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        return f"{subject} must be {_bounds(schema)}, got {value!r}"
    if kind == "minLength":
        if rule == 1:
            return f"{subject} must not be empty"
        return f"{subject} must be at least {rule} characters long, got {len(value)}"
    if kind == "maxLength":
        return f"{subject} must be at most {rule} characters long, got {len(value)}"
    if kind == "pattern":
        return f"{subject} must be {PATTERN_HINTS.get(rule, f'a string matching {rule}')}, got {value!r}"
    if kind in ("minItems", "maxItems"):
        bound = "at least" if kind == "minItems" else "at most"
        return f"{subject} must hold {bound} {rule} item{'s' if rule != 1 else ''}, got {len(value)}"
    if kind == "uniqueItems":
        return f"{subject} must not repeat an item"
    return f"{subject} is not valid: {error.message}"


def _order(arguments: dict):
    """Sort key of errors: unknown arguments first, then each argument's errors as given, then missing ones."""
    names = list(arguments)

    def key(error):
        path = list(error.absolute_path)
        if not path:
            return (0 if error.validator == "additionalProperties" else 2, 0, "")
        return (1, names.index(path[0]) if path[0] in names else len(names), _where(path))

    return key
