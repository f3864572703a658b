"""Retrieval quality: corpora in one common form, ablations over the engine's options, scoring.

Corpora (each a :class:`Corpus`: trees to index, questions with line-level relevance):

* ``examples`` - ``examples/memory`` and the hand-written ``tests/fixtures/examples_queries.json``;
* ``locomo`` - LoCoMo, one tree per conversation, each question searched in its own tree;
* ``locomo-merged`` - all ten conversations in one tree, searched without scope, so the
  other conversations act as distractors;
* ``synthetic`` - a generated tree (benchmarks/synthetic.py) with planted facts;
* ``cjk`` - ``benchmarks/corpora/cjk``: notes in Chinese, Japanese and Korean with
  hand-written queries in the same languages (category = language); read hit@1;
* ``agentmem`` - a tree written only through memsearch's ``memory`` tool (benchmarks/agentmem.py):
  generated ``MEMORY.md`` stubs, hand-written folder indexes, dated notes appended over weeks;
  questions split by folder into tuning and held-out parts;
* ``longchat`` - long user-assistant chats with many-paragraph assistant turns (benchmarks/longchat.py):
  summaries across sessions, order of events, instructions, preferences, updates, buried facts;
  users 0-2 tuning, 3-5 held out;
* ``longchat-hard`` - the same topics shaped like long real chats (benchmarks/longchat_hard.py): turns of
  3-6 four-sentence paragraphs, half the users with a whole turn on one line, facts buried mid-paragraph,
  instruction and preference questions that name the topic only; users 0-2 tuning, 3-5 held out;
* ``longchat-alt`` - the same chats asked in a second, held-out wording (benchmarks/longchat_wordings.py);
* ``longchat-ask`` - the hard chats asked as a live chat asks: requests and topic-only order questions
  (benchmarks/longchat_requests.py);
* ``codeagent`` - a coding agent's memory across six projects (benchmarks/codeagent.py): decisions, bugs,
  how-tos, people, dated session logs, real ``MEMORY.md`` summaries; questions from facts to "how did X go";
  three projects tuning, three held out.

LoCoMo questions carry a split: conversations 0-4 are the tuning split (every engine
constant was chosen on them), 5-9 the held-out test split; both are scored beside all ten.

Ablations run on one index per tree: every search mode (keyword, vector, hybrid) and, for
hybrid, every fusion the engine offers (``convex``, ``rrf``). Peers (benchmarks/peers)
return hits in the same form and are scored by the same :func:`score`.
"""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from benchmarks import metrics
from benchmarks.common import REPO
from benchmarks.metrics import Item, Span

__all__ = [
    "Question",
    "Corpus",
    "CONFIGS",
    "CORPORA",
    "examples_corpus",
    "locomo_corpus",
    "synthetic_corpus",
    "cjk_corpus",
    "agentmem_corpus",
    "longchat_corpus",
    "codeagent_corpus",
    "dumped_corpus",
    "load_corpus",
    "LOCOMO_TUNING",
    "CachingEmbedder",
    "run_engine",
    "score",
    "LINE_BUDGET",
    "TOKEN_BUDGET",
    "K",
    "AGENT",
    "TIMELINE_KINDS",
    "TIMELINE_K",
]

