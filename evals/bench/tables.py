"""The benchmark tables of the docs, rendered from kept benchmark reports (evals/results/bench/).

evals/rendering/docs.py puts them between their markers and the unit suite checks them.

- ``startup`` (docs/benchmarks.md): ``python -m hopgraph.evals.bench startup --out FILE``, kept as
  evals/results/bench/startup.json.
- ``latency`` and ``latency-e2e`` (docs/benchmarks.md): ``python -m hopgraph.evals.bench --data
  DATA --index DIR --methods bm25,dense,hybrid,gnn_ret,iier,naive_ge,grag --out FILE`` on each
  benchmark's cached index, kept as evals/results/bench/latency-SET.json (the second with the
  query's embedding in every call).
- ``index-build`` (docs/benchmarks.md): ``python -m hopgraph.evals.bench --data DATA --out FILE``
  (a fresh index of 2wiki), kept as evals/results/bench/build-2wiki.json.
- ``writes`` (docs/benchmarks.md): ``python -m hopgraph.evals.bench.writes --index DIR --data DATA
  --docs 5 --out FILE`` on a copy of 2wiki's index, kept as evals/results/bench/writes-2wiki.json.
- ``graph-build`` (docs/benchmarks.md) and ``graph-stats`` (docs/graphs.md):
  ``python -m hopgraph.evals.bench.graphs --index DIR | --synthetic N --out FILE``, kept as
  evals/results/bench/graphs-NAME.json.
"""

from __future__ import annotations

import json
from pathlib import Path

RESULTS = Path(__file__).resolve().parents[1] / "results" / "bench"


def startup(results: Path = RESULTS) -> str:
    """Render benchmarks.md's start-up table from the kept benchmark report (its rows, in order)."""
    report = json.loads((results / "startup.json").read_text(encoding="utf-8"))
    lines = ["| command | median | slowest | target |", "|---|---|---|---|"]
    for timing in report["commands"].values():
        target = "—" if timing["target_s"] is None else f"≤ {timing['target_s']:.1f} s"
        until = f", start to {timing['until']}" if timing.get("until") else ""
        lines.append(
            f"| `{timing['command']}`{until} | **{timing['median_s']:.2f} s** "
            f"| {timing['max_s']:.2f} s | {target} |"
        )
    if "load" in report:  # timings mean something only on an idle machine: say how busy it was
        before, after = report["load"]["before"][0], report["load"]["after"][0]
        lines += ["", f"Load average (1 min) while measured: {before:.2f} before, {after:.2f} "
                  f"after, on {report['cpus']} CPUs."]  # fmt: skip
    return "\n".join(lines)


LATENCY_SETS = ("musique", "hotpotqa", "2wiki", "nq")
LATENCY_METHODS = (
    "query embedding",
    "bm25",
    "dense",
    "hybrid",
    "gnn_ret",
    "iier",
    "naive_ge",
    "grag",
)


