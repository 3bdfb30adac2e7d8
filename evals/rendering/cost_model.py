"""The cost model of docs/scale-measurements.md: power laws fitted to the measurements, projected.

``python -m hopgraph.evals.rendering.cost_model`` reads the measurements in
``evals/results/scale/measurements.json`` (each figure with its sizes and the commands and dates
that produced them), fits ``cost = a · passages^b`` per figure by least squares on the
logarithms, projects it to 10M and 100M passages, finds the size at which each figure with a
limit on this machine (24 GB of memory, a 60 s write, 250 GB of disk) reaches it, and writes the
table into docs/scale-measurements.md between its ``cost-model`` markers; and the table of the
IVF against exact search on the eval sets, from ``evals/results/scale/ann-recall.json``, between the
``ann-recall`` markers; and the partitioned builds from ``cluster-*.json``
(``evals.bench.cluster --out``) between the ``cluster-build`` markers, and serving from shards
from ``cluster-*.json`` (``evals.bench.cluster_serving --out``) between the
``cluster-serving`` markers. ``--check`` fails if any
differs (the test suite runs it). Two sizes give an exact fit and no check of the law; figures
measured at four sizes say how well it holds (the largest deviation of a measurement from the
fit is in the table).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path

from hopgraph.evals.doc_markers import replaced
from hopgraph.evals.rendering.process_model import (
    KINDS,
    WORKER_LIMIT_MB,
    line,
    render_processes,
)

ROOT = Path(__file__).resolve().parents[2]
MEASUREMENTS = ROOT / "evals" / "results" / "scale" / "measurements.json"
ANN_RECALL = ROOT / "evals" / "results" / "scale" / "ann-recall.json"
DOC = ROOT / "docs" / "scale-measurements.md"
MARKERS = {
    "cost-model": ("<!-- cost-model:start -->", "<!-- cost-model:end -->"),
    "ann-recall": ("<!-- ann-recall:start -->", "<!-- ann-recall:end -->"),
    "cluster-build": ("<!-- cluster-build:start -->", "<!-- cluster-build:end -->"),
    "cluster-serving": ("<!-- cluster-serving:start -->", "<!-- cluster-serving:end -->"),
    "cluster-graphs": ("<!-- cluster-graphs:start -->", "<!-- cluster-graphs:end -->"),
    "cluster-projection": ("<!-- cluster-projection:start -->", "<!-- cluster-projection:end -->"),
    "cluster-processes": ("<!-- cluster-processes:start -->", "<!-- cluster-processes:end -->"),
}
SIZES = (10_000_000, 100_000_000)


@dataclass(frozen=True)
class Fit:
    """``value = a · n^b`` and the largest relative deviation of a measurement from it."""

    a: float
    b: float
    deviation: float

    def at(self, n: float) -> float:
        """Return the projected value at ``n`` passages."""
        return self.a * n**self.b

    def reaching(self, limit: float) -> float:
        """Return the passages at which the value reaches ``limit``."""
        return (limit / self.a) ** (1 / self.b) if self.b > 0 else math.inf


def fit(points: list[tuple[int, float]]) -> Fit:
    """Fit a power law through (passages, value) points (least squares on the logarithms)."""
    xs = [math.log(n) for n, _ in points]
    ys = [math.log(v) for _, v in points]
    mean_x, mean_y = sum(xs) / len(xs), sum(ys) / len(ys)
    spread = sum((x - mean_x) ** 2 for x in xs)
    b = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / spread
    a = math.exp(mean_y - b * mean_x)
    model = Fit(a, b, 0.0)
    worst = max(abs(v / model.at(n) - 1) for n, v in points)
    return Fit(a, b, worst)


def _number(value: float, unit: str) -> str:
    if unit == "s" and value >= 3600:
        return f"{value / 3600:.1f} h"
    if unit == "MB" and value >= 1024:
        return f"{value / 1024:.1f} GB"
    return f"{value:.3g} {unit}" if value < 100 else f"{value:,.0f} {unit}"


def render(measurements: dict) -> str:
    """Return the markdown of the cost model (the text between the markers)."""
    lines = [
        "| figure | measured | fitted b (cost ∝ n^b) | worst deviation | 10M | 100M | "
        "limit on this machine | reached at |",
        "|---|---|---|---|---|---|---|---|",
    ]
    reached_at: list[tuple[float, str]] = []
    for figure in measurements["figures"]:
        points = [(int(n), float(v)) for n, v in figure["points"]]
        model = fit(points)
        unit = figure["unit"]
        measured = ", ".join(f"{n / 1e6:g}M: {_number(v, unit)}" for n, v in points)
        limit = figure.get("limit")
        reached = ""
        if limit:
            at = model.reaching(limit)
            reached = f"{at / 1e6:,.1f}M" if at <= SIZES[1] else "beyond 100M"
            if min(n for n, _ in points) <= at <= SIZES[1]:
                reached_at.append((at, f"{figure['name']} ({_number(limit, unit)}) at {reached}"))
        lines.append(
            f"| {figure['name']} | {measured} | {model.b:.2f} | {100 * model.deviation:.0f} % | "
            f"{_number(model.at(SIZES[0]), unit)} | {_number(model.at(SIZES[1]), unit)} | "
            f"{_number(limit, unit) if limit else ''} | {reached} |"
        )
    order = "; ".join(text for _, text in sorted(reached_at))
    lines += ["", f"Limits in the order the fits reach them: {order}."]
    sources = sorted({f["source"] for f in measurements["figures"]})
    lines += ["", "Sources (each figure's command and date):", ""]
    lines += [f"- {s}" for s in sources]
    return "\n".join(lines)


def render_recall(runs: list[dict]) -> str:
    """Return the markdown of the IVF-against-exact table (evals/bench/ann_recall.py runs)."""
    lines = [
        "| set | chunks | lists read / lists | dense recall@10 vs exact | dense R@5 exact → IVF | "
        "gnn_ret R@5 exact → IVF | dense R@2 exact → IVF | gnn_ret R@2 exact → IVF | "
        "local GNN-Ret = full scan |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for run in runs:
        for row in run["rows"]:

            def pair(method: str, at: str, row: dict = row) -> str:
                return f"{row[method + '_exact'][at]:.1f} → {row[method + '_ann'][at]:.1f}"

            lines.append(
                f"| {row['set']} | {row['chunks']:,} | {row['probed'][0]} / {row['lists'][0]} | "
                f"{row['dense_recall_at_10']:.4f} | {pair('dense', 'r@5')} | "
                f"{pair('gnn_ret', 'r@5')} | {pair('dense', 'r@2')} | {pair('gnn_ret', 'r@2')} | "
                f"{100 * row['gnn_local_same_top10']:.0f} % of questions |"
            )
    lines += ["", "Runs:", ""]
    lines += [f"- {run['partition']}: `{run['command']}` ({run['date']})" for run in runs]
    return "\n".join(lines)


def updated(text: str, name: str, table: str) -> str:
    """Return ``text`` with the table between ``name``'s markers replaced."""
    return replaced(text, *MARKERS[name], table)