FIXTURE = REPO / "tests" / "fixtures" / "examples_queries.json"
CJK_DIR = REPO / "benchmarks" / "corpora" / "cjk"
CORPORA = (
    "examples", "locomo", "locomo-merged", "synthetic", "cjk", "agentmem", "longchat", "longchat-hard",
    "longchat-alt", "longchat-ask", "codeagent",
)
#: LoCoMo conversations (in file order) of the tuning split; the rest are the held-out test split.
LOCOMO_TUNING = 5
#: label -> (search mode, hybrid fusion). One index serves them all.
CONFIGS = {
    "keyword": ("keyword", None),
    "vector": ("vector", None),
    "hybrid-convex": ("hybrid", "convex"),
    "hybrid-rrf": ("hybrid", "rrf"),
}
#: The "agent" configuration: hybrid-convex, with mode "timeline" for the TIMELINE_KINDS questions.
AGENT = "agent"
#: The "agent" config searches as an agent following memory_search's description would: mode "timeline" for a
#: question that spans memory (these categories: a summary, the order of events, everything about a topic, a
#: standing instruction or preference), with the tool's default k (TIMELINE_K: a timeline of about 6,000 characters, the
#: budget the turn recall below reads), and hybrid for every other question.
#: It runs on the corpora holding such questions (the long chats); elsewhere it is hybrid-convex.
TIMELINE_KINDS = ("summary", "order", "everything", "instruction", "preference")
TIMELINE_K = 5
K = 50  # hits fetched per question: enough to fill the largest budget below
LINE_BUDGET = 60
TOKEN_BUDGET = 1000
#: Characters of returned text an agent reads (issue 23's equal-budget comparison: 6,000 characters).
CHAR_BUDGET = 6000
FILE_KS = tuple(range(1, 11))
LINE_BUDGETS = (10, 20, 40, 60, 100)
TOKEN_BUDGETS = (250, 500, 1000, 2000, 4000)

Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class Question:
    qid: str
    query: str
    items: tuple[Item, ...]
    category: str | None = None
    tree: str = ""  # which tree of the corpus to search
    split: str | None = None  # "tune" or "test" (LoCoMo)


@dataclass
class Corpus:
    name: str
    trees: dict[str, Path]
    questions: list[Question]
    stats: dict = field(default_factory=dict)


# --- corpora ----------------------------------------------------------------------------------
def examples_corpus(
    work: Path, fixture: Path = FIXTURE, tree: Path = REPO / "examples" / "memory", name: str = "examples"
) -> Corpus:
    root = work / f"{name}-memory"
    shutil.rmtree(root, ignore_errors=True)
    shutil.copytree(tree, root, ignore=shutil.ignore_patterns(".memsearch"))
    data = json.loads(fixture.read_text())
    if data.get("version") != 1:
        raise ValueError(f"{fixture}: unknown fixture version {data.get('version')!r} (expected 1)")
    questions = [
        Question(
            q["id"],
            q["query"],
            tuple(Item(e["path"], tuple(e["lines"]) if e.get("lines") else None) for e in q["expected"]),
            q.get("category"),
        )
        for q in data["queries"]
    ]
    return Corpus(name, {"": root}, questions, {"questions": len(questions)})


def cjk_corpus(work: Path) -> Corpus:
    """The zh/ja/ko tree and its queries (same fixture format as ``examples``)."""
    return examples_corpus(work, CJK_DIR / "queries.json", CJK_DIR / "memory", name="cjk")


def agentmem_corpus(work: Path) -> Corpus:
    """The agent-written tree (benchmarks/agentmem.py), built through the memory tool, and its questions."""
    from benchmarks import agentmem

    root = work / "agentmem-memory"
    stats = agentmem.build(root)
    qs = [
        Question(qid, query, (Item(path, (line, line)),), category, "", split)
        for qid, query, category, path, line, split in agentmem.questions(root)
    ]
    return Corpus("agentmem", {"": root}, qs, stats | {"questions": len(qs)})


def codeagent_corpus(work: Path) -> Corpus:
    """A coding agent's memory across six projects (benchmarks/codeagent.py) and its questions."""
    from benchmarks import codeagent

    root = work / "codeagent-memory"
    asked, stats = codeagent.build(root)
    qs = [Question(a.qid, a.query, tuple(Item(p, lines) for p, lines in a.items), a.category, "", a.split)
          for a in asked]
    return Corpus("codeagent", {"": root}, qs, stats)


