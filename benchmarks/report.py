"""Benchmark outputs: machine facts, ``results.json``, ``report.md`` and PNG plots.

The JSON holds everything measured; the Markdown report and the plots are made from the
JSON alone (``python -m benchmarks.report DIR`` re-renders them from ``DIR/results.json``).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import subprocess
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

__all__ = ["machine", "write", "render_markdown", "plot"]

REPO = Path(__file__).resolve().parents[1]
MEASURES = [("file_recall@5", "file R@5"), ("file_recall@10", "file R@10"), ("turn_recall@60lines", "turn recall, 60 lines"),
            ("turn_recall@1000tok", "turn recall, 1,000 tokens"), ("mrr@10", "MRR@10"), ("ndcg@10", "nDCG@10"),
            ("hit@1", "hit@1")]
#: The measures of the tuning/test split table (LoCoMo).
SPLIT_MEASURES = [("file_recall@5", "file R@5"), ("file_recall@10", "file R@10"),
                  ("turn_recall@60lines", "turn recall, 60 lines"), ("mrr@10", "MRR@10")]
#: The measures of the per-category tables (every corpus): file and line recall, recall at an equal text budget,
#: and the first hit (agentmem's and cjk's measure).
CATEGORY_MEASURES = [("file_recall@5", "file R@5"), ("turn_recall@60lines", "turn recall 60 lines"),
                     ("turn_recall@6000chars", "turn recall 6,000 characters"), ("hit@1", "hit@1")]
SPLIT_LABELS = {"tune": "tuning split", "test": "held-out test split"}
DEFAULT_CONFIG = "hybrid-convex"


def _version(name: str) -> str | None:
    try:
        return version(name)
    except PackageNotFoundError:
        return None


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, timeout=10)
        return out.stdout.strip() or None if out.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        return None


def _program() -> str:
    """How this process was started: ``python -m benchmarks`` for the package, else the script's name."""
    path = Path(sys.argv[0])
    return f"python -m {path.parent.name}" if path.name == "__main__.py" else path.name


def machine() -> dict:
    """Where and with what a run happened."""
    try:
        import psutil

        memory_gb = round(psutil.virtual_memory().total / 2**30, 1)
    except ImportError:
        memory_gb = None
    try:
        import torch

        threads = torch.get_num_threads()
    except ImportError:
        threads = None
    return {
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "platform": platform.platform(),
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "memory_gb": memory_gb,
        "torch_threads": threads,
        "loadavg": [round(x, 2) for x in os.getloadavg()],
        "python": platform.python_version(),
        "versions": {
            n: _version(n)
            for n in ("agent-memsearch", "torch", "sentence-transformers", "lancedb", "pyarrow", "tiktoken", "numpy")
        },
        "git_commit": _git("rev-parse", "HEAD"),
        "git_dirty": bool(_git("status", "--porcelain", "--untracked-files=no")),
        "command": " ".join([_program(), *sys.argv[1:]]),
    }


def _f(x, digits: int = 3) -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:.{digits}f}"
    return f"{x:,}" if isinstance(x, int) else str(x)


def _quality_section(q: dict) -> list[str]:
    name = q["corpus"]
    lines = [f"### {name}", ""]
    lines.append(
        f"{q['questions']:,} questions; {q['index']['chunks']:,} chunks in {q['index']['trees']} tree(s), "
        f"indexed in {q['index']['seconds']} s. Default configuration: **{DEFAULT_CONFIG}**."
    )
    lines += [
        "",
        "| configuration | " + " | ".join(label for _, label in MEASURES) + " | ms/query |",
        "|---|" + "---:|" * (len(MEASURES) + 1),
    ]
    for config, res in q["results"].items():
        row = res["scores"]["all"]
        ms = q["ms_per_query"].get(config)
        if config.startswith("peer:"):
            ms = q["peers"].get(config[5:], {}).get("ms_per_query")
        label = f"**{config}**" if config == DEFAULT_CONFIG else config
        lines.append(f"| {label} | " + " | ".join(_f(row.get(key)) for key, _ in MEASURES) + f" | {_f(ms, 1)} |")
    ours = q["results"].get(DEFAULT_CONFIG, {}).get("scores", {}).get("all", {})
    for peer, info in q.get("peers", {}).items():
        if "error" in info:
            lines.append(f"\nPeer **{peer}** did not run: {info['error']}")
            continue
        theirs = q["results"].get(f"peer:{peer}", {}).get("scores", {}).get("all", {})
        ratios = ", ".join(
            f"{label} x{ours[key] / theirs[key]:.2f}"
            for key, label in MEASURES
            if theirs.get(key) and ours.get(key) is not None
        )
        lines.append(
            f"\nPeer **{peer}** ({info.get('version')}; {info.get('settings')}): {_f(info.get('units'))} units indexed in "
            f"{_f(info.get('index_seconds'), 1)} s, {_f(info.get('ms_per_query'), 1)} ms/query. "
            f"memsearch {DEFAULT_CONFIG} / {peer}: {ratios}."
        )
    cats = [c for c in next(iter(q["results"].values()))["scores"] if c != "all"]
    if cats:
        configs = list(q["results"])
        lines += [
            "",
            "Per question category: " + " / ".join(label for _, label in CATEGORY_MEASURES) + ":",
            "",
            "| category | n | " + " | ".join(configs) + " |",
            "|---|---:|" + "---:|" * len(configs),
        ]
        for cat in cats:
            n = q["results"][configs[0]]["scores"][cat]["n"]
            cells = [_cells(q["results"][c]["scores"].get(cat, {}), CATEGORY_MEASURES) for c in configs]
            lines.append(f"| {cat} | {n} | " + " | ".join(cells) + " |")
    lines += _split_section(q)
    lines += ["", f"![recall on {name}](recall-{name}.png)", ""]
    return lines


