"""Choose the approximate nearest-neighbour library for semantic edges: recall against exact, time.

Semantic edges link each chunk to its top-k cosine neighbours (k = 5). Exact all-pairs top-k is
quadratic; this measures faiss-cpu (HNSW), usearch (HNSW) and, when installed, hnswlib against
the exact answer on real embeddings: every cached eval index's chunk vectors, repeated with a
little noise (σ ``--noise``, then renormalised) until ``--size`` rows, so the neighbourhoods keep
the structure of MiniLM's space. Prints build + query seconds, peak RSS growth and recall@k per
library; ``--out`` saves them as JSON.

    python -m evals.bench.ann --size 100000
"""

from __future__ import annotations

import argparse
import resource
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from evals.bench import save_json
from graph_store import Index
from hopgraph.settings import cache_dir


def real_vectors(size: int, noise: float, seed: int = 0) -> np.ndarray:
    """Return ``size`` unit rows: the cached eval indexes' chunk vectors, tiled with noise."""
    found = []
    for directory in sorted((cache_dir() / "eval-indexes").glob("*/")):
        with Index.open(directory) as index:
            found.append(index.embedding_matrix)
    if not found:
        raise SystemExit("no cached eval index: run `hopgraph eval --data ...` once first")
    base = np.concatenate(found).astype(np.float32)
    rng = np.random.default_rng(seed)
    rows = base[rng.integers(0, len(base), size)]
    rows[len(base) :] += noise * rng.standard_normal((max(size - len(base), 0), base.shape[1]))
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def exact_top(vectors: np.ndarray, k: int) -> np.ndarray:
    """Return each row's k nearest other rows, exactly (as ``semantic_edges`` finds them)."""
    out = np.empty((len(vectors), k), dtype=np.int64)
    for start in range(0, len(vectors), 2048):
        scores = vectors[start : start + 2048] @ vectors.T
        scores[np.arange(len(scores)), np.arange(start, start + len(scores))] = -np.inf
        out[start : start + 2048] = np.argpartition(-scores, k - 1, axis=1)[:, :k]
    return out


def with_faiss(vectors: np.ndarray, k: int) -> np.ndarray:
    """Return each row's k neighbours from faiss's HNSW (M 32, efConstruction 80, ef 64)."""
    import faiss

    index = faiss.IndexHNSWFlat(vectors.shape[1], 32, faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efConstruction = 80
    index.add(vectors)
    index.hnsw.efSearch = 64
    _, found = index.search(vectors, k + 1)
    return _drop_self(found, k)


def with_usearch(vectors: np.ndarray, k: int) -> np.ndarray:
    """Return each row's k neighbours from usearch's HNSW (M 16, expansion 128 / 64)."""
    from usearch.index import Index as USearch

    index = USearch(ndim=vectors.shape[1], metric="cos", connectivity=16, expansion_add=128,
                    expansion_search=64)  # fmt: skip
    keys = np.arange(len(vectors), dtype=np.uint64)
    index.add(keys, vectors)
    found = index.search(vectors, k + 1).keys.astype(np.int64)
    return _drop_self(found, k)


def with_hnswlib(vectors: np.ndarray, k: int) -> np.ndarray:
    """Return each row's k neighbours from hnswlib (M 16, efConstruction 100, ef 64)."""
    import hnswlib

    index = hnswlib.Index(space="ip", dim=vectors.shape[1])
    index.init_index(max_elements=len(vectors), ef_construction=100, M=16)
    index.add_items(vectors)
    index.set_ef(64)
    found, _ = index.knn_query(vectors, k=k + 1)
    return _drop_self(found.astype(np.int64), k)


def _drop_self(found: np.ndarray, k: int) -> np.ndarray:
    """Remove each row's own id from its k + 1 answers (or the last, if self is missing)."""
    own = np.arange(len(found))[:, None]
    out = np.empty((len(found), k), dtype=np.int64)
    for row, ids in enumerate(found):
        others = ids[ids != own[row, 0]]
        out[row] = others[:k]
    return out


def recall(found: np.ndarray, exact: np.ndarray) -> float:
    """Return the share of exact neighbours found, over all rows."""
    hits = sum(len(set(a) & set(b)) for a, b in zip(found, exact, strict=True))
    return hits / exact.size


def measure(name: str, run: Callable[[], np.ndarray]) -> tuple[dict, np.ndarray]:
    """Time ``run`` and the growth of peak RSS (MB) it caused."""
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.perf_counter()
    found = run()
    seconds = time.perf_counter() - started
    grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    return {"library": name, "seconds": seconds, "peak_rss_growth_mb": grown}, found


def main(argv: list[str] | None = None) -> None:
    """Compare the libraries on one sample and print a table."""
    parser = argparse.ArgumentParser(prog="python -m evals.bench.ann", description=__doc__)
    parser.add_argument("--size", type=int, default=100_000, help="rows (default 100000)")
    parser.add_argument("-k", type=int, default=5, help="neighbours per row (default 5)")
    parser.add_argument("--noise", type=float, default=0.05, help="σ of the tiling noise")
    parser.add_argument("--out", type=Path, help="write the results as JSON")
    args = parser.parse_args(argv)
    vectors = np.ascontiguousarray(real_vectors(args.size, args.noise))
    exact_row, exact = measure("exact", lambda: exact_top(vectors, args.k))
    rows = [exact_row | {"recall": 1.0}]
    for name, run in (("faiss-hnsw", with_faiss), ("usearch", with_usearch),
                      ("hnswlib", with_hnswlib)):  # fmt: skip
        try:
            row, found = measure(name, lambda run=run: run(vectors, args.k))
        except ImportError:
            print(f"{name}: not installed, skipped")
            continue
        rows.append(row | {"recall": recall(found, exact)})
    print(f"{args.size} rows, k = {args.k}")
    for row in rows:
        print(f"{row['library']:<12} {row['seconds']:8.1f} s  recall {row['recall']:.4f}  "
              f"peak RSS +{row['peak_rss_growth_mb']:.0f} MB")  # fmt: skip
    if args.out:
        save_json(args.out, {"size": args.size, "k": args.k, "noise": args.noise, "rows": rows})


if __name__ == "__main__":
    main()
