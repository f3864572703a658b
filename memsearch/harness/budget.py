"""The token budget of tool results: every cutter in one place, each cut saying in ``note`` what went and what reads on.

A result is counted as the model sees it (compact JSON, tiktoken). :class:`Budget` holds the
limit and the encoding, and cuts: search hits (snippets shortened, then low hits dropped), a read
(whole lines, the next ``start_line`` named), a listing (paged by ``offset``), core memory (whole
files, then the rest named as reads), a memory-tool ``view`` or edit snippet (numbered lines, the
next ``view_range`` named), and, last, :meth:`Budget.fit` on *every* result, which cuts whatever
string or list is still too long, so that no result leaves a tool over the budget.
"""

from __future__ import annotations

import json
from typing import Any

from .. import settings
from ..memory.document import text_lines
from ..memory.tokens import count_tokens, encoding_name, get_encoding

__all__ = ["Budget", "DEFAULT_BUDGET", "MIN_BUDGET", "RULE"]

#: Tokens one tool result may take by default (JSON as the model sees it).
DEFAULT_BUDGET = 4000
#: The smallest budget accepted: below it, an error or a cut note alone would not fit.
MIN_BUDGET = 200


def _tokens(value: Any) -> int:
    if isinstance(value, str):  # a number, not text that holds one
        raise ValueError
    return settings.whole(MIN_BUDGET)(value)


#: What a budget (``budget=``, ``serve --budget``) accepts.
RULE = settings.Rule(_tokens, f"a whole number of tokens, at least {MIN_BUDGET}")
#: Tokens kept free for the note a cut adds.
NOTE_ROOM = 80
#: Snippet lengths (tokens) tried in turn when search hits do not fit.
SNIPPET_CAPS = (400, 200, 120, 60, 30, 10)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