def longchat_corpus(work: Path, hard: bool = False, wordings: str = "first") -> Corpus:
    """Six users' long chats (benchmarks/longchat.py, or the harder benchmarks/longchat_hard.py), one tree
    each; relevance is the answering line. ``wordings="held-out"``: longchat's second, never-tuned wording
    set (benchmarks/longchat_wordings.py); ``wordings="requests"``: the hard chats' third set, asked as
    requests (benchmarks/longchat_requests.py)."""
    from benchmarks import longchat, longchat_hard
    from benchmarks.longchat_requests import requests
    from benchmarks.longchat_wordings import alternatives

    name = "longchat-hard" if hard else "longchat"
    trees, planted, stats = (longchat_hard if hard else longchat).build(work / name)
    if wordings != "first":
        planted = requests(planted) if wordings == "requests" else alternatives(planted)
        stats = stats | {"questions": len(planted)}
        name = "longchat-ask" if wordings == "requests" else name + "-alt"
    qs = [
        Question(p.qid, p.query, tuple(Item(path, (n, n)) for path, n in p.items), p.category, p.tree, p.split)
        for p in planted
    ]
    return Corpus(name, trees, qs, stats)


def locomo_corpus(work: Path, data=None, merged: bool = False) -> Corpus:
    from benchmarks.locomo import CATEGORIES, build_trees

    out = work / ("locomo-merged" if merged else "locomo")
    shutil.rmtree(out, ignore_errors=True)
    built = build_trees(out, data, merged=merged)
    trees = {"": built.root} if merged else {name: built.root / name for name in built.conversations}
    tuning = set(built.conversations[:LOCOMO_TUNING])
    questions = [
        Question(
            q.qid,
            q.question,
            tuple(Item(p, (n, n)) for p, n in q.evidence),
            CATEGORIES[q.category],
            "" if merged else q.conversation,
            "tune" if q.conversation in tuning else "test",
        )
        for q in built.questions
    ]
    return Corpus("locomo-merged" if merged else "locomo", trees, questions, built.stats)


