"""An integrity check of one index against its Markdown (as ``PRAGMA integrity_check`` is for SQLite), and its repair.

LanceDB stores no checksum over column data: bytes overwritten inside a data file can leave a
table that reads through without an error and answers with wrong hits. :func:`check_index`
therefore verifies what the rows *say*:

* the tables read through and their indexes answer (:meth:`~.storage.store.Store.check`);
* every vector is finite and, for a model that normalises (all of models.toml), of unit length;
  rows that share an embedded text (its hash) share one vector; a row written text-first (zeros,
  embed hash ``TEXT_ONLY``) is not embedded yet: its file is recorded incomplete, and such a row
  in a file recorded complete differs from what a sync writes (below);
* for every file whose content still hashes to what the files table stored, the file is chunked
  again (no embedding) and each stored row must equal, column by column, the row a sync would
  write now (text, heading, lines, hashes, ids, keyword text ...); no row missing, none extra;
* no rows for a file the files table does not know.

A file changed since it was indexed is *stale*, not damaged: ``memsearch index`` brings it in.
:func:`repair_index` deletes the rows and records of the damaged files and indexes them again
(fresh embeddings: a damaged vector is never reused), or rebuilds the whole index when the damage
is not confined to known files.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

import numpy as np
import pyarrow as pa

from ..errors import Hint, MemsearchError, NoIndex
from ..memory.document import decode
from ..memory.tree import read_memory, scan
from .ingest.batches import batch_rows, blake, counters, file_pieces
from .storage.damage import reason_of
from .storage.schema import TEXT_ONLY, chunk_schema

__all__ = ["Finding", "CheckReport", "check_index", "repair_index", "require_index", "NORM_TOLERANCE"]


def require_index(where) -> None:
    """Raise :class:`~memsearch.errors.NoIndex` when the :class:`~memsearch.location.IndexLocation` ``where`` holds
    no index (never built: no parameters and no table), so that a check says so instead of "0 rows: ok"; nothing is
    created to find out."""
    if where.remote:
        from .storage.remote import RemoteDB

        built = RemoteDB.parse(where.remote).read_meta() is not None
    else:
        built = where.meta_file.is_file() or any(where.state.glob("*.lance"))
    if not built:
        from ..location import DB_DIRNAME

        default = not where.remote and where.state == where.root / DB_DIRNAME
        raise NoIndex(f"no index yet at {where.label}, so nothing to check",
                      hint=Hint("index", root=where.root, db=None if default else where.label))


#: How far a stored vector's length may stray from 1 (float32 round-off of a normalised vector is ~1e-7;
#: a byte overwritten in a component moves it by orders of magnitude more, or makes it NaN/inf).
NORM_TOLERANCE = 1e-3
#: The columns compared with a fresh chunking (``mtime_ns`` is left out: a touch updates the files
#: table only; ``vector`` is checked on its own).
_COMPARED = ("id", "path", "dir", "depth", "heading", "start_line", "end_line", "text", "search_text", "tokens",
             "file_hash", "embed_hash", "date", "model")
_SHOWN_FINDINGS = 50


@dataclass(frozen=True)
class Finding:
    """One problem; ``kind``: ``table`` (the store itself), ``vector``, ``row``, ``missing``, ``extra``, ``orphan``."""

    kind: str
    path: str
    detail: str


@dataclass(frozen=True)
class CheckReport:
    rows: int = 0
    files: int = 0
    findings: tuple[Finding, ...] = ()
    #: Files changed (or gone) since they were indexed: not damage, ``memsearch index`` updates them.
    stale: tuple[str, ...] = ()
    #: What a repair did ("" when none ran).
    repaired: str = ""
    #: Files known to the index and on disk: damage confined to these is repaired file by file.
    known: frozenset[str] = field(default=frozenset(), repr=False)
    #: How many findings there were when ``findings`` holds only the first ones (a report sent by the service).
    total: int = field(default=0, repr=False)

    @property
    def ok(self) -> bool:
        return not self.findings

    @property
    def findings_total(self) -> int:
        return max(self.total, len(self.findings))

    @property
    def damaged_files(self) -> tuple[str, ...]:
        return tuple(sorted({f.path for f in self.findings if f.path}))

    @property
    def needs_rebuild(self) -> bool:
        """Damage a file-by-file repair cannot reach: the store itself, or rows of no known file."""
        return any(f.kind == "table" or f.path not in self.known for f in self.findings)

    def to_dict(self) -> dict:
        data = asdict(self)
        data.pop("known")
        data.pop("total")
        data["ok"] = self.ok
        data["findings"] = [asdict(f) for f in self.findings[:_SHOWN_FINDINGS]]
        data["findings_total"] = self.findings_total
        return data

    @classmethod
    def from_dict(cls, data: dict) -> "CheckReport":
        """The report :meth:`to_dict` gave (the first findings, and their total)."""
        return cls(rows=data["rows"], files=data["files"], findings=tuple(Finding(**f) for f in data["findings"]),
                   stale=tuple(data["stale"]), repaired=data["repaired"], total=data["findings_total"])


class _AnyVector(dict):
    """Stands in for the vectors of a sync: the check compares every column but the vector."""

    def __missing__(self, key):
        return None


def _digest(values: dict) -> str:
    return blake(json.dumps([values[c] for c in _COMPARED], ensure_ascii=False, default=str).encode())


def _normalises(embedder) -> bool:
    return bool(getattr(getattr(embedder, "spec", None), "normalize", True))


def check_index(index) -> CheckReport:
    """Verify the index of a :class:`~memsearch.engine.index.MemoryIndex` against its Markdown (see module doc)."""
    store = index.store
    store.refresh()
    problem = store.check()
    if problem is not None:
        return CheckReport(findings=(Finding("table", "", problem),))
    findings: list[Finding] = []
    states = store.file_states()
    stored: dict[str, dict[str, str]] = {}  # path -> row id -> digest of the compared columns
    by_hash: dict[str, tuple[str, str]] = {}  # embed hash -> (vector digest, path of its first row)
    rows = 0
    unit = _normalises(index.embedder)
    try:
        for batch in store.scan_rows(list(_COMPARED) + ["vector"]):
            data = batch.to_pydict()
            n = batch.num_rows
            rows += n
            vectors = batch.column("vector").flatten().to_numpy(zero_copy_only=False).reshape(n, -1)
            with np.errstate(all="ignore"):  # NaN/inf in a damaged vector is what is being looked for
                finite = np.isfinite(vectors).all(axis=1)
                norms = np.linalg.norm(np.where(np.isfinite(vectors), vectors, 0), axis=1)
            for i in range(n):
                values = {c: data[c][i] for c in _COMPARED}
                path = values["path"]
                if values["embed_hash"] == TEXT_ONLY and finite[i] and norms[i] == 0:
                    stored.setdefault(path, {})[values["id"]] = _digest(values)  # written text-first, not embedded yet
                    continue
                if not finite[i] or (unit and abs(norms[i] - 1) > NORM_TOLERANCE) or norms[i] == 0:
                    what = "NaN or infinite components" if not finite[i] else f"length {norms[i]:.4g}, not 1"
                    findings.append(Finding("vector", path, f"row {values['id']} (lines {values['start_line']}-"
                                                            f"{values['end_line']}): its vector has {what}"))
                seen = by_hash.setdefault(values["embed_hash"], (blake(vectors[i].tobytes()), path))
                if seen[0] != blake(vectors[i].tobytes()):
                    findings.append(Finding("vector", path, f"row {values['id']}: its vector differs from another "
                                                            f"row's for the same text ({seen[1]})"))
                    findings.append(Finding("vector", seen[1], "a vector differs from another row's for the same text"))
                stored.setdefault(path, {})[values["id"]] = _digest(values)
    except (OSError, RuntimeError, ValueError) as exc:
        return CheckReport(rows=rows, findings=(Finding("table", "", f"chunks table: {reason_of(exc)}"),))

    tree = scan(index.root, foreign=index.foreign)
    wanted = set(tree.indexed_files(index.include_core))
    count, cut = counters(index.encoding)
    stale: list[str] = []
    known: set[str] = set()
    for path in sorted(set(states) | set(stored)):
        state = states.get(path)
        if state is None:
            findings.append(Finding("orphan", path, f"{len(stored[path])} rows of a file the index has no record of"))
            continue
        if path not in wanted or not state.file_hash:
            stale.append(path)  # deleted since, or its sync was cut short: the next sync settles it
            continue
        try:
            raw = read_memory(index.root, path, foreign=index.foreign)[0]
        except (MemsearchError, OSError):
            stale.append(path)
            continue
        known.add(path)
        if blake(raw) != state.file_hash:
            stale.append(path)
            continue
        record = {"path": path, "file_hash": state.file_hash, "mtime_ns": state.mtime_ns, "size": state.size,
                  "chunks": 0}
        pieces = list(file_pieces(path, decode(raw), record, count, cut, index.chunker, index.embedder))
        final = pieces[-1].run
        cols, _ = batch_rows([p for p in pieces if p.run is final], _AnyVector(), index.embedder.name, set())
        expected = {cols["id"][i]: _digest({c: cols[c][i] for c in _COMPARED}) for i in range(len(cols["id"]))}
        have = stored.get(path, {})
        for row_id, digest in have.items():
            if row_id not in expected:
                findings.append(Finding("extra", path, f"row {row_id} matches no chunk of the file"))
            elif expected[row_id] != digest:
                findings.append(Finding("row", path, f"row {row_id} differs from the file's chunk "
                                                     "(text, lines or hashes)"))
        missing = len(set(expected) - set(have))
        if missing:
            findings.append(Finding("missing", path, f"{missing} of its {len(expected)} chunks have no row"))
    return CheckReport(rows=rows, files=len(known), findings=tuple(findings), stale=tuple(stale),
                       known=frozenset(known))


def repair_index(index, report: CheckReport, *, wait: float | None = 0.0, progress=None) -> CheckReport:
    """Repair what ``report`` found, under the writer lock, and check again (the new report says what was done).

    Damage confined to known files: their rows and records are deleted and the files indexed again
    (embedded afresh). Anything else, or a targeted repair that fails: the index is rebuilt from the Markdown.
    """
    if report.ok:
        return report
    files = report.damaged_files
    done = ""
    if not report.needs_rebuild:
        try:
            with index.lock.writing(timeout=wait):
                dimension = index.store.dimension()
                empty = pa.Table.from_pylist([], schema=chunk_schema(dimension))
                index.store.replace_files(empty, list(files), [])
            index.sync(only=list(files), progress=progress, wait=wait)
            done = f"re-indexed {len(files)} damaged file{'s' if len(files) != 1 else ''}: {', '.join(files[:5])}"
        except (OSError, RuntimeError, ValueError) as exc:
            done = f"a file-by-file repair failed ({reason_of(exc)})"
    if not done or done.startswith("a file-by-file"):
        with index.lock.writing(timeout=wait):
            index.rebuild(f"memsearch check found damage ({report.findings[0].detail})", progress)
        done = (done + "; " if done else "") + "rebuilt the index from the Markdown"
    after = check_index(index)
    return CheckReport(after.rows, after.files, after.findings, after.stale, done, after.known)