class Budget:
    """``limit`` tokens per result in tiktoken ``encoding``."""

    def __init__(self, limit: int | None = None, encoding: str | None = None):
        self.limit = DEFAULT_BUDGET if limit is None else settings.parsed(limit, RULE, "budget")
        self.encoding = encoding_name(encoding)

    def tokens(self, result: Any) -> int:
        """Tokens of a result as the model sees it (compact JSON)."""
        return count_tokens(json.dumps(result, ensure_ascii=False), self.encoding)

    def head(self, text: str, limit: int) -> tuple[str, int]:
        """The longest run of whole lines of ``text`` within ``limit`` tokens, and its line count.
        If the first line alone is too long, a token prefix of it (count 0)."""
        kept, used = [], 0
        for line in text_lines(text, keepends=True):  # whole lines as memory_read numbers them
            cost = count_tokens(line, self.encoding)
            if used + cost > limit:
                break
            kept.append(line)
            used += cost
        if kept or not text:
            return "".join(kept), len(kept)
        enc = get_encoding(self.encoding)
        return enc.decode(enc.encode_ordinary(text)[: max(limit, 0)]), 0

    # --- memory_search ---------------------------------------------------------------------------
    def search(self, result: dict, by_date: bool = False) -> dict:
        """``result`` of a search within the budget: snippets cut first, then hits dropped, a ranking's last
        first (its order is its ranking, whatever the scores: a spread or a lean puts lower-scored rows early),
        or with ``by_date`` (a timeline, oldest first) the least relevant, so the newest session stays."""
        if self.tokens(result) <= self.limit:
            return result
        hits = result["hits"]
        full = [h["snippet"] for h in hits]
        for cap in SNIPPET_CAPS:
            for h, text in zip(hits, full):
                h["snippet"] = self.head(text, cap)[0]
                h.pop("cut", None)
                if h["snippet"] != text:
                    h["cut"] = True
            if self.tokens(result) <= self.limit - NOTE_ROOM:
                break
        dropped = 0
        while len(hits) > 1 and self.tokens(result) > self.limit - NOTE_ROOM:
            hits.pop(min(range(len(hits)), key=lambda i: (hits[i].get("score", 0.0), -i)) if by_date else -1)
            dropped += 1
        cut = sum(1 for h in hits if h.get("cut"))
        what = [f'{_plural(cut, "snippet")} cut (marked "cut")'] if cut else []
        if dropped:
            what.append(f"{_plural(dropped, 'lower-ranked hit')} dropped")
        before = f"{result['note']}. " if result.get("note") else ""  # a partial search says so still
        result["note"] = before + (
            f"{' and '.join(what)} to fit the {self.limit}-token budget. Read a hit in full with "
            "memory_read(path, start_line, end_line); for other hits, ask for fewer (k) or narrow scope/since/until"
        )
        return result

    # --- memory_read -----------------------------------------------------------------------------
    def read(self, result: dict) -> dict:
        """``result`` of a read (path, start_line, end_line, total_lines, text) cut at a whole line."""
        if self.tokens(result) <= self.limit:
            return result
        path, start, end = result["path"], result["start_line"], result["end_line"]
        room = self.limit - self.tokens(dict(result, text="")) - 90
        kept, n = self.head(result["text"], room)
        result["text"] = kept
        if n == 0:  # one line longer than the whole budget
            result.update(end_line=start, truncated=True)
            nxt = start + 1
            result["note"] = f"line {start} alone is longer than the {self.limit}-token budget and was cut; " + (
                f"read on with memory_read(path={path!r}, start_line={nxt})"
                if nxt <= end
                else "it is the last line asked for"
            )
            return result
        last = start + n - 1
        result.update(
            end_line=last,
            truncated=True,
            next_start_line=last + 1,
            note=f"cut after line {last} of {result['total_lines']} to fit the {self.limit}-token budget; "
            f"read on with memory_read(path={path!r}, start_line={last + 1})",
        )
        return result

    # --- memory_list -----------------------------------------------------------------------------
    def listing(self, result: dict, entries: list[tuple[str, dict]], offset: int) -> dict:
        """``result`` (a listing without entries) filled with the ``entries[offset:]`` that fit."""
        total = len(entries)
        used, shown = self.tokens(result) + NOTE_ROOM, 0
        for key, item in entries[offset:]:
            used += self.tokens(item) + 1
            if used > self.limit and shown:
                break
            result[key].append(item)
            shown += 1
        if offset or offset + shown < total:
            result["offset"] = offset
            if offset + shown < total:
                result["truncated"] = True
                result["note"] = (
                    f"showing entries {offset + 1}-{offset + shown} of {total} (directories first) to fit the "
                    f"{self.limit}-token budget; call memory_list(path={result['path']!r}, offset={offset + shown}) "
                    "for the rest"
                )
        return result

    # --- memory_core -----------------------------------------------------------------------------
    def core(self, result: dict, files) -> dict:
        """``result`` of memory_core; ``files``: the core files (``path``, ``text``), rendered whole while they fit."""
        if self.tokens(result) <= self.limit:
            return result
        room = self.limit - self.tokens(dict(result, rendered="")) - 60 - 25 * len(files)
        blocks, rest = [], []
        for f in files:
            if rest:
                rest.append(f"memory_read(path={f.path!r})")
                continue
            opened = f'<memory_file path="{f.path}">\n'
            body = f.text.rstrip() + "\n"
            kept, n = self.head(body, room - count_tokens(opened + "</memory_file>", self.encoding))
            if kept == body:
                blocks.append(f"{opened}{body}</memory_file>")
                room -= count_tokens(blocks[-1] + "\n\n", self.encoding)
                continue
            if n:
                blocks.append(f"{opened}{kept}</memory_file>")
            rest.append(f"memory_read(path={f.path!r}, start_line={n + 1})" if n else f"memory_read(path={f.path!r})")
        result["rendered"] = "\n\n".join(blocks)
        result["truncated"] = True
        result["note"] = f"core memory cut to fit the {self.limit}-token budget; read the rest with " + ", ".join(rest)
        return result

    # --- memory (the write tool) -----------------------------------------------------------------
    def memory(self, result: dict) -> dict:
        """A memory-tool result: its ``result`` text cut at a numbered line, the note naming the next ``view_range``."""
        if self.tokens(result) <= self.limit:
            return result
        lines = result["result"].split("\n")
        room = self.limit - self.tokens(dict(result, result="")) - NOTE_ROOM
        kept, used = [lines[0]], count_tokens(lines[0], self.encoding)
        for line in lines[1:]:
            used += count_tokens(line, self.encoding) + 1
            if used > room:
                break
            kept.append(line)
        if len(kept) == len(lines):  # the text fits: something else is long
            return result
        result["truncated"] = True
        first = lines[len(kept)].split("\t", 1)[0].strip()
        if result.get("command") == "view" and len(kept) == 1 and first.isdigit():  # a file's line over the budget
            result["result"] = "\n".join(kept + [self.head(lines[1], room - count_tokens(lines[0], self.encoding))[0]])
            result["note"] = f"line {first} alone is longer than the {self.limit}-token budget and was cut; " + (
                f"call view with view_range [{int(first) + 1}, -1] for the lines after it"
                if len(lines) > 2
                else "it is the last line asked for"
            )
            return result
        result["result"] = "\n".join(kept)
        numbered = [line.split("\t", 1)[0].strip() for line in kept[1:]]
        last = int(numbered[-1]) if numbered and numbered[-1].isdigit() else None
        if result.get("command") == "view":
            result["note"] = (
                f"cut to fit the {self.limit}-token budget after line {last}; call view with "
                f"view_range [{last + 1}, -1] for the rest"
                if last is not None
                else f"listing cut to fit the {self.limit}-token budget; view a subdirectory to see the rest"
            )
        else:
            result["note"] = f"the result text was cut to fit the {self.limit}-token budget" + (
                f" after line {last}; view {result.get('path')} with view_range [{last + 1}, -1] to see the rest"
                if last is not None
                else "; view the path to see the change"
            )
        return result

    # --- every result ----------------------------------------------------------------------------
    def fit(self, result: dict) -> dict:
        """``result`` within the budget, whatever its shape: the longest strings and lists still over it
        are cut (a string at a whole line where it can, a list to its first items) and ``note`` says so."""
        over = self.tokens(result) - self.limit
        if over <= 0:
            return result
        cut: list[str] = []
        for _ in range(8):
            over = self.tokens(result) - (self.limit - NOTE_ROOM - 20 * len(cut))
            if over <= 0:
                break
            key = max(
                (k for k in result if k != "note" and isinstance(result[k], (str, list))),
                key=lambda k: self.tokens(result[k]),
                default=None,
            )
            if key is None:
                break
            value = result[key]
            keep = max(self.tokens(value) - over - 10, 0)
            result[key] = self._shrink(value, keep)
            if key not in cut:
                cut.append(key)
        result["truncated"] = True
        what = ", ".join(repr(k) for k in cut)
        result["note"] = f"{what} cut to fit the {self.limit}-token budget" + (
            f"; {result['note']}" if isinstance(result.get("note"), str) else ""
        )
        if self.tokens(result) > self.limit:  # a note too long: keep it short
            result["note"] = result["note"][:200]
        return result

    def _shrink(self, value, keep: int):
        """``value`` (a string or a list) cut to about ``keep`` tokens; a list of strings says how many items went."""
        if isinstance(value, str):
            return self.head(value, keep)[0]
        if isinstance(value, list):
            items, used = [], 2
            for item in value:
                used += self.tokens(item) + 1
                if used > keep:
                    break
                items.append(item)
            if len(items) < len(value) and all(isinstance(item, str) for item in value):
                items.append(f"... {len(value) - len(items):,} more")
            return items
        return value
