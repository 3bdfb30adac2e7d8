"""The passage graph's semantic neighbour lists, found on a cluster: a task per range of rows.

One process finds every chunk's nearest chunks with an exact all-pairs product below
``semantic.ANN_FROM`` chunks and with NN-descent above, which needs every vector, and gigabytes
besides, in that one process. Here each task takes a contiguous range of chunk rows and finds
their lists against the whole index, reading the vector table's segments memory-mapped from the
index folder (which every node mounts):

- **exact** (``--semantic-search exact``, or ``auto`` below ``ANN_FROM`` chunks): each segment's
  rows scored by a blocked product, as one process's exact search scores them: the same lists
  (a tie at a list's end may keep another of the tied chunks);
- **approximate** (``ann``, or ``auto`` from ``ANN_FROM``): a segment that has an IVF
  (ivf.py: segments of 32,768 rows or more, one per partition of a large build) proposes each
  row's candidates from its 128 nearest lists, batched through faiss, and the table scores them
  exactly; smaller segments are scored whole. Every listed cosine is exact; what the IVF can
  miss is a neighbour, measured against the exact lists by ``python -m
  hopgraph.evals.bench.cluster_neighbours``. A departure from one process's NN-descent, whose
  whole-matrix graph cannot be cut into tasks.

Each task holds its rows' queries and one block of scores: its memory does not grow with the
corpus beyond the mapped pages it reads. The driver only concatenates the lists.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise
from pathlib import Path
from types import ModuleType

import numpy as np

from hopgraph.graph_store.documents.schema import Chunk
from hopgraph.graph_store.graphs.semantic import ANN_FROM, Neighbours
from hopgraph.graph_store.index.graph_build import NeighbourSearch
from hopgraph.graph_store.stores.chunk_table import chunk_ids
from hopgraph.graph_store.stores.manifest import Manifest
from hopgraph.graph_store.stores.vector_search import SearchMode, SearchSegment, VectorSearch

from .connect import RETRIES, failed

QUERY_BLOCK = 1024
"""Rows whose lists are found at once (an IVF search is batched over them)."""
BLOCK_CELLS = 1 << 25
"""Scores held at once against a segment scored whole (128 MB of float32)."""


def search_mode(semantic_search: str, chunks: int) -> SearchMode:
    """Return how the tasks read the vectors (see the module doc).

    ``exact``: every segment scored whole; ``auto``: through the IVF files segments have;
    ``ann``: through an IVF for every segment, built in memory where it has no file (to
    measure the approximate search on a small index, as ``--search ann`` does).
    """
    if semantic_search == "ann":
        return "ann"
    return "auto" if semantic_search == "auto" and chunks >= ANN_FROM else "exact"


def neighbours_on(ray: ModuleType, partitions: int | None) -> NeighbourSearch:
    """Return how a graph build finds its neighbour lists on the joined cluster."""

    def search(
        directory: Path, manifest: Manifest, chunks: Sequence[Chunk], m: int, mode: str
    ) -> Neighbours:
        n = len(chunks)
        count = max(1, min(partitions or int(ray.cluster_resources().get("CPU", 1)), n))
        bounds = np.linspace(0, n, count + 1).astype(int)
        task = ray.remote(max_retries=RETRIES)(rows_neighbours)
        how = search_mode(mode, n)
        folder, written = str(directory), manifest.model_dump_json()
        refs = [task.remote(folder, written, a, b, m, how) for a, b in pairwise(bounds)]
        try:
            found = ray.get(refs)
        except ray.exceptions.RayError as err:
            raise failed(ray, err) from err
        rows = np.concatenate([r for r, _ in found]) if found else np.zeros((0, m), np.int64)
        scores = np.concatenate([s for _, s in found]) if found else np.zeros((0, m), np.float32)
        return Neighbours(rows, scores)

    return search


def rows_neighbours(
    directory: str, manifest_json: str, start: int, stop: int, m: int, mode: SearchMode
) -> tuple[np.ndarray, np.ndarray]:
    """Return the ``m``-wide lists of chunk rows ``start``–``stop`` (a task on the cluster).

    ``mode``: how the vectors are read (:func:`search_mode`).
    """
    folder = Path(directory)
    manifest = Manifest.model_validate_json(manifest_json)
    search = VectorSearch.open(folder, manifest, chunk_ids(folder, manifest), mode)
    found = min(m, search.chunks - 1)
    rows = np.full((stop - start, m), -1, dtype=np.int64)
    scores = np.full((stop - start, m), -np.inf, dtype=np.float32)
    if found <= 0:
        return rows, scores
    for at in range(start, stop, QUERY_BLOCK):
        asked = np.arange(at, min(at + QUERY_BLOCK, stop))
        queries = np.ascontiguousarray(search.matrix(asked), dtype=np.float32)
        parts = [p for seg in search.segments for p in _segment_tops(seg, queries, asked, found)]
        top, best = _merge(parts, found)
        rows[asked - start, :found], scores[asked - start, :found] = top, best
    return rows, scores


def _segment_tops(
    segment: SearchSegment, queries: np.ndarray, asked: np.ndarray, m: int
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Return each query's ``m`` best (chunk rows, cosines) of a segment, by blocks of it."""
    if segment.ivf is None:
        step = max(1, BLOCK_CELLS // max(len(queries), 1))
        parts = []
        for at in range(0, len(segment.chunk_rows), step):
            block = np.asarray(segment.vectors[at : at + step], dtype=np.float32)
            held = segment.chunk_rows[at : at + step]
            shape = (len(queries), len(held))
            parts.append(_best(queries @ block.T, np.broadcast_to(held, shape), asked, m))
        return parts
    import faiss

    params = faiss.SearchParametersIVF(nprobe=segment.ivf.nprobe)
    depth = min(m + 32, len(segment.chunk_rows))  # the IVF's codes misorder near-ties
    _, cand = segment.ivf.index.search(queries, depth, params=params)
    vectors = np.asarray(segment.vectors[np.maximum(cand, 0).ravel()], dtype=np.float32)
    cosines = np.einsum("qd,qkd->qk", queries, vectors.reshape(*cand.shape, -1))
    chunk_rows = np.where(cand >= 0, segment.chunk_rows[np.maximum(cand, 0)], -1)
    return [_best(cosines, chunk_rows, asked, m)]


def _best(
    cosines: np.ndarray, chunk_rows: np.ndarray, asked: np.ndarray, m: int
) -> tuple[np.ndarray, np.ndarray]:
    """Return each query's ``m`` best (chunk rows, cosines) of these, dead rows and itself out."""
    cosines[(chunk_rows < 0) | (chunk_rows == asked[:, None])] = -np.inf
    keep = min(m, cosines.shape[1])
    pick = np.argpartition(-cosines, keep - 1, axis=1)[:, :keep]
    return np.take_along_axis(chunk_rows, pick, 1), np.take_along_axis(cosines, pick, 1)


def _merge(parts: list[tuple[np.ndarray, np.ndarray]], m: int) -> tuple[np.ndarray, np.ndarray]:
    """Return each query's ``m`` best of the segments' answers, best first, ties by row."""
    rows = np.concatenate([r for r, _ in parts], axis=1)
    scores = np.concatenate([s for _, s in parts], axis=1)
    rows = np.where(np.isfinite(scores), rows, -1)
    order = np.lexsort((np.where(rows >= 0, rows, np.iinfo(np.int64).max), -scores), axis=1)
    order = order[:, :m]
    return np.take_along_axis(rows, order, 1), np.take_along_axis(scores, order, 1)
