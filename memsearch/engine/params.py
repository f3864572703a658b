"""The parameters an index is built with (model, chunker, tokenizer, format), and the check that refuses to mix them."""

from __future__ import annotations

from ..errors import SHOWN_CHARS, Hint, IndexMismatch
from .ingest.chunker import ChunkerConfig
from .storage.schema import FORMAT_VERSION

__all__ = ["index_params", "check_params"]

#: The parameters an index is checked against when opened, with what a message calls them.
_CHECKED = (("format", "index format"), ("fingerprint", "embedding model"), ("chunker", "chunker settings"),
            ("tokenizer", "tokenizer"))


def index_params(embedder, chunker: ChunkerConfig, encoding: str, include_core: bool) -> dict:
    """What ``index.json`` records of how the index was built."""
    return {
        "format": FORMAT_VERSION,
        "model": embedder.name,
        "fingerprint": embedder.fingerprint,
        "chunker": chunker.to_dict(),
        "tokenizer": encoding,
        "include_core": include_core,
    }


def check_params(meta: dict, mine: dict, location: str, root) -> None:
    """Raise :class:`IndexMismatch` naming the fix when the index at ``location`` (its parameters ``meta``)
    was built otherwise than ``mine`` say: vectors of two models are never mixed."""
    for key, label in _CHECKED:
        if meta.get(key) != mine[key]:
            theirs = meta.get("model") if key == "fingerprint" else meta.get(key)
            ours = mine["model"] if key == "fingerprint" else mine[key]
            error = IndexMismatch(
                f"the index at {location} was built with {label} {theirs!r}, not {ours!r} (vectors of two models "
                "are never mixed; the same model as before also reads it)", hint=_hint(key, theirs, ours))
            error.parameter = key  # "fingerprint": another model (`memsearch index --model` rebuilds for it)
            raise error


def _hint(key: str, theirs, ours) -> Hint:
    """The fix for a mismatch of ``key``: for another model by name, search with the index's or rebuild for the one
    asked for (``index --model``, which a bare ``--rebuild`` is not: it would build with the default again)."""
    if key == "fingerprint" and theirs != ours and isinstance(ours, str) and len(ours) <= SHOWN_CHARS:
        return Hint("remodel", ours)
    return Hint("rebuild")
