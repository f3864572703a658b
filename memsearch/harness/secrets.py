"""Secrets masked in text bound for memory: API keys, tokens, private keys and ``password=`` style values.

:func:`mask` replaces what looks like a credential with a short, harmless form that keeps its kind
(``sk-ant-[masked]``, ``ghp_[masked]``, ``password=[masked]``) so a log still reads well. The patterns follow
the formats the issuers publish (OpenAI and Anthropic ``sk-``, GitHub ``ghp_``/``gho_``/``ghs_``/
``github_pat_``, AWS ``AKIA``/``ASIA`` key ids, Slack ``xox?-``, Google ``AIza``, Stripe ``sk_live_``, JWTs,
PEM private keys, ``Authorization: Bearer``, credentials in URLs) and assignments to names that mean a secret.
Masking errs on the side of hiding: a long random-looking value after ``token=`` goes even if it was harmless.
"""

from __future__ import annotations

import re

__all__ = ["mask", "MASK"]

MASK = "[masked]"

#: (pattern, replacement): each match replaced; ``\g<keep>`` keeps the non-secret part (a prefix, a name).
_RULES: tuple[tuple[re.Pattern, str], ...] = (
    (re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)", re.S),
     "-----BEGIN PRIVATE KEY----- " + MASK),
    (re.compile(r"\b(?P<keep>eyJ)[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"), r"\g<keep>" + MASK),
    (re.compile(r"\b(?P<keep>sk-(?:ant-|proj-|svcacct-|admin-)?)[A-Za-z0-9_-]{16,}"), r"\g<keep>" + MASK),
    (re.compile(r"\b(?P<keep>(?:sk|rk|pk)_(?:live|test)_)[A-Za-z0-9]{16,}"), r"\g<keep>" + MASK),
    (re.compile(r"\b(?P<keep>gh[pousr]_)[A-Za-z0-9]{30,}"), r"\g<keep>" + MASK),
    (re.compile(r"\b(?P<keep>github_pat_)[A-Za-z0-9_]{30,}"), r"\g<keep>" + MASK),
    (re.compile(r"\b(?P<keep>glpat-)[A-Za-z0-9_-]{20,}"), r"\g<keep>" + MASK),
    (re.compile(r"\b(?P<keep>(?:AKIA|ASIA|AIDA|AROA))[0-9A-Z]{16}\b"), r"\g<keep>" + MASK),
    (re.compile(r"\b(?P<keep>xox[abposr]-)[A-Za-z0-9-]{10,}"), r"\g<keep>" + MASK),
    (re.compile(r"\b(?P<keep>AIza)[0-9A-Za-z_-]{35}"), r"\g<keep>" + MASK),
    (re.compile(r"(?i)(?P<keep>\bbearer\s+)[A-Za-z0-9._~+/-]{12,}=*"), r"\g<keep>" + MASK),
    (re.compile(r"(?P<keep>\b[a-z][a-z0-9+.-]*://[^\s:/@]+:)[^\s@/]+(?=@)"), r"\g<keep>" + MASK),
    # NAME = value, NAME: value, "NAME": "value", NAME=value in a URL query or an environment line
    (re.compile(r"""(?ix)(?P<keep>\b[a-z0-9_.-]*(?:password|passwd|passphrase|pwd|secret|token|api[_-]?key|apikey
                    |access[_-]?key|private[_-]?key|client[_-]?secret|auth[_-]?key|credentials?)(?:[_-][a-z0-9_]*)?
                    ["']?\s*[:=]\s*["']?)(?![\[{(])[^\s"'&,;<>]{4,}"""), r"\g<keep>" + MASK),
)


def mask(text: str) -> str:
    """``text`` with every credential-looking value replaced (see the module's docstring)."""
    for pattern, replacement in _RULES:
        text = pattern.sub(replacement, text)
    return text
