"""BM25 keyword search held in memory for one table version, scored as LanceDB's full-text index scores.

LanceDB answers a full-text query in about 6 ms at 2.3k rows and scans every row written since
its index was last built; this copy answers in well under a millisecond, and has no tail: it is
built from the rows of one table version (``search_text``, what the FTS index sees) and rebuilt
when the version changes, like :mod:`memsearch.engine.search.flat` for vectors. LanceDB stays the
system of record; this is derived from it and never written.

:class:`Analyzer` reproduces the analysis :meth:`memsearch.engine.storage.store.Store.ensure_indexes`
configures (LanceDB's defaults, checked term by term against LanceDB in tests/engine/test_bm25.py):
split at every character that is not a letter, digit or spacing mark; drop words of
MAX_TOKEN_BYTES bytes or more; lower-case; Snowball English stemming; drop a word whose *stem*
is a stop word (LanceDB stems first); ASCII folding. Positions count every word, dropped ones
too, so a phrase (``"hello world"``, the whole query in double quotes) matches where its terms
stand at the same distances, as in LanceDB. Scores are BM25 summed over the query's terms,
repeats counted, with LanceDB's constants; a phrase hit scores as its terms do.
"""

from __future__ import annotations

import logging
import re
import sys
import threading
import unicodedata
from typing import Sequence

import numpy as np
import pyarrow as pa

from ..storage.filter import Filter

__all__ = ["Analyzer", "MemoryBM25", "KeywordCopy", "BM25_K1", "BM25_B", "MAX_TOKEN_BYTES", "STOP_WORDS", "ROW_CACHE_ROWS"]

logger = logging.getLogger("memsearch.bm25")

#: BM25 term-frequency saturation and length normalisation: LanceDB's own (lance-index's
#: scorer), so that scores, and the convex fusion that min-max normalises them, are unchanged.
BM25_K1 = 1.2
BM25_B = 0.75
#: LanceDB's ``max_token_length`` default: a word of this many UTF-8 bytes or more is dropped.
MAX_TOKEN_BYTES = 40
#: Words remembered by one :class:`Analyzer` (raw word -> term) before a fresh one starts: the
#: cache only grows, and a long-lived daemon sees ever new words.
ANALYZER_MAX_WORDS = 500_000
#: Rows a copy keeps as Python dicts once a search returned them (emptied when full): making a
#: search's 100 rows from Arrow (``take`` + ``to_pylist``) was 0.15 of the 0.9 ms of CPU a served
#: search of examples/memory spent past the query encode (py-spy), against about 0.01 from the dicts.
#: 4096 rows hold a small index whole for about 3 MB (in :attr:`MemoryBM25.nbytes`).
ROW_CACHE_ROWS = 4096
#: LanceDB's English stop words (NLTK's list; the forms with an apostrophe can never be one word).
STOP_WORDS = frozenset("""
a about above after again against ain all am an and any are aren as at be because been before being below
between both but by can couldn d did didn do does doesn doing don down during each few for from further had
hadn has hasn have haven having he her here hers herself him himself his how i if in into is isn it its itself
just ll m ma me mightn more most mustn my myself needn no nor not now o of off on once only or other our ours
ourselves out over own re s same shan she should shouldn so some such t than that the their theirs them
themselves then there these they this those through to too under until up ve very was wasn we were weren what
when where which while who whom why will with won wouldn y you your yours yourself yourselves
""".split())
#: Letters ASCII folding maps to more than their base letter (NFKD leaves them whole).
_FOLD = str.maketrans({"ß": "ss", "æ": "ae", "œ": "oe", "ø": "o", "ł": "l", "đ": "d", "ð": "d", "þ": "th",
                       "ı": "i", "ŀ": "l", "ŧ": "t", "ħ": "h", "ĸ": "q", "ſ": "s"})


def _fold_char(char: str) -> str:
    code = ord(char)
    if 0xC0 <= code <= 0x24F or 0x1E00 <= code <= 0x1EFF or 0xFF01 <= code <= 0xFF5E:  # Latin, full-width ASCII
        return "".join(c for c in unicodedata.normalize("NFKD", char.translate(_FOLD)) if not unicodedata.combining(c))
    return char


_ASCII_WORDS = re.compile("[A-Za-z0-9]+")
_WORDS: re.Pattern | None = None
_WORDS_LOCK = threading.Lock()
_ROW_DICT_BYTES = 600  # a row's dict and its eight Python values beyond their Arrow bytes (sys.getsizeof)


