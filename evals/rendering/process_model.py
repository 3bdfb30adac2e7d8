"""Each process of a cluster's builds, writes and serving, projected to 3M and 10M passages.

A task of a step takes a share of the rows (the step's rows over its tasks); what it holds is a
fixed part, a part that grows with the corpus whatever its share (a file of every row it maps,
an id per chunk) and a part that grows with its share:

    peak = a + b · passages + c · passages / tasks

Since a step takes more tasks as the corpus grows (cluster/tasks.TASK_ROWS: at most 2^17 rows a
task), the share stays bounded and only ``b`` makes a task grow. Runs of one ``series`` (one
commit) at several sizes and task counts separate the three:

- two sizes or more and two task counts or more: ``a``, ``b``, ``c`` by least squares ("fit");
- one size at two task counts: ``c`` from the difference; the rest, ``a + b · n``, is projected
  as if it all grew with the corpus (``a`` = 0), an upper bound since ``a`` is not negative
  ("bound");
- several sizes at one task count: the line through them at that count ("line": what grows
  with the share counted as growing with the corpus, as the series of 2026-12-03 was read).

Drivers, the processes a driver forks (a write's tables' writer: ``children_peak_rss_mb``, the
largest of them) and routers hold no share: a line through their sizes, or the bound at one size.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from hopgraph.graph_store.cluster.tasks import TASK_ROWS

KINDS = ("graphs", "writes", "serving")
"""The kinds of cluster reports a series of process peaks is made of."""
WORKER_LIMIT_MB = 4096
"""The issue's bound on a process's peak RSS."""
TARGETS = (3_000_000, 10_000_000)

Point = tuple[int, int | None, float]
"""A process's peak in one run: passages, the run's tasks a step (None: a server's), MB."""


@dataclass(frozen=True)
class Model:
    """``peak = a + b · passages + c · share`` and how it was found (see the module doc)."""

    a: float
    b: float
    c: float
    how: str

    def at(self, n: int, least_tasks: int) -> float:
        """Return the projected peak at ``n`` passages, a step cut as task_count cuts it."""
        return self.a + self.b * n + self.c * n / tasks_at(n, least_tasks)


def tasks_at(n: int, least: int) -> int:
    """Return the tasks a step over ``n`` rows takes when ``least`` are asked (task_count)."""
    return max(least, math.ceil(n / TASK_ROWS))


def model(points: list[Point], shares: bool = True) -> Model | None:
    """Fit a process's :class:`Model` to its points; None below two points.

    ``shares``: whether the process takes a share of a step's rows (a task; not a driver).
    """
    if len(points) < 2:
        return None
    sizes = {n for n, _, _ in points}
    cut = [(n, t, mb) for n, t, mb in points if t and shares]
    if len({n / t for n, t, _ in cut}) >= 2:
        design = np.array([[1.0, n, n / t] for n, t, _ in cut])
        peaks = np.array([mb for _, _, mb in cut])
        if len(sizes) >= 2 and np.linalg.matrix_rank(design) == 3:
            return _fitted(design, peaks)
        if len(sizes) == 1:
            (n,) = sizes
            c = line([(n / t, mb) for n, t, mb in cut])[1]
            rest = float(np.mean([mb - c * n / t for n, t, mb in cut]))
            return Model(0.0, rest / n, c, "bound")
    if len(sizes) >= 2:
        a, b = line([(n, mb) for n, _, mb in points])
        return Model(a, b, 0.0, "line")
    (n,) = sizes
    return Model(0.0, float(np.mean([mb for _, _, mb in points])) / n, 0.0, "bound")


def _fitted(design: np.ndarray, peaks: np.ndarray) -> Model:
    """Fit ``a``, ``b``, ``c`` by least squares, neither ``b`` nor ``c`` below zero.

    A process does not shrink as the corpus or its share grows: where the free fit says so (the
    runs' noise, three points for three terms), the term is left out and the others fitted
    again, the one of the two with the smaller residual kept ("fit, b = 0" or "fit, c = 0").
    """
    a, b, c = np.linalg.lstsq(design, peaks, rcond=None)[0]
    if b >= 0 and c >= 0:
        return Model(float(a), float(b), float(c), "fit")
    kept = []
    for dropped, columns in (("b", [0, 2]), ("c", [0, 1])):
        found, *_ = np.linalg.lstsq(design[:, columns], peaks, rcond=None)
        if found[1] >= 0:
            terms = dict(zip(["a", *("c" if dropped == "b" else "b")], found, strict=True))
            residual = float(np.sum((design[:, columns] @ found - peaks) ** 2))
            kept.append((residual, dropped, terms))
    if not kept:
        return Model(float(np.mean(peaks)), 0.0, 0.0, "fit, b = c = 0")
    _, dropped, terms = min(kept, key=lambda found: found[0])
    b, c = float(terms.get("b", 0.0)), float(terms.get("c", 0.0))
    return Model(float(terms["a"]), b, c, f"fit, {dropped} = 0")


def line(points: list[tuple[float, float]]) -> tuple[float, float]:
    """Return (intercept, slope) of the least-squares line through ``points`` (x, y)."""
    xs, ys = [float(x) for x, _ in points], [mb for _, mb in points]
    mean_x, mean_y = sum(xs) / len(xs), sum(ys) / len(ys)
    slope = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / sum(
        (x - mean_x) ** 2 for x in xs
    )
    return mean_y - slope * mean_x, slope


def process_points(reports: list[dict]) -> tuple[dict[str, str], dict[str, list[Point]]]:
    """Return the series each kind is projected from, and each process's peaks.

    ``reports``: graph builds and writes (``evals.bench.cluster_graphs`` / ``cluster_writes``
    ``--out``) and serving runs; those of one ``series`` are one commit's, at several sizes or
    task counts (each row's ``partitions``). Each kind (graph builds, writes, serving) comes
    from the series whose runs of it reached the largest corpus, one with two runs or more
    (something to project from) before one of a single run; of two alike, the later name. So
    a commit that changed one kind's processes (the router) is projected from its own runs
    while the others keep a series that ran them. A series is named by its date and commit,
    which do not sort by time within a day: the widest runs are what a projection is drawn from.
    """
    reach: dict[tuple[str, str], int] = {}
    runs: dict[tuple[str, str], set[tuple[int, int | None]]] = {}
    for report in (r for r in reports if r.get("series")):
        key, n = (report["series"], report["kind"]), int(report["chunks"])
        reach[key] = max(reach.get(key, 0), n)
        runs.setdefault(key, set()).update((n, row.get("partitions")) for row in report["rows"])

    def rank(key: tuple[str, str]) -> tuple[bool, int, str]:
        return len(runs[key]) > 1, reach[key], key[0]

    chosen = {}
    for kind in KINDS:
        ran = [key for key in reach if key[1] == kind]
        if ran:
            chosen[kind] = max(ran, key=rank)[0]
    found: dict[str, list[Point]] = {}
    for report in (r for r in reports if r.get("series")):
        if chosen.get(report["kind"]) == report["series"]:
            _add_points(report, found)
    return chosen, found


def _add_points(report: dict, found: dict[str, list[Point]]) -> None:
    """Add each process's peak in one report's runs to ``found``."""
    n = int(report["chunks"])
    for row in report["rows"]:
        if report["kind"] == "serving":
            if row.get("shards"):
                name = f"router ({row['shards']} shards, gnn_ret)"
                found.setdefault(name, []).append((n, None, row["router_rss_mb"]))
            continue
        what = "graph build" if report["kind"] == "graphs" else row["write"]
        tasks = row.get("partitions")
        if "driver_peak_rss_mb" in row:  # left out where the run's driver did more (its note)
            found.setdefault(f"{what} driver", []).append((n, tasks, row["driver_peak_rss_mb"]))
        if report["kind"] == "writes" and "children_peak_rss_mb" in row:  # a graph build's
            # counts its driver too (a child of the benchmark's): the tables' writer here
            name = f"{what} driver's largest child"
            found.setdefault(name, []).append((n, tasks, row["children_peak_rss_mb"]))
        for task, mb in row.get("task_peaks_mb", {}).items():
            found.setdefault(f"{what} task `{task}`", []).append((n, tasks, mb))


def series_named(chosen: dict[str, str]) -> str:
    """Return which series each kind came from, in words ("Series X" when one for all)."""
    if len(set(chosen.values())) == 1:
        return f"Series {next(iter(chosen.values()))}"
    words = {"graphs": "graph builds", "writes": "writes", "serving": "serving"}
    return "Series " + "; ".join(f"{name} ({words[kind]})" for kind, name in chosen.items())


def _mb(value: float) -> str:
    if value >= 1024:
        return f"{value / 1024:.1f} GB"
    return f"{value:,.0f} MB"


def render_processes(reports: list[dict]) -> str:
    """Project each cluster process's peak RSS from its kind's series (see the module doc)."""
    chosen, found = process_points(reports)
    runs = sorted({(n, t) for points in found.values() for n, t, _ in points if t})
    if not runs:
        return ""
    least = min(t for _, t in runs)
    header = [f"{n / 1e6:g}M / {t}" for n, t in runs]
    lines = [
        f"{series_named(chosen)}: each process's peak RSS in each run (passages / tasks a "
        "step), what a row of a task's share adds, and the projection at 3M and 10M with a "
        f"step cut as `task_count` cuts it (at least {least} tasks, at most {TASK_ROWS:,} rows "
        "each: "
        f"{', '.join(f'{tasks_at(n, least)} tasks at {n / 1e6:g}M' for n in TARGETS)}); "
        f"**bold** past {WORKER_LIMIT_MB / 1024:.0f} GB; ≤: an upper bound (see how).",
        "",
        f"| process | {' | '.join(header)} | per share row | 3M | 10M | how |",
        f"|---|{'---|' * len(header)}---|---|---|---|",
    ]
    for name, points in sorted(found.items()):
        fitted = model(points, shares=" task " in name)
        if fitted is None:
            continue
        at: dict[tuple[int, int | None], float] = {}
        for n, t, mb in points:
            at[n, t] = max(at.get((n, t), 0.0), mb)
        measured = [_mb(at[run]) if run in at else "–" for run in runs]
        share = f"{fitted.c * 1024:,.2f} KB" if fitted.c else "–"
        projected = []
        for n in TARGETS:
            mb = fitted.at(n, least)
            text = ("≤ " if fitted.how == "bound" else "") + _mb(mb)
            projected.append(f"**{text}**" if mb > WORKER_LIMIT_MB else text)
        lines.append(f"| {name} | {' | '.join(measured)} | {share} | "
                     f"{' | '.join(projected)} | {fitted.how} |")  # fmt: skip
    return "\n".join(lines) if len(lines) > 4 else ""