def latency(results: Path = RESULTS) -> str:
    """Render benchmarks.md's query-latency table: p50 / p95 ms per method, and × dense's p95."""
    lines = [
        "| dataset (queries) | " + " | ".join(LATENCY_METHODS) + " |",
        "|---" * (len(LATENCY_METHODS) + 1) + "|",
    ]
    for name in LATENCY_SETS:
        report = json.loads((results / f"latency-{name}.json").read_text(encoding="utf-8"))
        timed = report["query_latency"]
        dense = timed["dense"]["p95_ms"]
        cells = []
        for method in LATENCY_METHODS:
            t = timed[method]
            cell = f"{t['p50_ms']:.2f} / {t['p95_ms']:.2f}"
            if method not in ("query embedding", "dense"):
                cell += f" ({t['p95_ms'] / dense:.0f}×)"
            cells.append(cell)
        queries = timed["dense"]["queries"]
        lines.append(f"| {name} ({queries}) | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def latency_end_to_end(results: Path = RESULTS) -> str:
    """Render the latency table with the query's embedding in every call: what a caller waits for.

    p50 / p95 ms per method, and × dense's p95 (docs/benchmarks.md).
    """
    methods = [m for m in LATENCY_METHODS if m != "query embedding"]
    lines = ["| dataset (queries) | " + " | ".join(methods) + " |"]
    lines.append("|---" * (len(methods) + 1) + "|")
    for name in LATENCY_SETS:
        report = json.loads((results / f"latency-{name}.json").read_text(encoding="utf-8"))
        timed = report["end_to_end_latency"]
        dense = timed["dense"]["p95_ms"]
        cells = [
            f"{timed[m]['p50_ms']:.2f} / {timed[m]['p95_ms']:.2f}"
            + (f" ({timed[m]['p95_ms'] / dense:.1f}×)" if m != "dense" else "")
            for m in methods
        ]
        lines.append(f"| {name} ({timed['dense']['queries']}) | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _graphs(results: Path, name: str) -> dict:
    return json.loads((results / f"graphs-{name}.json").read_text(encoding="utf-8"))


def graph_build(results: Path = RESULTS) -> str:
    """Render benchmarks.md's graph-construction table (2wiki's index, 100k synthetic chunks)."""
    lines = [
        "| corpus | extraction | passage graph | knowledge graph | neighbour lookup "
        "| one propagation step | peak RSS |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, label in (("2wiki", "2wiki"), ("100k", "synthetic")):
        g = _graphs(results, name)
        t, c = g["timings"], g["counts"]
        edges = sum(c["edges"].values())
        lines.append(
            f"| {label}, {c['chunks']:,} chunks ({edges / 1e6:.2f} M edges, "
            f"{c['triples'] / 1e3:.0f} k triples) | {t['extract_s']:.1f} s "
            f"| {t['passage_graph_s']:.1f} s | {t['knowledge_graph_s']:.1f} s "
            f"| {t['neighbours_us_per_lookup']:.0f} µs | {t['propagation_ms']:.1f} ms "
            f"| {g['peak_rss_mb'] / 1024:.2f} GB |"
        )
    return "\n".join(lines)


GRAPH_SETS = ("musique", "hotpotqa", "2wiki")
EDGE_TYPES = ("structural", "entity", "keyword", "semantic", "link")


def graph_stats(results: Path = RESULTS) -> str:
    """Render graphs.md's table of the benchmark corpora's graphs."""
    lines = [
        "| dataset | chunks | " + " | ".join(EDGE_TYPES) + " edges | mean degree | entities "
        "| triples / chunk | extraction + graphs | peak RSS |",
        "|---" * 12 + "|",
    ]
    for name in GRAPH_SETS:
        g = _graphs(results, name)
        t, c = g["timings"], g["counts"]
        edges = " | ".join(f"{c['edges'][e]:,}" for e in EDGE_TYPES)
        lines.append(
            f"| {name} | {c['chunks']:,} | {edges} | {c['mean_degree']:.1f} | {c['entities']:,} "
            f"| {c['triples_per_chunk']:.1f} | {t['total_s']:.1f} s "
            f"| {g['peak_rss_mb'] / 1024:.2f} GB |"
        )
    return "\n".join(lines)


def index_build(results: Path = RESULTS) -> str:
    """Render benchmarks.md's index-build table: the whole build against the embedder alone."""
    report = json.loads((results / "build-2wiki.json").read_text(encoding="utf-8"))
    built = report["indexing"]
    return "\n".join(
        [
            "| measure | figure |",
            "|---|---|",
            f"| embedder alone on the chunk texts | {built['embed_only_s']:.1f} s "
            f"({built['embed_passages_per_s']:.1f} passages/s) |",
            f"| whole index build (load, chunk, embed, Chroma, BM25, vector table, manifest) "
            f"| {built['build_s']:.1f} s ({built['build_passages_per_s']:.1f} passages/s) "
            f"= **{built['ratio']:.2f} ×** the embedder alone (target ≤ 1.3) |",
            f"| peak memory (the build and every method's queries) "
            f"| {report['peak_rss_mb']:,.0f} MB RSS |",
        ]
    )


def writes(results: Path = RESULTS) -> str:
    """Render benchmarks.md's writes table: a full graph build against an add and a delete."""
    w = json.loads((results / "writes-2wiki.json").read_text(encoding="utf-8"))
    full, add = w["full_graph_build_timings"], w["add_graph_timings"]
    rest = w["add_s"] - w["add_embed_s"] - sum(add.values())
    return "\n".join(
        [
            "| write | seconds |",
            "|---|---|",
            f"| full graph build of {w['chunks']:,} chunks (extraction "
            f"{full['extract_seconds']:.1f}, graphs {full['graph_seconds']:.1f}, triple vectors "
            f"{full['triple_embed_seconds']:.1f}) | {w['full_graph_build_s']:.2f} |",
            f"| add {w['add_docs']} documents: embed {w['add_embed_s']:.2f}, extraction "
            f"{add['extract_seconds']:.2f}, graphs {add['graph_seconds']:.2f}, new triples "
            f"{add['triple_embed_seconds']:.2f}, tables and commit {rest:.2f} "
            f"| {w['add_s']:.2f} ({100 * w['add_share_of_full_build']:.0f} % of the full build) |",
            f"| delete the same {w['add_docs']} documents | {w['delete_s']:.2f} |",
        ]
    )
