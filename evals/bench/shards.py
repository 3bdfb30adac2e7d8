"""Sharded dense search, simulated as processes on this machine (docs/scaling.md).

``python -m hopgraph.evals.bench.shards --size 1000000 --shards 4`` splits ``--size`` vectors (the
MiniLM eval vectors tiled with noisy copies, hopgraph.evals.bench.ann ``real``) into ``--shards``
contiguous parts. Each shard is a process that builds the IVF of its part
(graph_store/stores/ivf.py, all shards at once: a sharded build) and answers queries with its top k,
rescored exactly, as a vector segment does. A coordinator sends each query to every shard, merges
their answers by score and compares the merged top 10 with the exact top 10 of all the rows
(recall@10, ties counted). It reports the build's wall time against one process building the whole
IVF, and the query latency with the round trip to the shards (pipes between processes, not a
network).
"""

from __future__ import annotations

import argparse
import itertools
import multiprocessing as mp
import sys
import time
from multiprocessing.connection import Connection
from pathlib import Path

import numpy as np

from hopgraph.evals.bench import save_json
from hopgraph.evals.bench.ivf_recall import noisy_queries, share_found
from hopgraph.evals.metrics import percentile


def _shard(vectors: np.ndarray, offset: int, pipe: Connection) -> None:
    """Build the IVF of one part; answer (query, k) with its top k (rows offset to global)."""
    from hopgraph.graph_store.stores.ivf import IVF
    from hopgraph.graph_store.stores.vector_search import SearchSegment

    started = time.perf_counter()
    segment = SearchSegment(vectors, np.arange(len(vectors)), IVF.build(vectors))
    pipe.send(time.perf_counter() - started)
    while (asked := pipe.recv()) is not None:
        query, k = asked
        rows, scores = segment.top(query, k)
        pipe.send((rows + offset, scores))


def measure(vectors: np.ndarray, shards: int, queries: int = 300, k: int = 10) -> dict:
    """Return the sharded build and query figures (module doc)."""
    bounds = np.linspace(0, len(vectors), shards + 1).astype(int)
    context = mp.get_context("fork")  # the parts are handed over by fork, not copied through pipes
    pipes, workers = [], []
    started = time.perf_counter()
    for start, end in itertools.pairwise(bounds):
        ours, theirs = context.Pipe()
        worker = context.Process(target=_shard, args=(vectors[start:end], start, theirs))
        worker.start()
        pipes.append(ours)
        workers.append(worker)
    builds = [pipe.recv() for pipe in pipes]
    build_wall = time.perf_counter() - started
    asked = noisy_queries(vectors, queries)
    found, times = [], []
    for query in asked:
        began = time.perf_counter()
        for pipe in pipes:
            pipe.send((query, k))
        answers = [pipe.recv() for pipe in pipes]
        rows = np.concatenate([a[0] for a in answers])
        scores = np.concatenate([a[1] for a in answers])
        merged = rows[np.argsort(-scores, kind="stable")[:k]]
        times.append((time.perf_counter() - began) * 1000)
        kth = float(np.partition(vectors @ query, -k)[-k])
        found.append(share_found(vectors, query, merged, kth, k))
    for pipe in pipes:
        pipe.send(None)
    for worker in workers:
        worker.join()
    return {
        "rows": len(vectors),
        "shards": shards,
        "build_wall_s": build_wall,
        "build_per_shard_s": builds,
        "recall_at_10": float(np.mean(found)),
        "query_ms_p50": percentile(times, 50),
        "query_ms_p95": percentile(times, 95),
    }


def main(argv: list[str] | None = None) -> int:
    """Measure one sharding; print a line, write JSON with --out."""
    parser = argparse.ArgumentParser(
        prog="python -m hopgraph.evals.bench.shards",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    from hopgraph.evals.bench.ann import make_vectors

    vectors = np.ascontiguousarray(make_vectors("real", args.size, 0.05), dtype=np.float32)
    row = measure(vectors, args.shards, args.queries)
    print(
        f"{row['rows']:,} rows in {row['shards']} shards: build {row['build_wall_s']:.1f} s wall "
        f"(shards {', '.join(f'{s:.1f}' for s in row['build_per_shard_s'])} s); recall@10 "
        f"{row['recall_at_10']:.4f}; query p50 {row['query_ms_p50']:.2f} ms, p95 "
        f"{row['query_ms_p95']:.2f} ms"
    )
    if args.out:
        save_json(args.out, row)
    return 0


if __name__ == "__main__":
    sys.exit(main())
