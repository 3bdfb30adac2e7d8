"""The IVF's recall and speed at scale, on vectors like real ones (graph_store/stores/ivf.py).

The eval sets are too small to show what the IVF gives up at a million rows (there it reads 64
of 2,000 lists, 3 %; on a 7,000-chunk eval set 64 of 169). This builds the IVF over ``--size``
rows of ``--vectors`` (``real``: the cached eval indexes' MiniLM vectors tiled with noisy copies;
``hierarchical`` or ``topics``: hopgraph.evals.bench.graphs), asks it for the top 10 of
``--queries`` rows (noisy copies of random rows, so a query is near but not on a row), rescored
exactly as dense search does, and reports recall@10 against exact search (ties count as found),
the build time and the time per query.

    python -m hopgraph.evals.bench.ivf_recall --size 1000000 --vectors real
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from hopgraph.evals.bench import save_json
from hopgraph.evals.bench.ann import make_vectors
from hopgraph.evals.metrics import percentile
from hopgraph.graph_store.stores.vector_search import SearchSegment


def noisy_queries(vectors: np.ndarray, count: int, noise: float = 0.05) -> np.ndarray:
    """Return ``count`` unit queries near, not on, random rows (σ ``noise`` per dimension)."""
    rng = np.random.default_rng(11)
    asked = vectors[rng.integers(0, len(vectors), count)]
    asked = asked + noise * rng.standard_normal(asked.shape).astype(np.float32)
    return asked / np.linalg.norm(asked, axis=1, keepdims=True)


def share_found(
    vectors: np.ndarray, query: np.ndarray, rows: np.ndarray, kth: float, k: int
) -> float:
    """Return recall@k of found ``rows``: those reaching the exact k-th cosine (ties count)."""
    return min(int((vectors[rows] @ query >= kth - 1e-6).sum()), k) / k


def measure(vectors: np.ndarray, queries: int, k: int = 10) -> dict:
    """Return the IVF's build time, recall@k against exact and query times over ``vectors``."""
    from hopgraph.graph_store.stores.ivf import IVF

    asked = noisy_queries(vectors, queries)
    started = time.perf_counter()
    ivf = IVF.build(vectors)
    build_s = time.perf_counter() - started
    approximate = SearchSegment(vectors, np.arange(len(vectors)), ivf)
    exact = SearchSegment(vectors, np.arange(len(vectors)), None)
    found, times = [], []
    for query in asked:
        started = time.perf_counter()
        rows, _ = approximate.top(query, k)
        times.append((time.perf_counter() - started) * 1000)
        _, scores = exact.top(query, k)
        found.append(share_found(vectors, query, rows, float(np.min(scores)), k))
    return {
        "rows": len(vectors),
        "lists": ivf.lists,
        "probed": ivf.nprobe,
        "build_s": build_s,
        "recall_at_10": float(np.mean(found)),
        "query_ms_p50": percentile(times, 50),
        "query_ms_p95": percentile(times, 95),
    }


def main(argv: list[str] | None = None) -> int:
    """Measure one size and kind of vectors; print a line, write JSON with --out."""
    parser = argparse.ArgumentParser(
        prog="python -m hopgraph.evals.bench.ivf_recall",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--vectors", choices=["real", "hierarchical", "topics"], default="real")
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    vectors = np.ascontiguousarray(make_vectors(args.vectors, args.size, 0.05), dtype=np.float32)
    row = {"vectors": args.vectors, **measure(vectors, args.queries)}
    print(
        f"{args.vectors} {row['rows']:,} rows: {row['lists']} lists, {row['probed']} probed; "
        f"build {row['build_s']:.1f} s; recall@10 {row['recall_at_10']:.4f}; query p50 "
        f"{row['query_ms_p50']:.2f} ms, p95 {row['query_ms_p95']:.2f} ms"
    )
    if args.out:
        save_json(args.out, row)
    return 0


if __name__ == "__main__":
    sys.exit(main())
