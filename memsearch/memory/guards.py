"""The rules a write of memory passes before it lands: a directory's ``MEMORY.md`` named exactly, never left empty,
never removed while its directory needs it, and core memory within its token budget (:class:`~.editor.Editor`);
and what a write did to a file's front matter, told in its result rather than refused."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable, Sequence

from ..errors import CoreBudgetExceeded, EditRefused
from .document import date_of, split_front_matter
from .placement import Target, index_text
from .tokens import count_tokens
from .tree import INDEX_NAME, MemoryTree, empty_index, misnamed_index, parent_dir

__all__ = ["check_index_name", "check_index_text", "index_needed", "check_budget", "front_matter_note",
           "date_note"]


def check_index_name(root: Path, target: Target, command: str) -> None:
    """Refuse a new file whose name differs from MEMORY.md by case only (``memory.md``): beside the directory's
    real index (which a write into a new directory creates) it is read as no index at all."""
    if not misnamed_index(target.rel.rsplit("/", 1)[-1]):
        return
    index = target.show(_index_of(parent_dir(target.rel)))
    there = os.path.lexists(root / _index_of(parent_dir(target.rel)))
    fix = f"edit {index} (view, then str_replace or insert)" if there else f"create {index} (the exact name)"
    raise EditRefused(f"{command} refused: {target.shown!r} differs from {INDEX_NAME} only in case, and a "
                      f"directory's index is named {INDEX_NAME} exactly (case matters), so it would be read as an "
                      f"ordinary note beside the real one. Nothing was written. To say what the directory holds, "
                      f"{fix}; for a note, choose another name")


def check_index_text(target: Target, text: str, command: str) -> None:
    """Refuse a write that leaves a MEMORY.md empty (blank): its directory would go undescribed."""
    if not empty_index(target.rel, text):
        return
    directory = parent_dir(target.rel)
    gone = "" if directory == "." else f"; to remove the directory, delete {target.show(directory)} instead"
    raise EditRefused(f"{command} refused: it would leave {target.shown} empty, and a MEMORY.md says what its "
                      "directory holds (an agent browsing memory reads it to find the directory's files). Nothing "
                      f"was written. Keep a title and a line on what the directory holds, e.g. "
                      f"{index_text(directory)!r}{gone}")


def index_needed(tree: MemoryTree, rel: str, arriving: str | None = None) -> str | None:
    """Why ``rel`` (a MEMORY.md) cannot go: what its directory still holds (``arriving``: a file the write puts there)."""
    if rel.rsplit("/", 1)[-1] != INDEX_NAME:
        return None
    directory = parent_dir(rel)
    if directory == ".":
        return "the memory root always needs its MEMORY.md"
    files = [f for f in tree.files_in(directory) if f != rel] + ([arriving] if arriving and parent_dir(arriving) == directory else [])
    dirs = list(tree.child_dirs(directory))
    if not files and not dirs:
        return None
    held = ", ".join([f.rsplit("/", 1)[-1] for f in files[:3]] + [d.rsplit("/", 1)[-1] + "/" for d in dirs[:3]])
    return f"{directory}/ still holds {held}, and every memory directory needs its MEMORY.md"


def check_budget(changes: dict[str, str | None], target: Target, command: str,
                 core_files: Callable[[], Sequence[str]], plain: Callable[[str], str], encoding: str,
                 budget: int) -> int | None:
    """Core tokens after ``changes`` (core path -> new text, None: removed), counted in ``encoding`` from the texts of
    the tree's ``core_files()`` (``plain(rel)``; asked only when a change is core); refuses
    (:class:`CoreBudgetExceeded`) a write that grows them past ``budget``."""
    core = {rel: text for rel, text in changes.items() if "/" not in rel}
    if not core:
        return None
    before = {rel: count_tokens(plain(rel), encoding) for rel in core_files()}
    after = dict(before)
    for rel, text in core.items():
        after.pop(rel, None)
        if text is not None:
            after[rel] = count_tokens(text, encoding)
    old, new = sum(before.values()), sum(after.values())
    if new > budget and new > old:
        raise CoreBudgetExceeded(_over_budget(command, target, before, after, budget), tokens=new, budget=budget)
    return new


def _over_budget(command: str, target: Target, before: dict[str, int], after: dict[str, int], budget: int) -> str:
    """The refusal of a write past the core budget: the numbers, and the calls that make room."""
    old, new = sum(before.values()), sum(after.values())
    text = (f"{command} refused: core memory (the Markdown files directly in the memory root, always in context) "
            f"would be {new:,} tokens, over its budget of {budget:,} (it is {old:,} now; this write adds {new - old:,}). "
            "Nothing was written. ")
    largest = [rel for rel, _ in sorted(before.items(), key=lambda item: -item[1]) if rel != INDEX_NAME]
    if old > budget and largest:  # full before this write: room is made by moving what is there, not by this write
        big = largest[0]
        return text + (f"Core memory is already over its budget, most of it in {target.show(big)} ({before[big]:,} "
                       f"tokens): make room first, by moving it into a folder (rename {target.show(big)} to "
                       f"{target.show('notes/' + big)}) or shortening it (str_replace), then write again.")
    name = target.rel.rsplit("/", 1)[-1]
    detail = target.show("notes/" + ("overview.md" if name == INDEX_NAME else name))
    return text + (f"Move the detail into a subdirectory instead, e.g. create {detail}, and keep at most a one-line "
                   "pointer in core memory.")


def front_matter_note(target: Target, old: str, new: str, first: int, last: int) -> str:
    """What the result of a write (its lines ``first``-``last`` in ``new``) says of the front matter of a searched
    file (one in a folder): lines inserted inside it (metadata, which memory_search never searches), or a front
    matter pushed from the top (its fields, the date among them, then count for nothing); "" otherwise."""
    if "/" not in target.rel:
        return ""
    had, _ = split_front_matter(old)
    fields, span = split_front_matter(new)
    if had and not fields:
        return (f"\nNote: {target.shown} began with front matter ({', '.join(had)}), which after this write no longer "
                "starts the file: memsearch then reads no date or title from it, and searches its lines as text. To "
                "keep it, move the front matter back to line 1, with your text after it.")
    if 1 < first < span:
        return (f"\nNote: the text is inside the front matter of {target.shown} (lines 1-{span}), which is metadata: "
                f"memory_search never finds it there. To make it searchable, put it after line {span} instead.")
    return ""


def date_note(source: Target, dest: Target, text: str) -> str:
    """What the result of renaming a searched note says when its date came from its old name and the new one gives
    it none (dated searches, ``since``/``until`` and timelines, then leave it out); "" otherwise."""
    fields, _ = split_front_matter(text)
    day = date_of(source.rel, fields)
    if "/" not in dest.rel or not dest.is_markdown or not day or date_of(dest.rel, fields):
        return ""
    folder, name = dest.rel.rsplit("/", 1)
    return (f"\nNote: the note's date ({day}) came from its old name, and {dest.shown} has none, so memory_search's "
            f"since/until and timeline no longer place it. To keep it dated, put the date in the name (e.g. "
            f"{dest.show(f'{folder}/{day}-{name}')}) or add a 'date: {day}' front matter.")


def _index_of(directory: str) -> str:
    """The path of ``directory``'s MEMORY.md (``"."``: the root's)."""
    return INDEX_NAME if directory == "." else f"{directory}/{INDEX_NAME}"
