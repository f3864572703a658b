"""The write path of memory: the six commands of Claude's memory tool, each leaving the tree valid Agent Memory.

:class:`Editor` runs ``view``, ``create``, ``str_replace``, ``insert``, ``delete`` and ``rename`` (the
commands and argument names of Claude's ``memory_20250818`` tool) on one memory root. Every write

* lands only where memory may be (:func:`~memsearch.memory.placement.locate`): inside the root, a
  Markdown file, never hidden, never in a foreign directory, never the index, never through a link;
* is atomic: a temporary file is flushed and renamed over the target, so a crash leaves the old file
  or the new one; directories are removed by renaming them to a hidden name first;
* keeps every directory valid: a file written into a directory without ``MEMORY.md`` first creates
  that ``MEMORY.md`` (and any missing ancestor's, the root's included), titled from the directory
  name; deleting or moving a ``MEMORY.md`` its directory still needs is refused (:class:`EditRefused`);
* keeps core memory within its budget (the validator's: ``budget=``, else ``MEMSEARCH_CORE_BUDGET``,
  else 30,000 tokens): a write that would pass it is refused with the numbers
  (:class:`CoreBudgetExceeded`) and nothing is written;
* is private: a new file is 0600 and a new directory 0700 whatever the umask, plus the read (and
  search) bits of a root shared for reading (:func:`~memsearch.memory.files.private_modes`);
* runs under the root's write lock (threads and processes), and calls ``on_change`` with the paths
  it changed before returning, so the caller can bring the index in line (read-your-writes).

Refusals are typed errors from :mod:`memsearch.errors` whose message says how to fix the call.
"""

from __future__ import annotations

import os
import stat
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Callable, Iterator, Sequence

from ..errors import (
    EditRefused,
    Hint,
    InvalidArgument,
    MemoryFileExists,
    MemoryFileNotFound,
    MemsearchError,
    NotMemoryFile,
)
from . import rootfs
from .commands import ARGUMENTS, COMMANDS, EditResult, check_arguments
from .files import atomic_write_bytes, make_dir, private_modes
from .guards import check_budget, check_index_name, check_index_text, date_note, front_matter_note, index_needed
from .matching import match_lines, not_unique
from .placement import Target, check_growth, index_text, locate, require_markdown, write_lock
from .pointers import renew_indexes, stale_mentions
from .tokens import encoding_name
from .tree import (
    INDEX_NAME,
    MemoryTree,
    ancestors,
    foreign_dirs,
    parent_dir,
    printable,
    read_memory,
    resolve_root,
    scan,
    valid_name,
)
from .validator import core_budget
from .viewing import edit_lines, render_file, render_listing, snippet

__all__ = ["Editor", "EditResult", "COMMANDS", "ARGUMENTS", "index_text"]

_BOM = b"\xef\xbb\xbf"

OnChange = Callable[[tuple[str, ...]], "dict | None"]


def _ancestors(directory: str) -> list[str]:
    """``"."`` and every directory from the top down to ``directory`` itself."""
    return ["."] if directory == "." else ["."] + ancestors(directory) + [directory]


