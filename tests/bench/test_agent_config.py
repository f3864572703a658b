"""The quality benchmark's "agent" configuration: mode "timeline" for the questions that span memory, at the
tool's default k; hybrid for the rest; run only where such questions are."""

from __future__ import annotations

from benchmarks import quality
from benchmarks.metrics import Item
from memsearch.engine.embed.embedder import HashEmbedder


def _corpus(tmp_path, category):
    root = tmp_path / "tree"
    (root / "chats").mkdir(parents=True)
    for day in ("2026-03-20", "2026-01-12", "2026-02-15", "2026-04-02"):
        (root / "chats" / f"{day}.md").write_text(
            f"# Chat {day}\n\n**User:** Garden news for {day}: the tomatoes and the compost.\n")
    qs = [quality.Question("q1", "what did I do about the garden tomatoes", (Item("chats/2026-01-12.md"),), category),
          quality.Question("q2", "garden compost", (Item("chats/2026-02-15.md"),), "fact")]
    return quality.Corpus("tiny", {"": root}, qs)


def test_agent_config_calls_timeline_for_the_kinds_that_span_memory(tmp_path):
    corpus = _corpus(tmp_path, "summary")
    out = quality.run_engine(corpus, HashEmbedder(), tmp_path / "work", configs=("hybrid-convex", quality.AGENT))
    hits = out["hits"]
    timeline = hits[quality.AGENT]["q1"]
    assert [h.path for h in timeline] == sorted(h.path for h in timeline)  # oldest first (the date is the name)
    assert len({h.path for h in timeline}) == min(quality.TIMELINE_K, 4)
    assert hits[quality.AGENT]["q2"] == hits["hybrid-convex"]["q2"]  # other kinds: hybrid, hit for hit
    assert quality.AGENT not in quality.CONFIGS  # the speed benchmark times the engine's modes only


def test_agent_config_is_left_out_where_no_question_spans_memory(tmp_path):
    corpus = _corpus(tmp_path, "fact")
    out = quality.run_engine(corpus, HashEmbedder(), tmp_path / "work", configs=("hybrid-convex", quality.AGENT))
    assert set(out["hits"]) == {"hybrid-convex"}
