"""One routed path for search, read, ls and core: the index's daemon when it serves, otherwise in-process.

The CLI, :func:`memsearch.search`, the tools and MCP all call these. Arguments are checked
before anything else (:func:`~memsearch.engine.search.args.check_search`), so a bad call is
refused the same way whoever would have answered it. When no daemon serves an index this
process may write, a search starts one in the background for the calls that follow
(:mod:`.autostart`) and is answered in-process: on a tree never indexed, from the files' text
rows alone while that daemon embeds them (:mod:`.firstbuild`). Read, ls and core need no model:
they never start a process, and with no daemon they answer from the files.
"""

from __future__ import annotations

from contextlib import nullcontext
from typing import TYPE_CHECKING, Callable, ContextManager, TypeVar

from .. import settings
from ..errors import IndexBuilding, IndexLocked, StorageFull
from ..location import IndexLocation
from . import autostart, firstbuild
from .client import ask

if TYPE_CHECKING:  # the fast path never imports the checker: the daemon checks what it answers
    from ..engine.search.args import SearchArgs

__all__ = ["search", "read", "ls", "core", "write", "carried_out", "held_by_server", "sync_quietly"]

Warn = Callable[[str], None]
T = TypeVar("T")


def _ask(where: IndexLocation, method: str, params: dict, *, local: bool, warn: Warn | None, model=None,
         start: bool | None = False):
    """The daemon's answer, or None (then answer in-process); with no daemon at all and ``start`` not
    False (only a search, which needs a model, passes it), maybe start one."""
    if local:
        return None
    answer = ask(where.root, method, params, db=where, warn=warn)
    if answer is None and start is not False:
        autostart.ensure(where, model=model, enabled=start, warn=warn)
    return answer


def sync_quietly(index, warn: Warn | None = None, *, defer: bool = False) -> bool:
    """Bring ``index`` up to date before an in-process search, unless another writer (a daemon) holds
    it (it keeps the index fresh) or the disk is full (search what is there; ``warn`` says so).
    ``defer``: a big first build only writes the text rows (a daemon embeds them). True when another
    writer holds the index."""
    try:
        index.sync(wait=0.0, defer=defer)
    except IndexLocked:
        return True
    except StorageFull as exc:
        if warn is not None:
            warn(f"not synced: {exc}")
    return False


def search(where: IndexLocation, args: SearchArgs | dict, *, using: Callable[[], ContextManager] | None, model=None,
           local: bool = False, sync: bool = True, guard=None, warn: Warn | None = None,
           start: bool | None = None, wait: float | None = None, coming: bool | None = None) -> list[dict] | None:
    """Hits (JSON-ready dicts, a :class:`~.firstbuild.Hits` whose ``indexing`` says how far a build under way is)
    of a checked search: from the daemon, else from the index ``using()``
    yields (synced first unless ``sync`` is False, the sync under ``guard``, a lock, when given). ``using``
    None: the daemon's answer or None (the CLI's fast path, whose ``args`` may be the unchecked
    dict of :class:`SearchArgs`'s fields: the daemon checks them before it searches). On a tree never
    indexed, see :mod:`.firstbuild`: the sync writes text rows only when a daemon is coming to embed
    them, and a search that finds another writer building (or its daemon answering IndexBuilding) waits
    for the first rows (at most ``wait`` seconds, default :data:`~.firstbuild.FIRST_ROWS_WAIT_S`). ``coming``:
    whether the per-user service, when it runs, will embed this index (default: unless ``start`` is False,
    ``--no-daemon``, which embeds here); a caller that started it passes True."""
    if isinstance(args, dict) and using is not None:
        raise TypeError("an in-process search takes checked SearchArgs")
    params = (args if isinstance(args, dict) else args.params()) | {"model": settings.get("model", model)}
    try:
        answer = _ask(where, "search", params, local=local, warn=warn, model=model, start=start)
    except IndexBuilding as exc:  # the daemon's first build has no row yet: wait for its first ones
        answer = firstbuild.await_daemon(lambda: ask(where.root, "search", params, db=where, warn=warn), exc, wait)
    if answer is not None:
        return firstbuild.Hits(answer["hits"], answer.get("indexing"))
    if using is None:
        return None
    with using() as index:
        locked = False
        if sync:  # syncs one at a time; the searches themselves run concurrently (the index is thread-safe)
            with guard if guard is not None else nullcontext():
                asked = start is not False if coming is None else coming
                coming = asked and firstbuild.daemon_coming(where)
                locked = sync_quietly(index, warn, defer=coming)
        def here() -> list[dict]:
            hits = [hit.to_dict() for hit in index.search(args)]
            return firstbuild.Hits(hits, firstbuild.indexing(index, hits))

        hits = here()
        if hits or not locked or index.rows_now():
            return hits

        def daemon():
            answer = ask(where.root, "search", params, db=where)  # quiet: asked again and again
            return None if answer is None else firstbuild.Hits(answer["hits"], answer.get("indexing"))

        return firstbuild.await_rows(where, here, index.rows_now, None if local else daemon,
                                     firstbuild.FIRST_ROWS_WAIT_S if wait is None else wait)


