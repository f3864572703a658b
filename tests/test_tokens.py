"""Token counting never touches the network."""

from __future__ import annotations

import subprocess
import sys
import textwrap

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
    script = textwrap.dedent(f"""
        import os, socket
        os.environ["TIKTOKEN_CACHE_DIR"] = {str(tmp_path)!r}
        def refuse(*a, **k):
            raise AssertionError("network access attempted")
        socket.socket.connect = refuse
        socket.create_connection = refuse
        socket.getaddrinfo = refuse
        from memsearch.memory.tokens import get_encoding
        from memsearch.errors import TokenizerUnavailable
        assert get_encoding("cl100k_base").encode_ordinary("hello world") == [15339, 1917]
        try:
            get_encoding("o200k_base")
        except TokenizerUnavailable as err:
            assert "never" in str(err)
        else:
            raise SystemExit("o200k_base should be unavailable offline")
        print("ok")
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
