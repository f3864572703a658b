"""The one argument pipeline every tool call goes through: bounds first, then the tool's JSON Schema.

:func:`prepare` takes what a harness sends (a dict, the JSON text OpenAI sends, bytes, or None),
refuses anything too large, too deep or too many-keyed before parsing it further
(:func:`~memsearch.harness.bounds.check_request`, with the spec's own limits: the ``memory`` tool
carries whole files), parses JSON text there and nowhere else, then validates the object against
the schema the model was shown (:func:`memsearch.argcheck.check_arguments`, worded by the spec's
``render`` where it has one). Its result is the cleaned arguments: ``null`` dropped, ``5.0`` -> ``5``.
"""

from __future__ import annotations

from typing import Any

from ..argcheck import DATE_PATTERN, PATTERN_HINTS, check_arguments, validator_for
from .bounds import check_request

__all__ = ["prepare", "check_arguments", "validator_for", "PATTERN_HINTS", "DATE_PATTERN"]


def prepare(spec, arguments: Any) -> dict:
    """``arguments`` for the tool ``spec`` (a :class:`~memsearch.harness.specs.ToolSpec`), bounded,
    parsed and validated; :class:`~memsearch.errors.InvalidArgument` names what is wrong."""
    parsed = check_request(spec.name, arguments, max_chars=spec.max_chars, max_string=spec.max_string,
                           example=spec.example)
    if spec.check is not None:
        return spec.check(parsed)
    return check_arguments(spec.name, spec.parameters, parsed, spec.validator)