def _cells(row: dict, measures) -> str:
    """``row``'s ``measures`` as "a / b / c", "-" for a measure it lacks (or for no row)."""
    return " / ".join(_f(row[key]) if key in row else "-" for key, _ in measures) if row else "-"


def _split_section(q: dict) -> list[str]:
    """All questions beside the tuning and held-out test splits, overall and per category."""
    configs = [c for c, res in q["results"].items() if "splits" in res]
    if not configs:
        return []
    splits = ["all"] + list(q["results"][configs[0]]["splits"])
    lines = [
        "",
        "Every engine constant was chosen on the tuning split; the held-out test split was only scored:",
        "",
        "| configuration | questions | n | " + " | ".join(label for _, label in SPLIT_MEASURES) + " |",
        "|---|---|---:|" + "---:|" * len(SPLIT_MEASURES),
    ]
    for config in configs:
        for split in splits:
            res = q["results"][config]
            row = res["scores"]["all"] if split == "all" else res["splits"][split]["all"]
            label = f"**{config}**" if config == DEFAULT_CONFIG else config
            lines.append(
                f"| {label} | {SPLIT_LABELS.get(split, split)} | {row['n']} | "
                + " | ".join(_f(row.get(key)) for key, _ in SPLIT_MEASURES)
                + " |"
            )
    default = q["results"].get(DEFAULT_CONFIG)
    if default and "splits" in default:
        cats = [c for c in default["scores"] if c != "all"]
        lines += [
            "",
            f"**{DEFAULT_CONFIG}** per category, all / tuning / held-out test ("
            + ", ".join(label for _, label in CATEGORY_MEASURES) + "):",
            "",
            "| category | n (all / tuning / test) | all | tuning | held-out test |",
            "|---|---:|---|---|---|",
        ]
        for cat in cats:
            every = default["scores"][cat]
            tune, test = (default["splits"].get(split, {}).get(cat, {}) for split in ("tune", "test"))
            lines.append(f"| {cat} | {every['n']} / {tune.get('n', 0)} / {test.get('n', 0)} | "
                         f"{_cells(every, CATEGORY_MEASURES)} | {_cells(tune, CATEGORY_MEASURES)} | "
                         f"{_cells(test, CATEGORY_MEASURES)} |")
    return lines


