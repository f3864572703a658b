"""The parameters an index is built with (model, chunker, tokenizer, format), and the check that refuses to mix them."""

from __future__ import annotations

from ..errors import Hint, IndexMismatch
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
    if meta.get("tokenizer") != mine["tokenizer"]:  # one that cannot load is that error, not a rebuild to do
        from ..memory.tokens import get_encoding

        get_encoding(mine["tokenizer"])
    for key, label in _CHECKED:
        if meta.get(key) != mine[key]:
            theirs = meta.get("model") if key == "fingerprint" else meta.get(key)
            ours = mine["model"] if key == "fingerprint" else mine[key]
            same_name = key == "fingerprint" and theirs == ours  # other vectors of one model: int8, other weights
            if same_name:
                theirs, ours = meta.get(key), mine[key]
            error = IndexMismatch(
                f"the index at {location} was built with {label} {theirs!r}, not {ours!r} (vectors of two models "
                "are never mixed; the same model as before also reads it)",
                hint=_rebuild_for(ours) if key == "fingerprint" and not same_name else Hint("rebuild"))
            error.parameter = key  # "fingerprint": another model (`memsearch index --model` rebuilds for it)
            raise error


def _rebuild_for(model: str) -> Hint:
    """The fix of an index built with another model: ``memsearch index ROOT --model M`` rebuilds it for M, the model
    asked for (a plain ``--rebuild`` builds it with the default model again); for a local model directory, whose
    name is no ``--model`` value, the plain rebuild."""
    from .embed.models import registry

    return Hint("rebuild_model", model) if model in registry()[1] else Hint("rebuild")
