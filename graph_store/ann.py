"""Approximate nearest neighbours of every chunk, for the passage graph's semantic edges.

One HNSW index (hnswlib) over all the vectors, then every vector asks it for its neighbours.
The asking is half the time at a million rows, and most of it waits on memory: each search
walks graph nodes scattered over gigabytes. Asking in an order where consecutive queries are
alike (rows grouped by k-means cluster) lets one query find in cache what the last one
loaded; the answers do not change, only the order they are computed in. With the node array
on huge pages too, the search of a million 256-d rows took 178.0 s instead of 209.7 s
(``python -m hopgraph.evals.bench.hnsw``; README, "Benchmarks").
"""

from __future__ import annotations

import ctypes
import itertools
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

if TYPE_CHECKING:
    import hnswlib

ANN_CONSTRUCTION = 50
"""hnswlib's build breadth (ef_construction): 50 keeps recall@10 at 0.9925 on real vectors, and
builds 43 % faster than 100 (0.9969):
``python -m hopgraph.evals.bench.ann -k 10 --construction 100 50``."""

log = logging.getLogger(__name__)

LOCALITY_CLUSTERS = 256
"""Top-level k-means clusters that order the queries; fixed, so ordering stays linear."""
LOCALITY_LEAF = 128
"""Rows per second-level cluster: neighbours' searches overlap most when alike rows are this
close together in the asking order."""


def ann_top_k(
    vectors: np.ndarray, k: int, ef: int = 64, construction: int = ANN_CONSTRUCTION
) -> tuple[np.ndarray, np.ndarray]:
    """Return each row's k nearest other rows and their cosines, from an HNSW index.

    hnswlib (M 16, build breadth ``construction``, search breadth ``ef``) was the fastest of
    faiss, usearch and hnswlib at the same recall (``python -m hopgraph.evals.bench.ann``).
    The queries run in :func:`locality_order`, which gives the same answers faster
    (``python -m hopgraph.evals.bench.hnsw``).
    """
    index = hnsw_index(vectors, construction)
    return search_all(index, vectors, k, ef, locality_order(vectors))


def hnsw_index(vectors: np.ndarray, construction: int = ANN_CONSTRUCTION) -> hnswlib.Index:
    """Return an hnswlib inner-product index (M 16) of the rows, labelled by row number."""
    import hnswlib

    n, dim = vectors.shape
    index = hnswlib.Index(space="ip", dim=dim)
    with huge_pages():  # hnswlib allocates its node array here, untouched until added to
        index.init_index(max_elements=n, ef_construction=construction, M=16, random_seed=100)
    index.add_items(vectors, np.arange(n))
    return index


def search_all(
    index: hnswlib.Index, vectors: np.ndarray, k: int, ef: int, order: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Ask ``index`` for every row's k nearest other rows, in ``order`` (default: row order).

    Answers come back in row order whatever the order asked in.
    """
    n = len(vectors)
    index.set_ef(max(ef, k + 1))
    if order is None:
        found, distances = index.knn_query(vectors, k=k + 1)
    else:
        asked, asked_distances = index.knn_query(vectors[order], k=k + 1)
        found, distances = np.empty_like(asked), np.empty_like(asked_distances)
        found[order], distances[order] = asked, asked_distances
    found = found.astype(np.int64)
    similarity = 1.0 - distances  # hnswlib's "ip" distance is 1 − inner product
    keep = others(found, k)
    return found[keep].reshape(n, k), similarity[keep].reshape(n, k).astype(np.float32)


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


def others(found: np.ndarray, k: int) -> np.ndarray:
    """Mask k of each row's k + 1 answers: all but the row itself, or but the last if absent.

    An approximate search asks for k + 1 neighbours because a row usually finds itself first;
    a row that does not (an exact duplicate ranked ahead) drops its farthest answer instead.
    """
    n = len(found)
    own = found == np.arange(n)[:, None]
    drop = np.where(own.any(axis=1), own.argmax(axis=1), k)
    keep = np.ones_like(own)
    keep[np.arange(n), drop] = False
    return keep


MADV_HUGEPAGE = 14  # Linux's madvise advice
HUGE_FROM = 64 * 2**20
"""Mappings from this size get huge pages: smaller ones fit the TLB's reach anyway."""


@contextmanager
def huge_pages(min_bytes: int = HUGE_FROM) -> Iterator[None]:
    """Ask Linux to back the large anonymous mappings made inside the block with 2 MB pages.

    hnswlib keeps its nodes in one array (1.2 GB at a million 256-d rows) that every search
    visits at random: with 4 KB pages nearly every visit misses the TLB. numpy advises its own
    large arrays so; hnswlib does not, and the kernel here (THP "madvise") then gives it small
    pages. A hint, not a requirement: where /proc/self/maps or madvise is missing (not Linux)
    or the advice is refused, the memory keeps small pages and only the speed differs.
    """
    before = _anonymous_maps()
    yield
    libc = ctypes.CDLL(None, use_errno=True)
    large = [(s, e) for s, e in _anonymous_maps() - before if e - s >= min_bytes]
    for start, end in large if hasattr(libc, "madvise") else []:
        if libc.madvise(ctypes.c_void_p(start), ctypes.c_size_t(end - start), MADV_HUGEPAGE):
            log.debug("madvise(MADV_HUGEPAGE) refused: errno %d", ctypes.get_errno())


def _anonymous_maps() -> set[tuple[int, int]]:
    """Return this process's writable anonymous mappings (start, end); none off Linux."""
    maps = Path("/proc/self/maps")
    if not maps.exists():
        return set()
    found = set()
    for line in maps.read_text(encoding="ascii", errors="replace").splitlines():
        fields = line.split()
        if len(fields) == 5 and fields[1].startswith("rw"):  # no path: anonymous
            start, end = fields[0].split("-")
            found.add((int(start, 16), int(end, 16)))
    return found