def _built_by(partitions: int) -> str:
    """Name who built: one process (0 partitions) or a local cluster."""
    return f"local cluster, P = {partitions}" if partitions else "one process"


def render_cluster(reports: list[dict]) -> str:
    """Render the partitioned builds beside one process's (``evals.bench.cluster --out``)."""
    lines = [
        "| corpus | build | wall | embedding | driver peak RSS | worker peak RSS "
        "| Chroma rows task peak RSS | same chunks |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for report in sorted(reports, key=lambda r: r["data"]):
        name = Path(report["data"]).name
        for r in report["rows"]:
            where = _built_by(r["partitions"])
            if r.get("partitions_only"):
                where += ", partition tasks alone"
            worker = f"{r['worker_peak_rss_mb']:,.0f} MB" if r["partitions"] else "–"
            rows = f"{r['rows_peak_rss_mb']:,.0f} MB" if r.get("rows_peak_rss_mb") else "–"
            same = {True: "yes", False: "**no**", None: "–"}[r.get("same_chunks")]
            lines.append(
                f"| {name} | {where} | {r['wall_s']:.1f} s | {r['embed_s']:.1f} s "
                f"| {r['driver_peak_rss_mb']:,.0f} MB | {worker} | {rows} | {same} |"
            )
    return "\n".join(lines)


def render_serving(reports: list[dict]) -> str:
    """Render serving from shards beside one process (``evals.bench.cluster_serving --out``)."""
    lines = [
        "| run | served by | method | p50 / p95 | rounds per query (mean / max) | bytes per query "
        "| RSS per shard | router RSS | same top 10 |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for report in sorted(reports, key=lambda r: r.get("label", "")):  # labels start with a date
        run = report.get("label") or "–"
        for r in report["rows"]:
            served = (
                f"{r['shards']} shard{'s' * (r['shards'] > 1)}" if r["shards"] else "one process"
            )
            shard = ", ".join(f"{m:,.0f}" for m in r.get("shard_rss_mb", [])) or "–"
            for method in ("dense", "gnn_ret"):
                m = r[method]
                rounds = f"{m['rounds_mean']:.1f} / {m['rounds_max']}" if r["shards"] else "–"
                moved = f"{m['bytes_mean'] / 1024:,.1f} KB" if r["shards"] else "–"
                lines.append(
                    f"| {run} | {served} | {method} | {m['p50_ms']:.1f} / {m['p95_ms']:.1f} ms "
                    f"| {rounds} "
                    f"| {moved} | {shard}{' MB' if r['shards'] else ''} "
                    f"| {r['router_rss_mb']:,.0f} MB | {m['same_top10']:.0%} |"
                )
    return "\n".join(lines)


def render_graphs(reports: list[dict]) -> str:
    """Render graph builds, one process's and the cluster's (``evals.bench.cluster_graphs``)."""
    lines = [
        "| chunks | graph build | the tasks do | wall | driver peak RSS "
        "| largest child's peak RSS | task peak RSS | neighbour recall@10 |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for report in reports:
        for r in report["rows"]:
            where = _built_by(r["partitions"])
            task = f"{r['task_peak_rss_mb']:,.0f} MB" if r.get("task_peak_rss_mb") else "–"
            # builds measured before the tasks read the chunks found only the neighbours
            work = r.get("tasks", "neighbours") if r["partitions"] else "–"
            work += f" (commit {r['code']})" if r.get("code") else ""
            lines.append(
                f"| {report['chunks']:,} | {where} | {work} | {r['wall_s']:.1f} s "
                f"| {r['driver_peak_rss_mb']:,.0f} MB | {r['children_peak_rss_mb']:,.0f} MB "
                f"| {task} | {r['recall_at_10']:.4f} |"
            )
    return "\n".join(lines)


def render_projection(report: dict) -> str:
    """Project a build worker's peak at larger corpora from the partition runs' linear fit.

    ``report``: the partition tasks alone at one size and several P (``evals.bench.cluster
    --partitions-only``): peak = fixed + per passage × passages of a partition.
    """
    rows = [r for r in report["rows"] if r.get("partitions_only")]
    size = int(report["data"].split()[-1])  # "synthetic N"
    xs = [size / r["partitions"] for r in rows]
    ys = [r["worker_peak_rss_mb"] for r in rows]
    fixed, slope = line(list(zip(xs, ys, strict=True)))
    worst = max(abs(y - (fixed + slope * x)) for x, y in zip(xs, ys, strict=True))
    lines = [
        f"A worker's peak = {fixed:,.0f} MB + {slope * 1024:.2f} KB × passages of its "
        f"partition (least squares over P = {', '.join(str(r['partitions']) for r in rows)} at "
        f"{size / 1e6:g}M; every point within {worst:.0f} MB). The fewest partitions (a power "
        f"of two) that keep a worker under {WORKER_LIMIT_MB / 1024:.0f} GB:",
        "",
        "| passages | partitions | passages per partition | worker peak RSS (projected) |",
        "|---|---|---|---|",
    ]
    for n in (4_000_000, *SIZES):
        count = 1
        while fixed + slope * n / count > WORKER_LIMIT_MB:
            count *= 2
        lines.append(f"| {n / 1e6:g}M | {count} | {n / count:,.0f} "
                     f"| {_number(fixed + slope * n / count, 'MB')} |")  # fmt: skip
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Write the cost model into docs/scale-measurements.md, or check it (--check)."""
    parser = argparse.ArgumentParser(
        prog="python -m hopgraph.evals.rendering.cost_model",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--check", action="store_true", help="fail if docs/scale-measurements.md differs"
    )
    args = parser.parse_args(argv)
    table = render(json.loads(MEASUREMENTS.read_text(encoding="utf-8")))
    recall = render_recall(json.loads(ANN_RECALL.read_text(encoding="utf-8")))
    found = [json.loads(p.read_text()) for p in sorted(MEASUREMENTS.parent.glob("cluster-*.json"))]
    cluster = render_cluster([r for r in found if "model" in r])  # builds
    serving = render_serving([r for r in found if r.get("kind") == "serving"])
    graphs = render_graphs([r for r in found if r.get("kind") == "graphs"])
    parts = [r for r in found if any(row.get("partitions_only") for row in r.get("rows", []))]
    projection = render_projection(parts[0]) if parts else ""
    processes = render_processes([r for r in found if r.get("kind") in KINDS])
    text = DOC.read_text(encoding="utf-8")
    fresh = updated(updated(text, "cost-model", table), "ann-recall", recall)
    fresh = updated(updated(fresh, "cluster-build", cluster), "cluster-serving", serving)
    fresh = updated(updated(fresh, "cluster-graphs", graphs), "cluster-projection", projection)
    fresh = updated(fresh, "cluster-processes", processes)
    if args.check:
        if fresh != text:
            print("docs/scale-measurements.md's cost model differs from the measurements: run "
                  "`python -m hopgraph.evals.rendering.cost_model`", file=sys.stderr)  # fmt: skip
            return 1
        return 0
    DOC.write_text(fresh, encoding="utf-8")
    print(table, recall, cluster, serving, graphs, projection, processes, sep="\n\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