def _speed_section(sizes: list[dict], daemon: dict | None) -> list[str]:
    ok = [s for s in sizes if "error" not in s]
    lines = [
        "## Speed and cost",
        "",
        "Synthetic trees (benchmarks/synthetic.py, seed 1); each size in a fresh process. Throughput: chunks embedded "
        "and written per second by a full index, against `SentenceTransformer.encode` alone on a sample of the same "
        "texts (ratio 1.0 = indexing costs nothing beyond the model). Latency: warm, k=10, query embedding included.",
        "",
        "| chunks | files | index chunks/s | raw encode chunks/s | ratio | "
        "full index s | no-op re-sync ms | one-edit re-sync ms (chunks embedded) "
        "| hybrid p50/p95 ms | keyword p50/p95 ms | vector p50/p95 ms | index on disk MB | peak RSS MB |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for s in ok:
        lat = s["latency"]
        pp = lambda c: f"{_f(lat[c]['p50_ms'], 1)} / {_f(lat[c]['p95_ms'], 1)}" if c in lat else "-"  # noqa: E731
        r = s["resync"]
        lines.append(
            f"| {s['chunks']:,} | {s['files']:,} | {_f(s['index_chunks_per_s'], 1)} | {_f(s['raw_chunks_per_s'], 1)} | "
            f"{_f(s['ratio_to_raw'], 2)} | {_f(s['index_s'], 1)} | {_f(1000 * r['noop_resync_s_median'], 1)} | "
            f"{_f(1000 * r['edit_resync_s'], 0)} ({r['edit_chunks_embedded']}) | {pp(DEFAULT_CONFIG)} | {pp('keyword')} | "
            f"{pp('vector')} | {_f(s['index_disk_mb'], 1)} | {_f(s['peak_rss_mb'], 0)} |"
        )
    for s in sizes:
        if "error" in s:
            lines.append(f"\nSize {s['nominal_chunks']:,} failed: {s['error']}")
    if ok:
        configs = list(ok[0]["quality"]["results"])
        lines += [
            "",
            "Retrieval quality on the same synthetic trees (planted facts; file R@5 / MRR@10):",
            "",
            "| chunks | questions | " + " | ".join(configs) + " |",
            "|---:|---:|" + "---:|" * len(configs),
        ]
        for s in ok:
            res = s["quality"]["results"]
            cells = [
                f"{_f(res[c]['scores']['all']['file_recall@5'], 3)} / {_f(res[c]['scores']['all']['mrr@10'], 3)}"
                for c in configs
            ]
            lines.append(f"| {s['chunks']:,} | {s['quality']['questions']} | " + " | ".join(cells) + " |")
        lines += [
            "",
            "![latency against size](latency.png)",
            "",
            "![throughput against size](throughput.png)",
            "",
            "![re-sync, disk and memory against size](cost.png)",
            "",
        ]
    if daemon:
        lines += ["### Daemon freshness (`memsearch watch`)", ""]
        if "error" in daemon:
            lines.append(f"Did not run: {daemon['error']}")
        else:
            f = daemon.get("freshness_s", {})
            rapid = daemon.get("rapid_edits", {})
            lines.append(
                f"Tree of {daemon.get('tree', {}).get('files', '?')} notes. Write-to-searchable over {f.get('n')} edits: "
                f"p50 {_f(f.get('p50'), 2)} s, p95 {_f(f.get('p95'), 2)} s, max {_f(f.get('max'), 2)} s "
                f"({f.get('misses', 0)} missed; debounce {f.get('debounce_ms')} ms). {rapid.get('edits', '?')} rapid edits: "
                f"all indexed {_f(rapid.get('seconds_until_indexed_after_last_write'), 2)} s after the last write, "
                f"{rapid.get('last_words_not_found', '?')} last words not found."
            )
        lines.append("")
    return lines


def render_markdown(results: dict) -> str:
    m = results["machine"]
    v = m["versions"]
    lines = [
        "# memsearch benchmark report",
        "",
        f"Run {m['date']} on commit `{(m.get('git_commit') or '?')[:12]}`{' (with uncommitted changes)' if m.get('git_dirty') else ''}: "
        f"`{m['command']}`.",
        "",
        f"Machine: {m['cpu']}, {m['cores']} cores, {m.get('memory_gb')} GB, {m['platform']}; load average at start "
        f"{m['loadavg']}{', at end ' + str(results.get('loadavg_end')) if results.get('loadavg_end') else ''}. Python {m['python']}, "
        f"torch {v.get('torch')} ({m.get('torch_threads')} threads), sentence-transformers {v.get('sentence-transformers')}, "
        f"lancedb {v.get('lancedb')}. Model: {results.get('model', '?')}. Took {results.get('seconds', '?')} s.",
        "",
    ]
    if results.get("quality"):
        lines += [
            "## Retrieval quality",
            "",
            "Measures (benchmarks/metrics.py): file R@k = share of the question's evidence files among the first k distinct "
            "files; turn recall = share of evidence turns (lines) among the lines read in rank order within a budget of 60 "
            "lines or 1,000 tokens; MRR@10 and nDCG@10 over hits, a hit being relevant when it covers an evidence line. "
            "Peers (`peer:`) ran on the same trees and questions, scored by the same code.",
            "",
        ]
        for q in results["quality"]:
            lines += _quality_section(q)
    if results.get("speed"):
        lines += _speed_section(results["speed"], results.get("daemon"))
    if results.get("notes"):
        lines += ["## Notes", ""] + [f"- {n}" for n in results["notes"]] + [""]
    return "\n".join(lines)


def plot(results: dict, out: Path) -> list[str]:
    """PNG plots next to the report; returns their file names."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    made = []
    for q in results.get("quality", []):
        fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4.2))
        for config, res in q["results"].items():
            style = dict(
                linestyle="--" if config.startswith("peer:") else "-",
                marker="o",
                markersize=3,
                label=config,
                linewidth=2.4 if config == DEFAULT_CONFIG else 1.4,
            )
            c = res["curves"]["file_recall@k"]
            a.plot([int(x) for x in c], list(c.values()), **style)
            c = res["curves"]["turn_recall@tokens"]
            b.plot([int(x) for x in c], list(c.values()), **style)
        a.set(title=f"{q['corpus']}: file recall@k", xlabel="k (distinct files)", ylabel="recall", ylim=(0, 1.02))
        b.set(
            title=f"{q['corpus']}: turn recall within a token budget",
            xlabel="tokens read",
            ylabel="recall",
            xscale="log",
            ylim=(0, 1.02),
        )
        budgets = [int(x) for x in next(iter(q["results"].values()))["curves"]["turn_recall@tokens"]]
        b.set_xticks(budgets, [f"{x:,}" for x in budgets])
        b.minorticks_off()
        for ax in (a, b):
            ax.grid(alpha=0.3)
        b.legend(fontsize=8, loc="lower right")
        fig.tight_layout()
        name = f"recall-{q['corpus']}.png"
        fig.savefig(out / name, dpi=90)
        plt.close(fig)
        made.append(name)
    sizes = [s for s in results.get("speed", []) if "error" not in s]
    if sizes:
        x = [s["chunks"] for s in sizes]
        fig, ax = plt.subplots(figsize=(6.5, 4.2))
        for config in sizes[0]["latency"]:
            (line,) = ax.plot(x, [s["latency"][config]["p50_ms"] for s in sizes], marker="o", label=f"{config} p50")
            ax.plot(
                x,
                [s["latency"][config]["p95_ms"] for s in sizes],
                marker="x",
                linestyle=":",
                color=line.get_color(),
                label=f"{config} p95",
            )
        ax.set(title="query latency against size (k=10, warm)", xlabel="chunks", ylabel="ms", xscale="log")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(out / "latency.png", dpi=90)
        plt.close(fig)
        fig, ax = plt.subplots(figsize=(6.5, 4.2))
        ax.plot(x, [s["index_chunks_per_s"] for s in sizes], marker="o", label="memsearch index (chunk, embed, write)")
        ax.plot(
            x, [s["raw_chunks_per_s"] for s in sizes], marker="s", linestyle="--", label="raw model encode, same texts"
        )
        ax.set(
            title="indexing throughput against size", xlabel="chunks", ylabel="chunks / s", xscale="log", ylim=(0, None)
        )
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(out / "throughput.png", dpi=90)
        plt.close(fig)
        fig, axes = plt.subplots(1, 3, figsize=(12, 3.6))
        axes[0].plot(x, [1000 * s["resync"]["noop_resync_s_median"] for s in sizes], marker="o", label="no-op")
        axes[0].plot(x, [1000 * s["resync"]["edit_resync_s"] for s in sizes], marker="s", label="one edit")
        axes[0].set(title="re-sync", ylabel="ms")
        axes[0].legend(fontsize=8)
        axes[1].plot(x, [s["index_disk_mb"] for s in sizes], marker="o")
        axes[1].set(title="index on disk", ylabel="MB")
        axes[2].plot(x, [s["peak_rss_mb"] for s in sizes], marker="o")
        axes[2].set(title="peak RSS (whole process, model included)", ylabel="MB")
        for ax in axes:
            ax.set(xlabel="chunks", xscale="log")
            ax.grid(alpha=0.3)
        fig.tight_layout()
        fig.savefig(out / "cost.png", dpi=90)
        plt.close(fig)
        made += ["latency.png", "throughput.png", "cost.png"]
    return made


def write(results: dict, out: Path) -> dict:
    """results.json, report.md and the plots under ``out``; returns their paths."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    (out / "report.md").write_text(render_markdown(results) + "\n")
    pngs = plot(results, out)
    return {"json": out / "results.json", "markdown": out / "report.md", "plots": [out / p for p in pngs]}


if __name__ == "__main__":
    target = Path(sys.argv[1] if len(sys.argv) > 1 else "bench-results")
    paths = write(json.loads((target / "results.json").read_text()), target)
    print("\n".join(str(p) for p in [paths["json"], paths["markdown"], *paths["plots"]]))