def _word_pattern() -> re.Pattern:
    """Runs of letters, digits and spacing marks: Rust's ``char::is_alphanumeric``, which LanceDB's
    simple tokenizer splits at, counts vowel signs (Devanagari "ि") as letters; Python's ``\\w``
    does not. Built once, at the first analysis (a scan of the code points, ~50 ms)."""
    global _WORDS
    with _WORDS_LOCK:
        if _WORDS is None:
            marks: list[list[int]] = []
            for code in range(0x300, 0x20000):
                char = chr(code)
                if unicodedata.category(char) in ("Mn", "Mc") and not unicodedata.combining(char):
                    if marks and marks[-1][1] == code - 1:
                        marks[-1][1] = code
                    else:
                        marks.append([code, code])
            ranges = "".join(f"{re.escape(chr(a))}-{re.escape(chr(b))}" for a, b in marks)
            _WORDS = re.compile(f"[\\w{ranges}]+")
        return _WORDS


class Analyzer:
    """Text to terms as the full-text index analyses it; caches each distinct word's term id."""

    def __init__(self):
        import Stemmer  # PyStemmer: Snowball's English stemmer, the one LanceDB runs

        self._stem = Stemmer.Stemmer("english").stemWord
        self._words = _word_pattern()
        self.ids: dict[str, int] = {}  # term -> id, for this analyzer's lifetime
        self.known: dict[str, int] = {}  # raw word -> term id, -1 when dropped
        self._lock = threading.Lock()  # term ids are handed out under it

    def __len__(self) -> int:
        return len(self.known)

    def words(self, text: str) -> list[str]:
        if text.isascii():
            return _ASCII_WORDS.findall(text)
        return self._words.findall(text.replace("_", " "))

    def term(self, word: str) -> str | None:
        """The term ``word`` is indexed under, or None when it is dropped."""
        if len(word) >= MAX_TOKEN_BYTES or len(word.encode()) >= MAX_TOKEN_BYTES:
            return None
        stem = self._stem(word.lower())
        if stem in STOP_WORDS:
            return None
        return stem if stem.isascii() else "".join(map(_fold_char, stem))

    def word_id(self, word: str) -> int:
        found = self.known.get(word)
        if found is not None:
            return found
        term = self.term(word)
        with self._lock:
            tid = -1 if term is None else self.ids.setdefault(term, len(self.ids))
            self.known[word] = tid
        return tid

    def analyze(self, text: str) -> list[tuple[int, int]]:
        """(position, term id) of each indexed word of ``text``; positions count dropped words."""
        return [(p, t) for p, t in enumerate(map(self.word_id, self.words(text))) if t >= 0]


