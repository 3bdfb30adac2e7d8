"""Approximate nearest neighbours of every chunk, for the passage graph's semantic edges.

The graph build needs the k-nearest-neighbour graph of all the vectors, not an index to query,
and NN-descent (faiss's ``IndexNNDescentFlat``) builds exactly that: it starts from random
lists and improves every list from its neighbours' lists for a fixed number of rounds, so its
work grows linearly with the rows, whatever the vectors. The HNSW index it replaced (hnswlib:
build, then ask every row) grew 23x in time from 100k to 1M rows, and its recall@10 fell to
0.81 at 1M on vectors with real embeddings' neighbour statistics, where NN-descent keeps 0.96
(``python -m hopgraph.evals.bench.ann``; README, "Benchmarks").
"""

from __future__ import annotations

import itertools

import numpy as np
import scipy.sparse as sp

NN_DEGREE = 16
"""Neighbours NN-descent keeps per row while it works (faiss's default); the graph build asks
for 10. Fewer rounds or a smaller pool lost much of the recall (100k hierarchical vectors,
0.99 at 10 rounds: 0.66 at 5 rounds, 0.92 at 6 rounds keeping 12)."""


def ann_top_k(
    vectors: np.ndarray, k: int, degree: int = NN_DEGREE
) -> tuple[np.ndarray, np.ndarray]:
    """Return each row's k nearest other rows and their cosines, from an NN-descent graph.

    The rows go to NN-descent in :func:`locality_order`, so rows that are neighbours sit near
    each other in memory (100k rows: 17.7 -> 15.7 s); answers come back in row order. faiss
    runs its rounds on every core, so two runs may differ in a few near-ties.
    """
    import faiss

    n, dim = vectors.shape
    order = locality_order(vectors)
    index = faiss.IndexNNDescentFlat(dim, max(degree, k + 1), faiss.METRIC_INNER_PRODUCT)
    index.add(np.ascontiguousarray(vectors[order]))
    asked = faiss.vector_to_array(index.nndescent.final_graph).reshape(n, -1)
    del index  # its copy of the vectors
    graph = np.empty_like(asked, dtype=np.int64)
    graph[order] = np.where(asked >= 0, order[np.maximum(asked, 0)], -1)
    graph[graph == np.arange(n)[:, None]] = -1  # a row is not its own neighbour
    return _best(vectors, graph, k)


def _best(
    vectors: np.ndarray, graph: np.ndarray, k: int, block: int = 8192
) -> tuple[np.ndarray, np.ndarray]:
    """Return each row's k best listed rows, best first, and their cosines (-1 pads: -inf)."""
    n = len(graph)
    rows, scores = np.empty((n, k), dtype=np.int64), np.empty((n, k), dtype=np.float32)
    for start in range(0, n, block):
        listed = graph[start : start + block]
        found = np.einsum(
            "ij,ikj->ik", vectors[start : start + block], vectors[np.maximum(listed, 0)]
        )
        found[listed < 0] = -np.inf
        best = np.argsort(-found, axis=1, kind="stable")[:, :k]
        rows[start : start + block] = np.take_along_axis(listed, best, axis=1)
        scores[start : start + block] = np.take_along_axis(found, best, axis=1)
    return rows, scores


LOCALITY_CLUSTERS = 256
"""Top-level k-means clusters that order the rows; fixed, so ordering stays linear."""
LOCALITY_LEAF = 128
"""Rows per second-level cluster: alike rows end up about this close together in memory."""


def locality_order(
    vectors: np.ndarray,
    clusters: int = LOCALITY_CLUSTERS,
    leaf: int = LOCALITY_LEAF,
    sample: int = 20_000,
    block: int = 32_768,
) -> np.ndarray:
    """Return a permutation of the rows that puts alike rows together: two-level k-means.

    ``clusters`` centroids from a sample split the rows; each cluster of more than two ``leaf``
    rows is split again into clusters of about ``leaf`` rows, so alike rows end up within a
    few hundred places of each other at any size, for one rows × (clusters + cluster/leaf)
    product (spherical k-means: inner product, centroids renormalised). Seeded: the same
    vectors give the same order.
    """
    n = len(vectors)
    rng = np.random.default_rng(0)
    clusters = max(1, min(clusters, n // leaf))
    picked = vectors[np.sort(rng.choice(n, size=min(sample, n), replace=False))]
    centroids, _ = _kmeans(picked, clusters, rng)
    top = np.concatenate(
        [np.argmax(vectors[s : s + block] @ centroids.T, axis=1) for s in range(0, n, block)]
    )
    by_top = np.argsort(top, kind="stable")
    bounds = np.searchsorted(top[by_top], np.arange(clusters + 1))
    sub = np.zeros(n, dtype=np.int64)
    for start, end in itertools.pairwise(bounds):
        if end - start > 2 * leaf:
            rows = by_top[start:end]
            sub[rows] = _kmeans(vectors[rows], (end - start) // leaf, rng)[1]
    return np.lexsort((sub, top))


def _kmeans(
    rows: np.ndarray, clusters: int, rng: np.random.Generator, iterations: int = 4
) -> tuple[np.ndarray, np.ndarray]:
    """Return spherical k-means centroids of ``rows`` and each row's cluster (a few Lloyd steps)."""
    centroids = rows[rng.choice(len(rows), size=clusters, replace=False)].copy()
    for _ in range(iterations):
        labels = np.argmax(rows @ centroids.T, axis=1)
        members = sp.csr_matrix(
            (np.ones(len(rows), dtype=rows.dtype), (labels, np.arange(len(rows)))),
            shape=(clusters, len(rows)),
        )
        sums = members @ rows
        norms = np.linalg.norm(sums, axis=1, keepdims=True)
        centroids = np.where(norms > 0, sums / np.maximum(norms, 1e-12), centroids)
    return centroids, np.argmax(rows @ centroids.T, axis=1)