def synthetic_corpus(work: Path, chunks: int = 1000, questions: int = 200, seed: int = 1) -> Corpus:
    from benchmarks.synthetic import generate_chunks

    root = work / f"synthetic-{chunks}"
    shutil.rmtree(root, ignore_errors=True)
    planted = generate_chunks(root, chunks, seed=seed)
    step = max(1, len(planted) // questions)
    chosen = planted[::step][:questions]
    qs = [Question(f"syn-{i}", p.query, (Item(p.path, (p.line, p.line)),), p.kind) for i, p in enumerate(chosen)]
    return Corpus("synthetic", {"": root}, qs, {"files": len(planted), "questions": len(qs)})


def load_corpus(name: str, work: Path, *, locomo=None, size: int = 1000) -> Corpus:
    if name == "examples":
        return examples_corpus(work)
    if name in ("locomo", "locomo-merged"):
        return locomo_corpus(work, locomo, merged=name == "locomo-merged")
    if name == "synthetic":
        return synthetic_corpus(work, chunks=size)
    if name == "cjk":
        return cjk_corpus(work)
    if name == "agentmem":
        return agentmem_corpus(work)
    if name in ("longchat", "longchat-hard"):
        return longchat_corpus(work, hard=name == "longchat-hard")
    if name == "longchat-alt":
        return longchat_corpus(work, wordings="held-out")
    if name == "longchat-ask":
        return longchat_corpus(work, hard=True, wordings="requests")
    if name == "codeagent":
        return codeagent_corpus(work)
    raise ValueError(f"unknown corpus {name!r}: choose from {', '.join(CORPORA)}")


def dumped_corpus(out: Path, locomo=None) -> Corpus:
    """The corpus a tuning dump in ``out`` was made from (its ``corpus.txt``, default LoCoMo), rebuilt
    under ``out/trees`` (benchmarks/research/tune.py)."""
    name = (out / "corpus.txt").read_text().strip() if (out / "corpus.txt").is_file() else "locomo"
    return load_corpus(name, out / "trees", locomo=locomo)


# --- running the engine -----------------------------------------------------------------------
class CachingEmbedder:
    """Wraps an embedder and remembers document vectors by text, so a tree indexed twice (split
    and merged LoCoMo hold the same sessions) is embedded once. Queries are embedded every time,
    so the ms/query of each mode stays honest. Quality runs only: speed runs never use it."""

    def __init__(self, inner):
        self.inner = inner
        self._docs: dict[str, object] = {}

    def __getattr__(self, name):
        return getattr(self.inner, name)

    @property
    def fingerprint(self) -> str:
        return self.inner.fingerprint

    def embed_documents(self, texts):
        import numpy as np

        missing = [t for t in dict.fromkeys(texts) if t not in self._docs]
        if missing:
            for t, v in zip(missing, self.inner.embed_documents(missing)):
                self._docs[t] = v
        if not texts:
            return self.inner.embed_documents([])
        return np.stack([self._docs[t] for t in texts])

    def embed_query(self, text):
        return self.inner.embed_query(text)


def run_engine(
    corpus: Corpus, embedder, work: Path, configs=(*CONFIGS, AGENT), k: int = K, progress: Progress | None = None
) -> dict:
    """Index each tree once, search every question with every config.

    Returns {"hits": {config: {qid: [Span]}}, "index": {...}, "ms_per_query": {config: ms}}.
    """
    from memsearch import MemoryIndex

    embedder.embed_query("warm up")  # load the model before the clock starts
    started = time.perf_counter()
    indexes = {}
    chunks = 0
    for n, (key, root) in enumerate(corpus.trees.items()):
        db = work / "db" / corpus.name / (key or "_")
        indexes[key] = MemoryIndex(root, db=db, embedder=embedder, rebuild=True)
        chunks += indexes[key].sync().chunks_total
        if progress:
            progress(f"{corpus.name}: index", n + 1, len(corpus.trees))
    index_s = time.perf_counter() - started
    hits: dict[str, dict[str, list[Span]]] = {}
    ms: dict[str, float] = {}
    total = len(configs) * len(corpus.questions)
    done = 0
    if not any(q.category in TIMELINE_KINDS for q in corpus.questions):
        configs = [c for c in configs if c != AGENT]
        total = len(configs) * len(corpus.questions)
    for config in configs:
        mode, fusion = CONFIGS["hybrid-convex" if config == AGENT else config]
        for index in indexes.values():
            index.fusion = fusion or index.fusion
        hits[config] = {}
        started = time.perf_counter()
        for q in corpus.questions:
            spans = config == AGENT and q.category in TIMELINE_KINDS
            found = indexes[q.tree].search(q.query, k=TIMELINE_K if spans else k, mode="timeline" if spans else mode)
            hits[config][q.qid] = [Span(h.path, h.start_line, h.end_line) for h in found]
            done += 1
            if progress and (done % 20 == 0 or done == total):
                progress(f"{corpus.name}: search", done, total)
        ms[config] = round(1000 * (time.perf_counter() - started) / max(len(corpus.questions), 1), 2)
    return {
        "hits": hits,
        "ms_per_query": ms,
        "index": {"trees": len(corpus.trees), "chunks": chunks, "seconds": round(index_s, 2)},
    }


# --- scoring ----------------------------------------------------------------------------------
class LineTokens:
    """Token count of each line of the corpus' files (tiktoken, the engine's encoding); ``chars``:
    its character count instead."""

    def __init__(self, corpus: Corpus, chars: bool = False):
        from memsearch.memory.tokens import get_encoding

        self.enc = get_encoding()
        self.corpus = corpus
        self.chars = chars
        self._files: dict[tuple[str, str], list[int]] = {}

    def __call__(self, tree: str, path: str, line: int) -> int:
        key = (tree, path)
        if key not in self._files:
            file = self.corpus.trees[tree] / path
            lines = file.read_text(encoding="utf-8", errors="replace").split("\n") if file.is_file() else []
            self._files[key] = [
                (len(x) if self.chars else len(self.enc.encode_ordinary(x))) if x.strip() else 0 for x in lines
            ]
        counts = self._files[key]
        return counts[line - 1] + 1 if 0 < line <= len(counts) else 1  # +1: the newline


def question_scores(
    hits: list[Span], q: Question, tokens: Callable[[str, int], int], chars: Callable[[str, int], int] | None = None
) -> dict:
    items = q.items
    extra = (
        {}
        if chars is None
        else {f"turn_recall@{CHAR_BUDGET}chars": metrics.token_budget_recall(hits, items, CHAR_BUDGET, chars)}
    )
    return extra | {
        "file_recall@3": metrics.file_recall(hits, items, 3),
        "file_recall@5": metrics.file_recall(hits, items, 5),
        "file_recall@10": metrics.file_recall(hits, items, 10),
        f"turn_recall@{LINE_BUDGET}lines": metrics.line_budget_recall(hits, items, LINE_BUDGET),
        f"turn_recall@{TOKEN_BUDGET}tok": metrics.token_budget_recall(hits, items, TOKEN_BUDGET, tokens),
        "turn_recall@10hits": metrics.hits_recall(hits, items, 10),
        "mrr@10": metrics.mrr(hits, items, 10),
        "ndcg@10": metrics.ndcg(hits, items, 10),
        "hit@1": metrics.mrr(hits, items, 1),
        "index_above@10": metrics.index_above(hits, items, 10),
    }


def score(corpus: Corpus, hits: dict[str, dict[str, list]]) -> dict:
    """Scores of each config: overall and per category, plus curves over k and budgets."""
    line_tokens, line_chars = LineTokens(corpus), LineTokens(corpus, chars=True)
    out = {}
    for config, by_qid in hits.items():
        rows, cats = [], []
        curves = {
            "file_recall@k": {k: [] for k in FILE_KS},
            "turn_recall@lines": {b: [] for b in LINE_BUDGETS},
            "turn_recall@tokens": {b: [] for b in TOKEN_BUDGETS},
        }
        for q in corpus.questions:
            found = [metrics.span(h) for h in by_qid.get(q.qid, [])]
            tokens = lambda p, n, t=q.tree: line_tokens(t, p, n)  # noqa: E731
            chars = lambda p, n, t=q.tree: line_chars(t, p, n)  # noqa: E731
            rows.append(question_scores(found, q, tokens, chars))
            cats.append(q.category)
            for k in FILE_KS:
                curves["file_recall@k"][k].append(metrics.file_recall(found, q.items, k))
            for b in LINE_BUDGETS:
                curves["turn_recall@lines"][b].append(metrics.line_budget_recall(found, q.items, b))
            for b in TOKEN_BUDGETS:
                curves["turn_recall@tokens"][b].append(metrics.token_budget_recall(found, q.items, b, tokens))
        out[config] = {
            "scores": metrics.summarize(rows, cats),
            "curves": {name: {str(x): round(metrics.mean(v), 4) for x, v in c.items()} for name, c in curves.items()},
        }
        splits = sorted({q.split for q in corpus.questions if q.split}, key=lambda x: (x != "tune", x))
        if splits:
            out[config]["splits"] = {
                split: metrics.summarize(
                    [r for r, q in zip(rows, corpus.questions) if q.split == split],
                    [q.category for q in corpus.questions if q.split == split],
                )
                for split in splits
            }
    return out


def run_corpus(
    name: str, work: Path, embedder, *, locomo=None, size: int = 1000, peers=None, progress: Progress | None = None
) -> dict:
    """Build one corpus, run the engine's ablations (and peers), score everything."""
    corpus = load_corpus(name, work, locomo=locomo, size=size)
    engine = run_engine(corpus, embedder, work, progress=progress)
    hits = dict(engine["hits"])
    peer_runs = {}
    for peer in peers or ():
        result = peer.run(corpus, work, progress=progress)
        peer_runs[peer.name] = {k: v for k, v in result.items() if k != "hits"}
        if result.get("hits") is not None:
            hits[f"peer:{peer.name}"] = result["hits"]
    return {
        "corpus": name,
        "questions": len(corpus.questions),
        "data_stats": corpus.stats,
        "index": engine["index"],
        "ms_per_query": engine["ms_per_query"],
        "peers": peer_runs,
        "results": score(corpus, hits),
    }