class MemoryBM25:
    """One table version's rows and BM25 weights, as term-major postings (doc ids, weights).

    Each distinct ``search_text`` is analysed once and its term counts kept for the next version
    (``previous``): a version that changed a few files re-analyses only their chunks.
    """

    def __init__(self, data: pa.Table, key, previous: "MemoryBM25 | None" = None):
        """``data``: the row columns and ``search_text`` of one table version (:meth:`Store.read`)."""
        self.key = key  # what it was built from: (index build id, table version)
        reuse = previous is not None and len(previous.analyzer) < ANALYZER_MAX_WORDS
        self.analyzer = previous.analyzer if reuse else Analyzer()
        known = previous._counts if reuse else {}
        # one chunk: take() over the many record batches of a 100k-row read was 47 ms a search, now under 1
        self.rows = data.select([name for name in data.column_names if name != "search_text"]).combine_chunks()
        self._row_dicts: dict[int, dict] = {}  # row number -> its dict, as searches returned it (ROW_CACHE_ROWS)
        self.texts = [t or "" for t in data.column("search_text").to_pylist()]
        n = self.n = data.num_rows
        dirs = data.column("dir").to_pylist()
        self.dir_names = sorted(set(dirs))
        codes = {d: i for i, d in enumerate(self.dir_names)}
        self.dir_codes = np.fromiter((codes[d] for d in dirs), np.int32, n)
        self.dates = np.array([d or "" for d in data.column("date").to_pylist()], dtype=str)
        fresh = list(dict.fromkeys(t for t in self.texts if t not in known))
        counted = dict(zip(fresh, self._count(fresh)))
        #: search_text -> (term ids, their counts): what this version's texts analyse to
        self._counts = {t: known.get(t) or counted[t] for t in self.texts}
        per_doc = [self._counts[t] for t in self.texts]
        terms = np.concatenate([c[0] for c in per_doc]) if n else np.zeros(0, np.int32)
        tf = np.concatenate([c[1] for c in per_doc]).astype(np.float32) if n else np.zeros(0, np.float32)
        docs = np.repeat(np.arange(n, dtype=np.int32), [c[0].size for c in per_doc])
        doc_len = np.bincount(docs, weights=tf, minlength=n).astype(np.float32)
        order = np.argsort(terms, kind="stable")  # term-major; docs stay ascending within a term
        terms, tf, self.docs = terms[order], tf[order], docs[order]
        self.vocab = vocab = len(self.analyzer.ids)  # ids handed out after this are in no row
        df = np.bincount(terms, minlength=vocab)
        self.starts = np.concatenate([[0], np.cumsum(df)])
        avgdl = float(doc_len.mean()) if n and doc_len.sum() else 1.0
        idf = np.log((n - df + 0.5) / (df + 0.5) + 1.0)
        norm = BM25_K1 * (1.0 - BM25_B + BM25_B * doc_len[self.docs] / avgdl)
        self.weights = (idf[terms] * tf * (BM25_K1 + 1.0) / (tf + norm)).astype(np.float32)
        #: What this copy holds in memory (estimated), for the bound on open indexes (harness/api.py).
        self.nbytes = self._estimate()

    def _estimate(self) -> int:
        size = sys.getsizeof
        arrays = sum(a.nbytes for a in (self.dir_codes, self.dates, self.docs, self.weights, self.starts))
        counts = size(self._counts) + sum(t.nbytes + c.nbytes + 2 * size(t[:0]) + size(k)
                                          for k, (t, c) in self._counts.items())
        words = size(self.analyzer.known) + size(self.analyzer.ids) + sum(map(size, self.analyzer.known))
        cached = min(self.n, ROW_CACHE_ROWS) * (self.rows.nbytes // max(self.n, 1) + _ROW_DICT_BYTES)
        return int(self.rows.nbytes + size(self.texts) + arrays + counts + words + cached)

    def _count(self, texts: list[str]) -> list[tuple[np.ndarray, np.ndarray]]:
        """Each text's distinct term ids and their counts, in one pass over all of them."""
        analyzer, words = self.analyzer, self.analyzer.words
        every: list[str] = []
        lengths = []
        for text in texts:
            found = words(text)
            every += found
            lengths.append(len(found))
        known = analyzer.known
        for word in {w for w in every if w not in known}:  # each new word analysed once
            analyzer.word_id(word)
        terms = np.array(list(map(known.__getitem__, every)), np.int64)
        docs = np.repeat(np.arange(len(texts), dtype=np.int64), lengths)
        keep = terms >= 0
        width = max(len(analyzer.ids), 1)
        pairs, tf = np.unique(docs[keep] * width + terms[keep], return_counts=True)  # doc-major
        bounds = np.searchsorted(pairs // width, np.arange(1, len(texts)))
        return list(zip(np.split((pairs % width).astype(np.int32), bounds), np.split(tf.astype(np.int32), bounds)))

    def _postings(self, tid: int) -> tuple[np.ndarray, np.ndarray]:
        if tid >= self.vocab:
            return self.docs[:0], self.weights[:0]
        a, b = self.starts[tid], self.starts[tid + 1]
        return self.docs[a:b], self.weights[a:b]

    def _mask(self, docs: np.ndarray, flt: Filter) -> np.ndarray:
        """Which of ``docs`` ``flt`` allows (its rules applied to distinct directories, then spread)."""
        mask = np.ones(docs.size, bool)
        allowed = flt.dir_mask(self.dir_names)
        if allowed is not None:
            mask &= allowed[self.dir_codes[docs]]
        dates = flt.date_mask(self.dates[docs])
        if dates is not None:
            mask &= dates
        return mask

    def _phrase(self, docs: np.ndarray, terms: list[tuple[int, int]]) -> np.ndarray:
        """Those of ``docs`` where ``terms`` (position, id) stand at the same distances."""
        first = terms[0][0]
        wanted = [(p - first, t) for p, t in terms]
        keep = []
        for doc in docs:
            at: dict[int, set[int]] = {}
            for p, t in self.analyzer.analyze(self.texts[int(doc)]):
                at.setdefault(t, set()).add(p)
            starts = at.get(wanted[0][1], set())
            keep.append(any(all(s + off in at.get(t, ()) for off, t in wanted[1:]) for s in starts))
        return docs[np.array(keep, bool)] if keep else docs

    def search(self, query: str, n: int, flt: Filter) -> list[dict]:
        """The ``n`` best BM25 rows for ``query`` (already through :func:`~memsearch.engine.search.cjk.keyword_text`)
        among those ``flt`` allows, each a row dict with ``score``; a query in double quotes is a phrase."""
        phrase = len(query) >= 2 and query[0] == '"' and query[-1] == '"'
        terms = self.analyzer.analyze(query[1:-1] if phrase else query)
        if not terms or not self.n:
            return []  # stop words only, like LanceDB: no rows, not an error
        scores = np.zeros(self.n, np.float32)
        hits = None
        for _, tid in terms:
            docs, weights = self._postings(tid)
            scores[docs] += weights  # a term's docs are distinct: no lost updates
            if phrase:
                hits = docs if hits is None else np.intersect1d(hits, docs, assume_unique=True)
        candidates = np.flatnonzero(scores) if hits is None else hits
        if phrase and len(terms) > 1 and candidates.size:
            candidates = self._phrase(candidates, terms)
        candidates = candidates[self._mask(candidates, flt)]
        if not candidates.size:
            return []
        values = scores[candidates]
        k = min(n, values.size)
        top = np.argpartition(-values, k - 1)[:k]
        top = top[np.lexsort((candidates[top], -values[top]))]  # best first, then table order
        rows = self._dicts(candidates[top].tolist())
        return [dict(row, score=value) for row, value in zip(rows, values[top].tolist())]

    def _dicts(self, numbers: list[int]) -> list[dict]:
        """The rows ``numbers`` as dicts, shared with the cache (never changed: callers copy them)."""
        cache = self._row_dicts
        found = [cache.get(i) for i in numbers]
        missing = [i for i, row in zip(numbers, found) if row is None]
        if not missing:
            return found
        fetched = dict(zip(missing, self.rows.take(missing).to_pylist()))
        if len(cache) + len(fetched) > ROW_CACHE_ROWS:
            cache.clear()
        cache.update(fetched)
        return [fetched[i] if row is None else row for i, row in zip(numbers, found)]



class KeywordCopy:
    """The :class:`MemoryBM25` of an index's latest table version, read from a
    :class:`~memsearch.engine.storage.store.Store` (``store.read``).

    The first request builds it in the calling thread, as :class:`~memsearch.engine.search.flat.FlatVectors`
    is built at the first vector query, so that a one-shot ``memsearch search --local`` and a warm
    daemon give the same scores (0.24 s at 2.3k chunks, see README "Keyword path"). A later table
    version is built in a background thread, re-analysing only the texts that changed;
    meanwhile :meth:`get` returns None and the caller asks LanceDB: no query waits for a rebuild.
    """

    def __init__(self, columns: Sequence[str], enabled: bool = True):
        self.columns = list(columns)
        self.enabled = enabled
        self._copy: MemoryBM25 | None = None
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._pending = None  # (store, key) asked for while a build ran
        self._generation = 0  # bumped by forget(): a build begun before is discarded

    def holds(self, key) -> bool:
        """Whether the copy of ``key`` is built (a search of it is answered from memory)."""
        copy = self._copy
        return self.enabled and copy is not None and copy.key == key

    def get(self, store, key) -> MemoryBM25 | None:
        copy = self._copy
        if not self.enabled or (copy is not None and copy.key == key):
            return copy if self.enabled else None
        if copy is None and self._thread is None:
            return self.ensure(store, key)
        with self._lock:
            if self._thread is not None:
                self._pending = (store, key)  # the running build takes it up when done
                return None
            self._thread = threading.Thread(target=self._build, args=(store, key, self._generation),
                                            name="memsearch-bm25-build", daemon=True)
            self._thread.start()
        return None

    def _build(self, store, key, generation: int) -> None:
        while True:
            try:
                copy = MemoryBM25(self._read(store), key, previous=self._copy)
            except Exception as exc:  # noqa: BLE001 - queries go on with LanceDB, which reports the problem
                logger.debug("in-memory BM25 build failed: %s", exc)
                copy = None
            with self._lock:
                if copy is not None and generation == self._generation:
                    self._copy = copy
                ask, self._pending = self._pending, None
                if ask is None or (copy is not None and copy.key == ask[1]) or generation != self._generation:
                    self._thread = None
                    return
            store, key = ask

    def _read(self, store):
        return store.read(list(dict.fromkeys(self.columns + ["search_text"])))

    def ensure(self, store, key) -> MemoryBM25:
        """The copy of ``key``, built now in this thread when it is not the current one."""
        copy = self._copy
        if copy is None or copy.key != key:
            copy = MemoryBM25(self._read(store), key, previous=copy)
            with self._lock:
                self._copy = copy
        return copy

    @property
    def nbytes(self) -> int:
        """The memory of the copy held (estimated), 0 when none."""
        copy = self._copy
        return copy.nbytes if copy is not None else 0

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for a running build; True when none is running (any more)."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
            return not thread.is_alive()
        return True

    def forget(self) -> None:
        """Drop the copy (a rebuild restarts table versions; close); a running build is discarded."""
        with self._lock:
            self._copy, self._pending = None, None
            self._generation += 1
