"""What a memory name may be, when two names are the same name to a person, and how a name is written in the tool's text.

* **Plain**: a new file or folder name holds no control or invisible character (a newline would split a
  line of ``view``'s listing, U+202E shows a name reversed, U+200B makes two names look alike), nor a
  backslash (:func:`require_plain`). Names that already exist stay reachable.
* **Look-alikes**: two names whose Unicode NFC forms are equal look the same (``café`` as U+00E9, or as
  ``e`` + U+0301: macOS writes the second, agents type the first). :func:`lookalikes` finds an existing
  sibling that is the same name in another form: a new name that has one is refused, and a path that does
  not exist but has exactly one resolves to it (:func:`~memsearch.memory.placement.locate` applies both).
* **Escaped**: :func:`escape` writes a backslash and every control or invisible character of a name as
  ``\\xNN``, ``\\uNNNN`` or ``\\UNNNNNNNN``, so a name can never forge a line of a listing;
  :func:`unescape` reads that form back, so a name ``view`` shows can be passed back as it is shown.
"""

from __future__ import annotations

import os
import re
import stat
import unicodedata
from pathlib import Path
from typing import Iterable

from ..errors import InvalidArgument

__all__ = ["MEMORIES_PREFIX", "ODD_CATEGORIES", "JOINERS", "in_memories", "odd", "require_plain", "lookalikes", "lookalike_path",
           "escape", "unescape"]

#: The directory Claude's memory tool (``memory_20250818``) shows its memory under.
MEMORIES_PREFIX = "/memories"
#: Unicode categories never given to a new name, and always escaped when a name is shown: controls, format
#: characters that reorder or hide text (U+202E, U+200B, U+FEFF) and line or paragraph separators.
ODD_CATEGORIES = ("Cc", "Cf", "Zl", "Zp")
#: Format characters a name may hold, shown as they are: the zero-width non-joiner and joiner that Persian
#: words and emoji need.
JOINERS = "\u200c\u200d"
_ESCAPE = re.compile(r"\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8})")


def in_memories(text: str) -> bool:
    """Whether ``text`` is a memory tool path: :data:`MEMORIES_PREFIX` itself or a path below it."""
    return text == MEMORIES_PREFIX or text.startswith(MEMORIES_PREFIX + "/")


def odd(char: str) -> bool:
    """Whether ``char`` is a control or invisible character (see :data:`ODD_CATEGORIES`)."""
    return char not in JOINERS and unicodedata.category(char) in ODD_CATEGORIES


def require_plain(names: Iterable[str], shown: str) -> None:
    """Refuse new file or folder ``names`` (of path ``shown``) holding a control or invisible character or a backslash."""
    for name in names:
        if "\\" in name:
            raise InvalidArgument(f"path {shown[:120]!r} has a backslash in the new name {escape(name)[:80]!r}: "
                                  "choose a name without one, and separate directories with '/'")
        char = next((c for c in name if odd(c)), None)
        if char is not None:
            what = unicodedata.name(char, "a control character")
            raise InvalidArgument(f"path {ascii(shown)[:120]} has U+{ord(char):04X} ({what}) in the new name {ascii(name)[:80]}: "
                                  "control and invisible characters garble or disguise a name; choose one of visible "
                                  "characters, e.g. '/memories/notes/today.md'")


def lookalikes(name: str, siblings: Iterable[str]) -> list[str]:
    """The ``siblings`` (names in one directory) other than ``name`` itself whose NFC form is ``name``'s, sorted."""
    key = unicodedata.normalize("NFC", name)
    return sorted(s for s in siblings if s != name and unicodedata.normalize("NFC", s) == key)


def lookalike_path(root: Path, parts: list[str]) -> str | None:
    """For a read of ``parts`` (below ``root``) that found nothing: the relative path with each missing name
    replaced by its one look-alike, or None (nothing to resolve, several look-alikes, or a link on the way).
    Only names are chosen here: the caller reads the path returned through its own gate, which decides on it."""
    here, found = root, []
    for part in parts:
        try:
            st = os.lstat(here / part)
        except FileNotFoundError:
            try:
                twins = lookalikes(part, os.listdir(here))
            except OSError:
                return None
            if len(twins) != 1:
                return None
            part = twins[0]
            try:
                st = os.lstat(here / part)
            except OSError:
                return None
        except OSError:
            return None
        if stat.S_ISLNK(st.st_mode) and len(found) < len(parts) - 1:
            return None  # a folder link is never passed (a file link is the read gate's to judge)
        found.append(part)
        here = here / part
    return "/".join(found) if found != parts else None


def _escaped(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def escape(text: str) -> str:
    """``text`` (a name or relative path) with each backslash and control or invisible character escaped."""
    if "\\" not in text and not any(odd(c) for c in text):
        return text
    return "".join(_escaped(c) if c == "\\" or odd(c) else c for c in text)


def unescape(name: str, given: str) -> str:
    """One name (no ``/``) of path ``given`` with the escapes :func:`escape` writes read back; a backslash
    that starts none of them is refused, as is an escape of ``/``, NUL or no character."""

    def char(match: re.Match) -> str:
        code = int(match.group(1)[1:], 16)
        if code in (0, 0x2F) or 0xD800 <= code <= 0xDFFF or code > 0x10FFFF:
            raise InvalidArgument(f"path {given[:120]!r} has the escape \\{match.group(1)}, which no name can hold: "
                                  "give the path as view shows it")
        return chr(code)

    if "\\" not in _ESCAPE.sub("", name):
        return _ESCAPE.sub(char, name)
    raise InvalidArgument(f"path {given[:120]!r} contains a backslash: separate directories with '/' (in a name that "
                          "view shows escaped, \\xNN, \\uNNNN and \\UNNNNNNNN stand for one character each)")
