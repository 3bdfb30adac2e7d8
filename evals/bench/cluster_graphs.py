"""The graph build of one process beside the one whose chunks and neighbours a cluster's tasks do.

    python -m hopgraph.evals.bench.cluster_graphs --index DIR --partitions 8 --sample 2000 \
        --out evals/results/scale/cluster-graphs-1m.json

Each build is its own fresh process (``hopgraph graph build`` as a user runs it; the cluster's
with a local cluster it starts, ``--cluster local``), one after the other on the same index
(each commits a generation). Reported per build: wall time; the driver's own peak RSS (VmHWM,
the process that extracts and builds the graphs) and the largest of its children's (the
knowledge graph's forked builder, and for the cluster the processes Ray started); for the
cluster, the largest peak RSS of a worker that ran its tasks (reading the chunks, finding the
neighbour lists); the graphs' counts (the same extractions give the same); and the recall@k of
the neighbour lists on ``--sample`` random rows against the exact lists (a found neighbour
counts when its cosine reaches the exact k-th). A local cluster shares this machine's cores: the
figures say how memory divides and what the work costs, not how fast more machines build.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path

import numpy as np

from hopgraph.evals.bench import save_json
from hopgraph.graph_store import Index
from hopgraph.graph_store.graphs.semantic import NEIGHBOURS_FILE, Neighbours, exact_top_k
from hopgraph.graph_store.index.stored_vectors import read_vectors


class Timeline:
    """This process's RSS and the functions it is in, sampled on a thread (``--timeline``).

    Where a driver's memory goes, step by step: a line each time the innermost function
    changes, then the peak with its stack (the 1M write's breakdown in
    docs/scale-measurements.md).
    """

    def __init__(self, every: float = 0.25) -> None:
        self.samples: list[tuple[float, float, list[str]]] = []
        self.every, self.main, self.stop = every, threading.get_ident(), threading.Event()
        threading.Thread(target=self._sample, daemon=True).start()

    def _sample(self) -> None:
        started = time.perf_counter()
        while not self.stop.wait(self.every):
            frame = sys._current_frames().get(self.main)
            stack = [f"{Path(f.filename).stem}.{f.name}:{f.lineno}"
                     for f in traceback.extract_stack(frame)][-8:] if frame else []  # fmt: skip
            self.samples.append((time.perf_counter() - started, _rss_mb(), stack))

    def save(self, path: Path) -> None:
        """Stop sampling and write the timeline."""
        self.stop.set()
        lines, last = [], None
        for at, rss, stack in self.samples:
            if stack[-1:] != last:
                lines.append(f"{at:8.1f} s {rss:8.0f} MB  {' < '.join(reversed(stack[-4:]))}")
                last = stack[-1:]
        if self.samples:
            at, rss, stack = max(self.samples, key=lambda sample: sample[1])
            lines.append(f"peak {rss:.0f} MB at {at:.1f} s: {' < '.join(reversed(stack))}")
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text(encoding="ascii").splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def child(index: Path, partitions: int, timeline: Path | None = None) -> dict[str, float]:
    """Build the graphs here (``partitions`` 0: in this process alone); return the figures.

    ``timeline``: a folder to write where this build's driver held its memory into.
    """
    from hopgraph.graph_store.index.build import build_graphs

    sampled = Timeline() if timeline is not None else None
    started = time.perf_counter()
    peaks: dict[str, float] = {}
    if partitions:
        from hopgraph.graph_store.cluster.connect import connected
        from hopgraph.graph_store.cluster.graph_parts import graphs_on
        from hopgraph.graph_store.cluster.neighbours import neighbours_on
        from hopgraph.graph_store.cluster.readings import readings_on
        from hopgraph.graph_store.index.graph_build import GraphTasks

        with connected("local") as ray:
            tasks = GraphTasks(
                neighbours_on(ray, partitions, peaks),
                readings_on(ray, partitions, peaks),
                parts=graphs_on(ray, peaks),
            )
            build_graphs(index, show_progress=False, tasks=tasks)
    else:
        build_graphs(index, show_progress=False)
    if sampled is not None and timeline is not None:
        sampled.save(timeline / f"graphs-{partitions or 'one-process'}.txt")
    row = {"partitions": partitions, "wall_s": time.perf_counter() - started}
    if partitions:
        row["tasks"] = "reading, keywords, neighbours, both graphs"
    row["driver_peak_rss_mb"] = _own_peak_mb()
    if peaks:
        row["task_peak_rss_mb"] = max(peaks.values())
        row["task_peaks_mb"] = peaks  # by the function a task ran
    return row


def _own_peak_mb() -> float:
    """Return this process's own peak RSS (VmHWM), not what it inherited from its parent."""
    for line in Path("/proc/self/status").read_text(encoding="ascii").splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measured(
    index: Path, partitions: int, timeline: Path | None = None
) -> tuple[dict[str, float], Neighbours]:
    """Run one build in a fresh process; return its figures and the lists it found."""
    argv = [sys.executable, "-m", "hopgraph.evals.bench.cluster_graphs", "--index", str(index)]
    argv += ["--child", str(partitions)]
    argv += ["--timeline", str(timeline)] if timeline is not None else []
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(argv, check=True, env=env, capture_output=True, text=True)
    row = json.loads(done.stdout.strip().splitlines()[-1])
    row["children_peak_rss_mb"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    with Index.open(index) as idx:
        lists = Neighbours.load(idx.manifest.path(index, "graph") / NEIGHBOURS_FILE)
        counts = idx.manifest.graph["counts"]  # the same extractions give the same counts
    row |= {"edges": counts["edges"], "entities": counts["entities"], "triples": counts["triples"]}
    return row, lists


def recall(index: Path, found: list[Neighbours], k: int, sample: int) -> list[float]:
    """Return each list set's recall@k on ``sample`` random rows against the exact lists."""
    with Index.open(index) as idx:
        vectors = read_vectors(index, idx.manifest, list(idx.chunks.values()))
    rows = np.sort(np.random.default_rng(3).choice(len(vectors), min(sample, len(vectors)),
                                                   replace=False))  # fmt: skip
    exact, exact_scores = exact_top_k(vectors, k, 256, rows)
    kth = exact_scores.min(axis=1)
    out = []
    for lists in found:
        listed = lists.rows[rows, :k]
        got = np.einsum("ij,ikj->ik", vectors[rows], vectors[np.maximum(listed, 0)])
        got[listed < 0] = -np.inf
        out.append(float((got >= kth[:, None] - 1e-6).sum() / exact.size))
    return out


def main(argv: list[str] | None = None) -> int:
    """Run the builds, print each row, save the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--index", type=Path, required=True, help="a built index (graphs or not)")
    parser.add_argument("--partitions", default="8", help="neighbour tasks per step (default 8)")
    parser.add_argument("--no-single", action="store_true", help="skip the one-process build")
    parser.add_argument("--sample", type=int, default=2000, help="rows the recall is taken on")
    parser.add_argument("-k", type=int, default=10, help="recall@k (default 10, the lists' width)")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help="where to save the rows (JSON)")
    parser.add_argument(
        "--timeline", type=Path, help="a folder: where each driver held its memory, step by step"
    )
    parser.add_argument(
        "--series",
        default="",
        help="runs of one commit at several sizes (the cost model projects each process from them)",
    )
    args = parser.parse_args(argv)
    if args.timeline is not None:
        args.timeline.mkdir(parents=True, exist_ok=True)
    if args.child is not None:
        print(json.dumps(child(args.index, args.child, args.timeline)))
        return 0
    counts = ([] if args.no_single else [0]) + [int(p) for p in args.partitions.split(",")]
    rows, lists = [], []
    for count in counts:
        row, found = measured(args.index, count, args.timeline)
        rows.append(row)
        lists.append(found)
        print(json.dumps(row), flush=True)
    for row, value in zip(rows, recall(args.index, lists, args.k, args.sample), strict=True):
        row[f"recall_at_{args.k}"] = value
        print(f"P = {row['partitions']}: recall@{args.k} {value:.4f}")
    if args.out:
        with Index.open(args.index) as idx:
            chunks = len(idx.chunks)
        save_json(args.out, {"kind": "graphs", "index": str(args.index), "chunks": chunks,
                             "series": args.series, "rows": rows})  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