class Editor:
    """The memory-tool commands on one root. ``budget``: core memory tokens (see module doc);
    ``protect``: directories never written (the index); ``on_change``: called with the changed
    relative paths after every write, its return value lands in :attr:`EditResult.index`."""

    def __init__(self, root: str | os.PathLike[str], *, budget: int | None = None, encoding: str | None = None,
                 foreign=None, protect: Sequence[str | os.PathLike[str]] = (), on_change: OnChange | None = None,
                 lock_timeout: float | None = None):
        self.root = resolve_root(root)
        self.budget = core_budget(budget)
        self.encoding = encoding_name(encoding)
        self.foreign = foreign_dirs(foreign)
        self.protect = tuple(Path(p).expanduser().resolve() for p in protect)
        self.on_change = on_change
        self.lock_timeout = lock_timeout

    def run(self, command: str, **arguments) -> EditResult:
        """Run one command with the memory tool's arguments (None means omitted)."""
        args = check_arguments(command, arguments)
        return getattr(self, command)(**args)

    # --- shared checks ------------------------------------------------------------------------
    def _locate(self, path: str, new: bool = False, itself: Target | None = None) -> Target:
        return locate(self.root, path, foreign=self.foreign, protect=self.protect, new=new, itself=itself)

    def _scan(self) -> MemoryTree:
        return scan(self.root, foreign=self.foreign)

    def _file(self, target: Target, command: str) -> str:
        """The text of an existing file (a BOM is dropped: :meth:`_write` puts it back); only ``view`` takes one
        that is not Markdown (already in the tree): the writes edit Markdown only."""
        try:
            st = os.lstat(target.path)
        except FileNotFoundError:
            raise MemoryFileNotFound(f"{target.shown} does not exist: view {target.show(self._scan().nearest_dir(target.rel))} to see "
                                     "its files" + (", or create it" if command != "view" else "")) from None
        if stat.S_ISDIR(st.st_mode):
            raise InvalidArgument(f"{target.shown} is a directory; {command} works on a file: view it to list its files")
        if not stat.S_ISREG(st.st_mode):
            raise NotMemoryFile(f"{target.shown} is not a regular file (a link, device or pipe): view "
                                f"{target.show(parent_dir(target.rel))} to see the files")
        if command != "view":
            require_markdown(target, command)
        raw = self._read(target.rel, target.shown)
        try:
            return raw.removeprefix(_BOM).decode("utf-8")
        except UnicodeDecodeError as exc:
            if command == "view":
                raise EditRefused(f"{target.shown} is not a valid UTF-8 text file (byte {exc.start}), so view cannot "
                                  "show it: delete it if it does not belong in memory") from None
            raise EditRefused(f"{target.shown} is not valid UTF-8 (byte {exc.start}), so editing it could garble it; "
                              "nothing was changed", hint=Hint("resave", target.rel)) from None

    def _missing_indexes(self, directory: str, *, filled: str | None = None) -> list[str]:
        """Directories from the root down to ``directory`` that lack ``MEMORY.md`` (``filled``: one the write itself fills).

        An existing ``MEMORY.md`` of any kind (a link too) counts: it is never overwritten."""
        return [d for d in _ancestors(directory)
                if d != filled and not os.path.lexists((self.root if d == "." else self.root / d) / INDEX_NAME)]

    def _check_budget(self, changes: dict[str, str | None], target: Target, command: str) -> int | None:
        """Core tokens after ``changes`` (:func:`~.guards.check_budget`: refused past the budget), None if no core file."""
        return check_budget(changes, target, command, lambda: self._scan().core_files, self._plain, self.encoding,
                            self.budget)

    def _plain(self, rel: str) -> str:
        """Text of a memory file for counting (a core file may be a link inside the root: the read gate follows it)."""
        return read_memory(self.root, rel, foreign=self.foreign)[0].removeprefix(_BOM).decode("utf-8", errors="replace")

    # --- by descriptor: every write and read below goes through a directory opened without links ---
    @contextmanager
    def _dir(self, directory: str, given: str) -> Iterator[int]:
        """A descriptor of memory directory ``directory`` (``"."``: the root), no link passed on the way."""
        root_fd = rootfs.open_root(self.root)
        try:
            opened = rootfs.walk(root_fd, str(self.root), [] if directory == "." else directory.split("/"), given, directory=True)
        finally:
            os.close(root_fd)
        try:
            yield opened.fd
        finally:
            opened.close()

    def _read(self, rel: str, given: str) -> bytes:
        with self._dir(parent_dir(rel), given) as dir_fd:
            fd = os.open(_name(rel), os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), dir_fd=dir_fd)
            try:
                return rootfs.read_fd(fd)
            finally:
                os.close(fd)

    def _write(self, rel: str, text: str, *, bom: bool = False) -> None:
        """Atomic, durable whole-file write (the shared helper, by descriptor of the parent); a new file is private."""
        with self._dir(parent_dir(rel), rel) as dir_fd:
            atomic_write_bytes(_name(rel), (_BOM if bom else b"") + text.encode("utf-8"), dir_fd=dir_fd,
                               mode=private_modes(os.stat(self.root).st_mode)[0])

    def _mkdir(self, directory: str) -> None:
        with self._dir(parent_dir(directory), directory) as dir_fd:
            if make_dir(_name(directory), dir_fd=dir_fd, mode=private_modes(os.stat(self.root).st_mode)[1]):
                os.fsync(dir_fd)

    def _finish(self, command: str, target: Target, output: str, changed: Sequence[str], created: Sequence[str] = (),
                core_tokens: int | None = None) -> EditResult:
        index = None
        if self.on_change is not None and changed:
            try:
                index = self.on_change(tuple(changed))
            except (MemsearchError, OSError) as exc:  # the write stands; say why the index lags
                index = {"synced": False, "error": f"{type(exc).__name__}: {exc}"}
        if created:
            output += (f"\nCreated {', '.join(target.show(c) for c in created)} so that every memory directory keeps "
                       "its MEMORY.md: edit it to say what the directory holds.")
        if core_tokens is not None:
            output += f"\nCore memory is now {core_tokens:,} of {self.budget:,} tokens."
        if command != "delete" and "/" not in target.rel and target.is_markdown and not (index or {}).get("core_indexed"):
            output += (f"\nThis is core memory ({target.shown}): it is in your context from the next session on "
                       "(memory_core shows it now), and memory_search does not search it. Keep core notes short; put "
                       f"detail you will search for in a folder, e.g. {target.show('notes/' + _name(target.rel))}.")
        return EditResult(command, target.shown, output, tuple(changed), tuple(created), core_tokens, index)

    # --- writing ------------------------------------------------------------------------------
    def _make_dirs(self, target: Target, filled: str | None = None) -> list[str]:
        """Create the missing directories above ``target`` and their ``MEMORY.md``, top down."""
        directory = parent_dir(target.rel)
        check_growth(self.root, target, directory)
        created = []
        for d in self._missing_indexes(directory, filled=filled):
            if d != ".":
                self._mkdir(d)
            index = INDEX_NAME if d == "." else f"{d}/{INDEX_NAME}"
            self._write(index, index_text(d))
            created.append(index)
        if directory != "." and directory == filled:
            self._mkdir(directory)  # the write itself brings its MEMORY.md
        return created

    def _foreign_content(self, target: Target) -> tuple[list[str], tuple[int, int] | None]:
        """Entries below a directory that are not memory (they would be lost or moved by a directory command).

        Listed through descriptors (:func:`~memsearch.memory.rootfs.walk_dirs`): no name from outside the root.
        Also the identity of the directory itself as listed (:attr:`~memsearch.memory.rootfs.Listed.identity`)."""
        found: list[str] = []
        identity = None
        guarded = tuple(os.path.relpath(p, self.root) for p in self.protect if self.root in p.parents)

        def stray(rel: str, entry: rootfs.Entry) -> bool:  # a plain .txt is no stray: delete removes it too
            return (entry.name.startswith(".") or not valid_name(entry.name) or entry.kind in ("link", "special")
                    or rel in self.foreign or any(rel == p or rel.startswith(p + "/") for p in guarded))

        root_fd = rootfs.open_root(self.root)
        try:
            with closing(rootfs.walk_dirs(root_fd, str(self.root), target.rel.split("/"),
                                          lambda rel, entry: not stray(rel, entry))) as listings:
                for listed in listings:
                    identity = identity or listed.identity  # the first listed: the directory itself
                    found += [f"{listed.rel}/{e.name}" for e in listed.entries if stray(f"{listed.rel}/{e.name}", e)]
                    if len(found) >= 3:
                        break
        finally:
            os.close(root_fd)
        return [printable(rel) for rel in found], identity

    # --- the commands -------------------------------------------------------------------------
    def view(self, path: str, view_range: tuple[int, int] | None = None) -> EditResult:
        """A file with line numbers (``view_range``: ``[start, end]``, end -1 the last line), or a directory two levels deep."""
        target = self._locate(path)
        if target.rel == "." or target.path.is_dir():
            if view_range is not None:
                raise InvalidArgument(f"view_range applies to files, and {target.shown} is a directory: leave it out")
            return EditResult("view", target.shown, render_listing(self.root, target, self.foreign, self.protect))
        return EditResult("view", target.shown, render_file(target, self._file(target, "view"), view_range))

    def create(self, path: str, file_text: str) -> EditResult:
        """A new Markdown file; fails if it exists."""
        target = self._locate(path, new=True)
        require_markdown(target)
        check_index_name(self.root, target, "create")
        check_index_text(target, file_text, "create")
        with write_lock(self.root, self.lock_timeout):
            if os.path.lexists(target.path):
                kind = "directory" if target.path.is_dir() else "file"
                raise MemoryFileExists(f"{target.shown} already exists (a {kind}): create makes new files only; change it "
                                       "with str_replace or insert, or choose another name")
            filled = parent_dir(target.rel) if target.rel.rsplit("/", 1)[-1] == INDEX_NAME else None
            missing = self._missing_indexes(parent_dir(target.rel), filled=filled)
            changes = {target.rel: file_text} | {(INDEX_NAME if d == "." else f"{d}/{INDEX_NAME}"): index_text(d) for d in missing}
            core = self._check_budget(changes, target, "create")
            created = self._make_dirs(target, filled)
            self._write(target.rel, file_text)
            return self._finish("create", target, f"File created successfully at: {target.shown}",
                                created + [target.rel], created, core)

    def str_replace(self, path: str, old_str: str, new_str: str) -> EditResult:
        """Replace the one occurrence of ``old_str``; zero or several occurrences are an error naming the lines."""
        target = self._locate(path)
        if old_str == "":
            raise InvalidArgument("str_replace: 'old_str' is empty: give the exact text to replace (view the file to copy it)")
        with write_lock(self.root, self.lock_timeout):
            text = self._file(target, "str_replace")
            count, exact, starts, lines = match_lines(text, old_str)
            if count != 1:
                raise not_unique(target.shown, count, exact, lines)
            new_text = text[: starts[0]] + new_str + text[starts[0] + len(old_str):]
            check_index_text(target, new_text, "str_replace")
            core = self._check_budget({target.rel: new_text}, target, "str_replace")
            self._write(target.rel, new_text, bom=self._has_bom(target))
            first = text.count("\n", 0, starts[0]) + 1
            shown = snippet(new_text, first, first + new_str.count("\n"))
            told = front_matter_note(target, text, new_text, 0, 0)  # an edit of a field is no slip: only a lost front matter
            return self._finish("str_replace", target, "The memory file has been edited. Here is the snippet showing the "
                                f"change (with line numbers):\n{shown}{told}", [target.rel], (), core)

    def insert(self, path: str, insert_line: int, insert_text: str) -> EditResult:
        """Insert ``insert_text`` after line ``insert_line`` (0: before the first line)."""
        target = self._locate(path)
        with write_lock(self.root, self.lock_timeout):
            text = self._file(target, "insert")
            lines = edit_lines(text)
            if not 0 <= insert_line <= len(lines):
                raise InvalidArgument(f"insert: insert_line {insert_line} is out of range: {target.shown} has {len(lines)} lines, "
                                      f"so give 0 (before the first line) to {len(lines)} (after the last)")
            block = insert_text.rstrip("\n")  # as Claude's memory tool: one block, and the file ends in a newline
            new_text = "\n".join(lines[:insert_line] + [block] + lines[insert_line:]) + "\n"
            check_index_text(target, new_text, "insert")
            core = self._check_budget({target.rel: new_text}, target, "insert")
            self._write(target.rel, new_text, bom=self._has_bom(target))
            added = block.count("\n") + 1
            shown = snippet(new_text, insert_line + 1, insert_line + added)
            shown += front_matter_note(target, text, new_text, insert_line + 1, insert_line + added)
            return self._finish("insert", target, f"The file {target.shown} has been edited. {added} line"
                                f"{'s' if added != 1 else ''} inserted after line {insert_line}. Here is the snippet "
                                f"(with line numbers):\n{shown}", [target.rel], (), core)

    def delete(self, path: str) -> EditResult:
        """Delete a memory file or directory; never the root, never a MEMORY.md its directory needs."""
        target = self._locate(path)
        if target.rel == ".":
            raise EditRefused("the memory root cannot be deleted: delete the files or directories inside it instead")
        with write_lock(self.root, self.lock_timeout):
            if not os.path.lexists(target.path):
                near = self._scan().nearest_dir(target.rel)
                raise MemoryFileNotFound(f"{target.shown} does not exist: view {target.show(near)} to see what does")
            tree = self._scan()
            if target.path.is_dir():
                folder = self._check_directory(target, "delete")  # the folder checked, by identity: only it goes
                changed = [f for f in tree.external_files if f.startswith(target.rel + "/")]
                with self._dir(parent_dir(target.rel), target.shown) as dir_fd:
                    try:
                        removed = rootfs.remove_dir(dir_fd, _name(target.rel), folder)
                    except FileNotFoundError:
                        removed = False
                if not removed:
                    raise MemoryFileNotFound(f"{target.shown} was moved or replaced meanwhile, so nothing was deleted: "
                                             f"view {target.show(parent_dir(target.rel))} to see what is there")
                return self._finish("delete", target, f"Successfully deleted {target.shown}{self._named(target, True)}",
                                    changed)
            reason = index_needed(tree, target.rel)
            if reason:  # the root's own MEMORY.md: the root cannot be deleted either, so editing is the way
                folder = parent_dir(target.rel)
                whole = "" if folder == "." else f", or delete the whole directory {target.show(folder)}"
                raise EditRefused(f"{target.shown} cannot be deleted: {reason}. Edit it instead (str_replace or "
                                  f"insert){whole}")
            core = self._check_budget({target.rel: None}, target, "delete") if target.is_markdown else None
            with self._dir(parent_dir(target.rel), target.shown) as dir_fd:
                try:  # checked by descriptor: a name swapped meanwhile for a folder or a link is left alone
                    if not stat.S_ISREG(os.stat(_name(target.rel), dir_fd=dir_fd, follow_symlinks=False).st_mode):
                        raise IsADirectoryError
                    os.unlink(_name(target.rel), dir_fd=dir_fd)
                except (FileNotFoundError, IsADirectoryError):
                    raise MemoryFileNotFound(f"{target.shown} was moved or replaced meanwhile: view "
                                             f"{target.show(parent_dir(target.rel))} to see what is there") from None
                os.fsync(dir_fd)
            return self._finish("delete", target, f"Successfully deleted {target.shown}{self._named(target, False)}",
                                [target.rel], (), core)

    def rename(self, old_path: str, new_path: str) -> EditResult:
        """Move a memory file or directory; fails if ``new_path`` exists."""
        source = self._locate(old_path)
        dest = self._locate(new_path, new=True, itself=source)
        if "." in (source.rel, dest.rel):
            raise EditRefused("the memory root cannot be renamed, nor replaced: rename the files or directories inside it")
        with write_lock(self.root, self.lock_timeout):
            if not os.path.lexists(source.path):
                near = self._scan().nearest_dir(source.rel)
                raise MemoryFileNotFound(f"{source.shown} does not exist: view {source.show(near)} to see what does")
            if os.path.lexists(dest.path):
                raise MemoryFileExists(f"The destination {dest.shown} already exists: rename never overwrites; choose a new "
                                       "name, or delete it first")
            tree = self._scan()
            if source.path.is_dir():
                if dest.rel.startswith(source.rel + "/"):
                    raise EditRefused(f"{source.shown} cannot be moved into itself ({dest.shown}): choose a path outside it")
                if dest.rel.lower().endswith(".md"):
                    raise EditRefused(f"{source.shown} is a directory and cannot take a Markdown file's name ({dest.shown}): "
                                      "choose a directory name without '.md'")
                self._check_directory(source, "rename")
                moved = [f for f in tree.external_files if f.startswith(source.rel + "/")]
                created = self._make_dirs(dest)
                self._move(source, dest, link=False)
                changed = created + moved + [dest.rel + f[len(source.rel):] for f in moved]
                renewed = renew_indexes(changed[len(created) + len(moved):], source.rel, dest.rel, self._read, self._write)
                said = f"\nUpdated {', '.join(map(dest.show, renewed))}: it named the folder by its old path." if renewed else ""
                return self._finish("rename", dest, f"Successfully renamed {source.shown} to {dest.shown}{said}"
                                    f"{self._named(source, True, dest.shown)}", changed, created)
            require_markdown(dest)  # a file that is not Markdown may become memory
            check_index_name(self.root, dest, "rename")
            filled = parent_dir(dest.rel) if dest.rel.rsplit("/", 1)[-1] == INDEX_NAME else None
            reason = index_needed(tree, source.rel, dest.rel) if parent_dir(source.rel) != filled else None
            if reason:
                raise EditRefused(f"{source.shown} cannot be moved: {reason}. Create the new file with its text instead "
                                  "(view, then create) and edit this one")
            missing = self._missing_indexes(parent_dir(dest.rel), filled=filled)
            changes = {dest.rel: self._plain(source.rel) if source.is_markdown else self._file(source, "view"), source.rel: None}
            changes |= {(INDEX_NAME if d == "." else f"{d}/{INDEX_NAME}"): index_text(d) for d in missing}
            check_index_text(dest, changes[dest.rel], "rename")
            core = self._check_budget(changes, dest, "rename")
            created = self._make_dirs(dest, filled)
            self._move(source, dest, link=True)
            return self._finish("rename", dest, f"Successfully renamed {source.shown} to {dest.shown}"
                                f"{self._named(source, False, dest.shown)}{date_note(source, dest, changes[dest.rel])}",
                                created + [source.rel, dest.rel], created, core)

    def _check_directory(self, target: Target, command: str) -> tuple[int, int] | None:
        """Refuse a directory holding non-memory entries; else the identity of the directory checked."""
        strays, identity = self._foreign_content(target)
        if strays:
            raise EditRefused(f"{target.shown} holds entries that are not memory ({', '.join(strays)}), which {command} would "
                              "take with it: move or remove them with your own tools first, or act on the memory files one by one")
        return identity

    def _named(self, gone: Target, is_dir: bool, now: str | None = None) -> str:
        """What the result says of the MEMORY.md files above ``gone`` that still name it (:func:`.pointers.stale_mentions`)."""
        return stale_mentions(gone.rel, is_dir, self._read, gone.show, now)

    def _has_bom(self, target: Target) -> bool:
        return self._read(target.rel, target.shown)[:3] == _BOM

    def _move(self, source: Target, dest: Target, *, link: bool) -> None:
        """Move by descriptors; a file by hard link then unlink, so an existing ``dest`` is never replaced."""
        with self._dir(parent_dir(source.rel), source.shown) as src_fd, self._dir(parent_dir(dest.rel), dest.shown) as dst_fd:
            names = (_name(source.rel), _name(dest.rel))
            if link:
                try:
                    os.link(*names, src_dir_fd=src_fd, dst_dir_fd=dst_fd, follow_symlinks=False)
                except FileExistsError:
                    raise MemoryFileExists(f"{dest.shown} appeared while renaming: choose another name") from None
                except OSError:  # no hard links on this file system: a rename, checked under the lock
                    link = False
                else:
                    os.unlink(names[0], dir_fd=src_fd)
            if not link:
                os.rename(*names, src_dir_fd=src_fd, dst_dir_fd=dst_fd)
            os.fsync(src_fd)
            os.fsync(dst_fd)


def _name(rel: str) -> str:
    return rel.rsplit("/", 1)[-1]
