"""Writes to a built index in one process beside writes whose neighbour update a cluster does.

    python -m hopgraph.evals.bench.cluster_writes --index DIR --new 1000 --partitions 8 \
        --out evals/results/scale/cluster-writes-1m.json

Each write is its own fresh process, as ``hopgraph add`` / ``hopgraph delete`` run: the
documents of ``--docs`` (ids the index does not hold), or ``--new N`` synthetic ones like the
scale benchmark's (seeded, ids ``w…``, saved in the index's parent folder), are added, then
deleted again, so the index ends with the documents it had (two generations later). First in
one process, then with ``--cluster local`` (``--partitions`` tasks bring the semantic
neighbour lists up to date, cluster/list_update.py, and a task per saved part the
offline readings, cluster/reading_update.py). Reported per write: wall time;
the driver's own peak RSS (VmHWM: the process that reads the chunks, updates the readings and
builds the graphs) and the largest of its forked children's (the tables' writer, the readings'
workers, the knowledge graph's builder, the one-process neighbour update; forked, they share the
driver's pages, counted in each one's RSS too); the largest peak RSS of a task; and whether the
lists after the cluster's add are the one-process add's (the same rows; cosines to 1e-6).
``--timeline DIR`` writes where each write's driver held its memory, step by step. A
local cluster shares this machine's cores: the figures say how memory divides, not how fast
more machines write.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from hopgraph.evals.bench import save_json
from hopgraph.evals.bench.cluster_graphs import Timeline, _own_peak_mb
from hopgraph.graph_store import Index
from hopgraph.graph_store.graphs.semantic import NEIGHBOURS_FILE, Neighbours


def child(
    index: Path, write: str, docs: Path, partitions: int, timeline: Path | None = None
) -> dict[str, Any]:
    """Do one write here (``partitions`` 0: in this process alone); return its figures.

    ``timeline``: a folder to write this write's :class:`Timeline` into.
    """
    from hopgraph.graph_store import add_documents, delete_documents, load_documents

    sampled = Timeline() if timeline is not None else None
    documents = load_documents(docs)
    started = time.perf_counter()
    peaks: dict[str, float] = {}

    def run(tasks: object) -> None:
        if write == "add":
            add_documents(index, documents, False, None, tasks)  # type: ignore[arg-type]
        else:
            delete_documents(index, [d.id for d in documents], tasks)  # type: ignore[arg-type]

    if partitions:
        from hopgraph.graph_store.cluster.connect import connected
        from hopgraph.graph_store.cluster.graph_parts import graphs_on
        from hopgraph.graph_store.cluster.list_update import updated_on
        from hopgraph.graph_store.cluster.reading_update import reading_updated_on
        from hopgraph.graph_store.cluster.tasks import ray_map
        from hopgraph.graph_store.index.graph_build import GraphTasks

        with connected("local") as ray:
            update, reread = updated_on(ray, partitions, peaks), reading_updated_on(ray, peaks)
            parts, stores = graphs_on(ray, peaks), ray_map(ray, peaks)
            run(GraphTasks(update=update, reread=reread, parts=parts, stores=stores))
    else:
        run(None)
    row: dict[str, Any] = {"write": write, "documents": len(documents)}
    row |= {"partitions": partitions, "wall_s": time.perf_counter() - started}
    row["driver_peak_rss_mb"] = _own_peak_mb()
    # its own children only (RUSAGE_CHILDREN of the benchmark's process is a running maximum)
    row["children_peak_rss_mb"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    if peaks:
        row["task_peak_rss_mb"] = max(peaks.values())
        row["task_peaks_mb"] = peaks  # by the function a task ran
    if sampled is not None and timeline is not None:
        sampled.save(timeline / f"{write}-{partitions or 'one-process'}.txt")
    return row


def synthetic_new(count: int, folder: Path) -> Path:
    """Write ``count`` synthetic documents (seed 7, ids ``w…``: new to any scale corpus)."""
    from hopgraph.evals.bench.graphs import synthetic_corpus

    path = folder / f"new-{count}.jsonl"
    chunks, _ = synthetic_corpus(count, seed=7, dimension=2)  # vectors unused: the model embeds
    with path.open("w", encoding="utf-8") as out:
        for c in chunks:
            out.write(json.dumps({"id": f"w{c.id}", "title": c.title, "text": c.text}) + "\n")
    return path


def measured(
    index: Path, write: str, docs: Path, partitions: int, timeline: Path | None = None
) -> dict:
    """Run one write in a fresh process; return its figures."""
    argv = [sys.executable, "-m", "hopgraph.evals.bench.cluster_writes", "--index", str(index)]
    argv += ["--docs", str(docs), "--child", write, str(partitions)]
    argv += ["--timeline", str(timeline)] if timeline is not None else []
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(argv, check=True, env=env, capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def lists_of(index: Path) -> Neighbours:
    """Return the index's semantic neighbour lists."""
    with Index.open(index) as idx:
        if idx.manifest.graph is None:
            raise SystemExit(f"{index} has no graphs: `hopgraph graph build --index {index}`")
        return Neighbours.load(idx.manifest.path(index, "graph") / NEIGHBOURS_FILE)