def read(where: IndexLocation, path: str, lines: str | None = None, *, local: bool = False,
         warn: Warn | None = None, fallback: bool = True) -> dict | None:
    """One memory file or line range (``ReadResult.to_dict()``). ``fallback`` False: the daemon's
    answer or None (read, ls and core alike). None of the three starts a daemon."""
    answer = _ask(where, "read", {"path": path, "lines": lines}, local=local, warn=warn)
    if answer is not None or not fallback:
        return answer
    from ..memory.contract import read as read_file

    return read_file(where.root, path, lines).to_dict()


def ls(where: IndexLocation, path: str = ".", *, encoding: str | None = None, local: bool = False,
       warn: Warn | None = None, fallback: bool = True) -> dict | None:
    """One memory directory's listing (``Listing.to_dict()``)."""
    encoding = settings.get("encoding", encoding)
    answer = _ask(where, "ls", {"path": path, "encoding": encoding}, local=local, warn=warn)
    if answer is not None or not fallback:
        return answer
    from ..memory.contract import list_dir

    return list_dir(where.root, path, encoding=encoding).to_dict()


def core(where: IndexLocation, *, encoding: str | None = None, local: bool = False, warn: Warn | None = None,
         fallback: bool = True) -> dict | None:
    """Core memory as it goes into a system prompt (``CoreMemory.to_dict()``)."""
    encoding = settings.get("encoding", encoding)
    answer = _ask(where, "core", {"encoding": encoding}, local=local, warn=warn)
    if answer is not None or not fallback:
        return answer
    from ..memory.contract import load_core

    return load_core(where.root, encoding=encoding).to_dict()


def held_by_server(where: IndexLocation) -> bool:
    """Whether a memsearch serving process (the per-user service, or a root's daemon) holds ``where``'s index."""
    from .process import verified_holder

    holder = verified_holder(where)
    return bool(holder and holder.get("purpose") == "watch")


def carried_out(where: IndexLocation, method: str, params: dict, here: Callable[[], T], *, progress=None,
                warn: Warn | None = None) -> tuple[dict | None, T | None]:
    """A write of the index (``index``, ``check``) by the serving process that holds it: ``(its report, None)``; else
    ``(None, here())``, the write in-process. When ``here`` meets the writer lock of a serving process that took the
    index meanwhile (the service was loading the root: its model first, then the lock), that process does the write
    after all; another writer's lock is raised as it was (its clear refusal, ``--wait``)."""
    data = write(where, method, params, progress=progress, warn=warn)
    if data is not None:
        return data, None
    try:
        return None, here()
    except IndexLocked:
        data = write(where, method, params, progress=progress, warn=warn)
        if data is None:
            raise
        return data, None


def write(where: IndexLocation, method: str, params: dict, *, progress=None, warn: Warn | None = None) -> dict | None:
    """A write of the index (``index``, ``check``; later the memory tool's) carried out by the serving process
    that holds it, with its report as the in-process call gives it; None when no such process holds it (or it
    cannot be asked): then the caller does it in-process, where another writer gets its clear refusal."""
    if not held_by_server(where):
        return None
    return ask(where.root, method, params, db=where, warn=warn, progress=progress)
