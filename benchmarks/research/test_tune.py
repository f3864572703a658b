"""The ranking replay loop (benchmarks/research/tune.py): its baseline is the engine's own hybrid ranking."""

from __future__ import annotations

import json

from benchmarks import quality
from benchmarks.common import EMBEDDER_ENV
from benchmarks.research import tune, tune_vectors

TOPICS = ["salsa dancing lessons", "sourdough bread starter", "marathon training plan", "vintage camera repair",
          "balcony tomato garden", "chess openings study", "pottery wheel class"]


def _locomo(path, conversations=6):
    """A LoCoMo-shaped file: each conversation has three sessions, one question per session."""
    samples = []
    for c in range(conversations):
        conv = {"speaker_a": "Ana", "speaker_b": "Ben"}
        qa = []
        for s in range(1, 4):
            topic = TOPICS[(c + s) % len(TOPICS)]
            conv[f"session_{s}_date_time"] = f"1:56 pm on {s + 1} May, 2023"
            conv[f"session_{s}"] = [
                {"speaker": "Ana", "dia_id": f"D{s}:1", "text": f"Hi Ben, session {s} of conversation {c}."},
                {"speaker": "Ben", "dia_id": f"D{s}:2", "text": f"I started {topic} last week and love it."},
                {"speaker": "Ana", "dia_id": f"D{s}:3", "text": "That sounds great, tell me more next time."}]
            qa.append({"question": f"What did Ben start, {topic}?", "answer": topic, "evidence": [f"D{s}:2"], "category": 4})
        samples.append({"sample_id": f"conv-{c}", "conversation": conv, "qa": qa})
    path.write_text(json.dumps(samples))
    return path


def test_baseline_replay_matches_the_engine_and_every_variant_reranks(tmp_path, monkeypatch):
    from benchmarks.common import bench_embedder
    from memsearch import MemoryIndex

    monkeypatch.setenv(EMBEDDER_ENV, "hash")
    data = _locomo(tmp_path / "locomo.json")
    out = tmp_path / "tune"
    tune.dump(out, data)
    tune.embed_lines(out)
    tune.expand(out, data)
    for size in tune_vectors.SIZES:
        tune_vectors.embed_windows(out, size)
    for how in tune_vectors.HOWS:
        tune_vectors.embed_context(out, data, how)
    results = tune.evaluate(out, None, data)
    assert set(results) == set(tune.VARIANTS)  # lines-*, rm3-*, win*-, ctx-* included: their inputs exist
    assert set(results["baseline"]) == {"tune", "test", "all"}
    assert results["baseline"]["all"][0] > 0.9  # file R@5 on this easy corpus
    # the replayed baseline is the engine's hybrid ranking, hit for hit
    import pickle

    dumped = pickle.loads((out / "candidates.pkl").read_bytes())
    corpus = quality.locomo_corpus(out / "trees", data)
    for q in corpus.questions[:6]:
        d = dumped["questions"][q.qid]
        replay = tune.shape.merge_rows(tune.baseline(q, d["vec"], d["keyword"], {}), 10)
        with MemoryIndex(corpus.trees[q.tree], db=out / "db" / q.tree, embedder=bench_embedder()) as index:
            hits = index.search(q.query, k=10)
        assert [(h.path, h.start_line, h.end_line) for h in hits] == [(r["path"], r["start_line"], r["end_line"]) for r in replay]
    # every variant returns each candidate of the pool once (a re-ranking, nothing lost or doubled)
    q = corpus.questions[0]
    d = dumped["questions"][q.qid]
    ctx = {"tree": dumped["trees"][q.tree], "vector": d["vector"], "question": q,
           "lines": pickle.loads((out / "lines.pkl").read_bytes())[q.tree],
           "expanded": pickle.loads((out / "expanded.pkl").read_bytes()), "extra": tune_vectors._extra(out)}
    for name, variant in tune.VARIANTS.items():
        ids = [r["id"] for r in variant(q, [dict(r) for r in d["vec"]], [dict(r) for r in d["keyword"]], ctx)]
        assert len(ids) == len(set(ids)) and set(ids) >= {r["id"] for r in d["keyword"]}, name
    # the legs comparison's hybrid and its re-implemented convex fusion are the baseline, row for row
    from benchmarks.research import legs

    for lq in corpus.questions[:6]:  # its own names: q, d and ctx stay the first question's for the check below
        ld = dumped["questions"][lq.qid]
        base = [r["id"] for r in tune.baseline(lq, [dict(r) for r in ld["vec"]], [dict(r) for r in ld["keyword"]], ctx)]
        for name in ("hybrid", "norm-max-minmax", "depth-200"):
            run = legs.RANKINGS.get(name) or legs.VARIANTS[name]
            assert [r["id"] for r in run(lq, [dict(r) for r in ld["vec"]], [dict(r) for r in ld["keyword"]])] == base, name
    table = legs.analyse(out, locomo=data)
    assert {("tune", "hybrid"), ("test", "keyword")} <= set(table)
    # with no weight on the windows, the window variant re-runs the dumped cosine leg: the baseline
    mixed = tune.VARIANTS["win1-mix-0.0"](q, [dict(r) for r in d["vec"]], [dict(r) for r in d["keyword"]], ctx)
    assert [r["id"] for r in mixed] == [r["id"] for r in tune.baseline(q, d["vec"], d["keyword"], ctx)]


def test_sentence_windows_stay_inside_one_line_and_skip_headings():
    row = {"text": "# Chat\nAna: Hi. How are you?\nBen: Fine! And you", "start_line": 3, "heading": "Chat",
           "date": "2023-05-02"}
    assert tune_vectors._windows(row, 1) == [(4, "Ana: Hi."), (4, "How are you?"), (5, "Ben: Fine!"), (5, "And you")]
    assert tune_vectors._windows(row, 2) == [(4, "Ana: Hi. How are you?"), (5, "Ben: Fine! And you")]
    assert tune_vectors._header(row) == "Chat (2023-05-02)"