def same_lists(one: Neighbours, other: Neighbours) -> tuple[bool, int]:
    """Tell whether two sets of lists agree; return it and how many lists differ by a tie.

    The same cosines (to 1e-6), and the same chunks but where a list ends in a tie: there
    either search may keep another of the tied chunks.
    """
    if one.rows.shape != other.rows.shape:
        return False, 0
    if not np.allclose(one.scores, other.scores, rtol=0, atol=1e-6):
        return False, 0
    apart = one.rows != other.rows
    last = np.where(np.isfinite(one.scores), one.scores, np.inf).min(axis=1, keepdims=True)
    tied = np.abs(one.scores - last) <= 1e-6
    return bool(not (apart & ~tied).any()), int(apart.any(axis=1).sum())


def main(argv: list[str] | None = None) -> int:
    """Run the writes, print each row, save the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--index", type=Path, required=True, help="a built index with graphs")
    new = parser.add_mutually_exclusive_group(required=True)
    new.add_argument("--docs", type=Path, help="new documents (JSONL)")
    new.add_argument("--new", type=int, metavar="N", help="N new synthetic documents")
    parser.add_argument("--partitions", type=int, default=8, help="update tasks (default 8)")
    parser.add_argument("--no-single", action="store_true", help="skip the one-process writes")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help="where to save the rows (JSON)")
    parser.add_argument(
        "--timeline",
        type=Path,
        metavar="DIR",
        help="write each write's driver RSS by the function it is in (0.25 s samples) there",
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
        write, partitions = args.child
        print(json.dumps(child(args.index, write, args.docs, int(partitions), args.timeline)))
        return 0
    lists_of(args.index)  # an index with graphs, or a clear stop before any write
    if args.docs is None:
        args.docs = synthetic_new(args.new, args.index.resolve().parent)
    rows, added = [], []
    for partitions in ([] if args.no_single else [0]) + [args.partitions]:
        for write in ("add", "delete"):
            rows.append(measured(args.index, write, args.docs, partitions, args.timeline))
            print(json.dumps(rows[-1]), flush=True)
            if write == "add":
                added.append(lists_of(args.index))
    if len(added) == 2:
        same, ties = same_lists(*added)
        rows[2] |= {"same_lists_as_one_process": same, "lists_apart_by_a_tie": ties}
        print(f"the cluster's add gives one process's lists: {same} ({ties} apart by a tie)")
    if args.out:
        with Index.open(args.index) as idx:
            chunks = len(idx.chunks)
        save_json(args.out, {"kind": "writes", "index": str(args.index), "chunks": chunks,
                             "docs": str(args.docs), "series": args.series,
                             "rows": rows})  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
