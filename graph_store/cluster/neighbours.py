"""The passage graph's semantic neighbour lists, found by tasks on a cluster.

One process finds every chunk's nearest chunks with an exact all-pairs product below
``semantic.ANN_FROM`` chunks and with NN-descent above, which needs every vector, and gigabytes
besides, in that one process. Here tasks share the work, each reading the vector table's
segments memory-mapped from the index folder (which every node mounts at the same path):

- **exact** (``--semantic-search exact``, or ``auto`` below ``ANN_FROM`` chunks): each task
  takes a contiguous range of chunk rows and scores them against every row, by blocks, as one
  process's exact search does: the same lists (a tie at a list's end may keep another of the
  tied chunks);
- **approximate** (``ann``, or ``auto`` from ``ANN_FROM``): an IVF join, then NN-descent's
  local join. A task trains k-means centroids (one per :data:`LIST_ROWS` rows) on a sample;
  tasks assign every row to its nearest centroid (ranges of rows); then each task takes a range
  of rows in list order (alike rows together) and scores each row against the rows of its
  :data:`PROBES` nearest lists, a list read once for all the rows that probe it (one matrix
  product); :data:`REFINE_ROUNDS` rounds then score each row against its listed chunks' lists.
  Every cosine is exact; what the search can miss is a neighbour it never scored: ``python -m
  hopgraph.evals.bench.ann --libraries nndescent,ivf-join`` measures both against exact lists.
  A departure from one process's NN-descent, whose rounds over the whole matrix do not cut
  into tasks.

A task holds its rows' vectors and one list's candidates at a time: its memory grows with its
share of the rows, not the corpus (docs/scale-measurements.md, 2026-12-05: what seemed to grow
with the corpus in the IVF join was the probing's blocks, each held until the next was made).
Mapped pages it reads would count in its RSS too (the page cache's, reclaimable, but a peak
all the same): the exact search and the assignment read the
table in order and let go of the pages as they go (VectorSearch.release_pages); the k-means
sample, the IVF join and the local join read rows all over it, so they read them from the
files without mapping them (VectorSearch.read). Tasks hand their work over in files, which a
task puts together (:func:`gather_lists`): the driver holds file names only, whatever the
corpus.
"""

from __future__ import annotations

import contextlib
import functools
import tempfile
from collections.abc import Iterator, Sequence
from itertools import pairwise
from pathlib import Path
from types import ModuleType

import numpy as np

from hopgraph.core.file_reads import release_pages
from hopgraph.core.id_lists import ChunkIds, load_ids
from hopgraph.core.threads import Map, in_process
from hopgraph.graph_store.graphs.semantic import ANN_FROM, Neighbours
from hopgraph.graph_store.index.graph_build import NeighbourSearch
from hopgraph.graph_store.stores.chunk_table import chunk_ids
from hopgraph.graph_store.stores.manifest import Manifest
from hopgraph.graph_store.stores.vector_search import SearchSegment, VectorSearch

from .tasks import Peaks, ray_map, task_count

LIST_ROWS = 256
"""Rows per IVF list of the join (as a segment's IVF for dense search, stores/ivf.py)."""
PROBES = 32
"""IVF lists each row is scored against (its nearest by centroid). On 100k real MiniLM rows
(``python -m hopgraph.evals.bench.ann --size 100000 -k 10 --sample 2000 --libraries ivf-join
--partitions 4 --probes 16 32``) recall@10 0.973 at 16 and 0.985 at 32, with two rounds of
the local join (one round: 0.968 at 16; none: 0.939 at 16, 0.967 at 32)."""
REFINE_ROUNDS = 2
"""Rounds of NN-descent's local join after the IVF join (see :func:`refine_rows`)."""
REFINE_BLOCK = 1024
TRAIN_PER_LIST = 32
"""Sample rows per centroid for k-means."""
QUERY_BLOCK = 1024
"""Rows whose lists are found at once by the exact search."""
BLOCK_CELLS = 1 << 25
"""Scores held at once against a segment scored whole (128 MB of float32)."""
LIST_CELLS = 1 << 22
"""Scores held at once by the IVF join against one list (16 MB of float32)."""

Source = VectorSearch | tuple[str, str] | tuple[str, str, str]
"""The vectors a call reads: an open search, or what a task opens (:func:`_opened`'s arguments:
the index folder, the manifest as JSON and, for a write, a file of its chunk ids)."""


def approximate(semantic_search: str, chunks: int) -> bool:
    """Tell whether the lists come from the IVF join (see the module doc), not exactly."""
    return semantic_search == "ann" or (semantic_search == "auto" and chunks >= ANN_FROM)


def neighbours_on(
    ray: ModuleType, partitions: int | None, peaks: Peaks | None = None
) -> NeighbourSearch:
    """Return how a graph build finds its neighbour lists on the joined cluster.

    ``peaks``: each kind of task's largest peak RSS (MB) goes there (tasks.ray_map).
    """
    run = ray_map(ray, peaks)

    def search(
        directory: Path, manifest: Manifest, n: int, m: int, mode: str, scratch: Path, to: Path
    ) -> None:
        parts, source = task_count(ray, partitions, n), (str(directory), manifest.model_dump_json())
        search_lists(source, n, m, approximate(mode, n), parts, to, run, scratch=scratch)

    return search


def search_lists(
    source: Source,
    n: int,
    m: int,
    joined: bool,
    parts: int,
    to: Path,
    run: Map = in_process,
    probes: int = PROBES,
    scratch: Path | None = None,
) -> None:
    """Write the ``m``-wide lists of the ``n`` chunk rows to ``to``, by ``parts`` calls a step.

    ``joined``: by the IVF join and the local join (see the module doc), else exactly. Calls
    hand everything over as files in ``scratch`` (a folder every node mounts; default: a
    temporary one), not through this process or the object store (an array read from it stays
    in the reader's RSS): this one holds file names only. A step's files go once the next has
    run.
    """
    ranges = list(pairwise(np.linspace(0, n, parts + 1).astype(int).tolist()))
    with _scratch(scratch) as folder:
        found = [str(folder / f"found-{i}.npz") for i in range(len(ranges))]
        if min(m, n - 1) <= 0:  # nobody has a neighbour
            run(gather_lists, [([], "", [], n, m, str(to))])
            return
        if not joined:
            run(exact_lists, [(source, a, b, m, at)
                              for (a, b), at in zip(ranges, found, strict=True)])  # fmt: skip
            run(gather_lists, [(found, "", ranges, n, m, str(to))])
            _removed(found)
            return
        # a file, as every hand-over: through this process and the object store the centroids
        # (4 bytes a passage at 256 dimensions) were read once and put once a step (36 MB at 3M)
        centroids = str(folder / "centroids.npy")
        [ivf_lists] = run(train_centroids, [(source, n, centroids)])
        labels = [str(folder / f"labels-{i}.npy") for i in range(len(ranges))]
        run(assign, [(source, a, b, centroids, at)
                     for (a, b), at in zip(ranges, labels, strict=True)])  # fmt: skip
        order = str(folder / "order.npz")
        run(order_rows, [(labels, ivf_lists, order)])
        _removed(labels)
        # calls take rows in list order: alike rows together, so each reads fewer lists
        run(join_rows, [(source, order, a, b, centroids, m, probes, at)
                        for (a, b), at in zip(ranges, found, strict=True)])  # fmt: skip
        for round_ in range(REFINE_ROUNDS):
            lists = str(folder / f"lists-{round_}.npy")
            run(gather_lists, [(found, order, ranges, n, m, lists)])
            _removed(found)
            found = [str(folder / f"refined-{round_}-{i}.npz") for i in range(len(ranges))]
            run(refine_rows, [(source, order, a, b, lists, m, at)
                              for (a, b), at in zip(ranges, found, strict=True)])  # fmt: skip
            Path(lists).unlink()
        run(gather_lists, [(found, order, ranges, n, m, str(to))])
        _removed([*found, order, centroids])


@contextlib.contextmanager
def _scratch(folder: Path | None) -> Iterator[Path]:
    """Yield ``folder`` (created), or a temporary folder removed after."""
    if folder is not None:
        folder.mkdir(parents=True, exist_ok=True)
        yield folder
        return
    with tempfile.TemporaryDirectory(prefix="hopgraph-lists-") as temporary:
        yield Path(temporary)


def _removed(files: Sequence[str]) -> None:  # once the next step ran: a retry finds them
    for name in files:
        Path(name).unlink()


def gather_lists(
    files: Sequence[str], order: str, ranges: Sequence[tuple[int, int]], n: int, m: int, to: str
) -> None:
    """Put the calls' lists together in row order and write them to ``to`` (a call).

    File ``i`` holds the lists of rows ``ranges[i]``, or of those places in the ``order`` file
    (:func:`order_rows`). ``to``: a ``.npy`` of the rows alone (int32, what :func:`refine_rows`
    maps), else ``Neighbours.save``'s file. This call holds every list: 120 MB a million rows
    (80 to the int32 file), and the order of them, 8 MB.
    """
    # int32 for the file refine_rows maps: no int64 copy of every list, then a second to cast
    rows = np.full((n, m), -1, np.int32 if to.endswith(".npy") else np.int64)
    scores = np.full((n, m), -np.inf, np.float32)
    by_list = _order(order)[0] if order else None
    for (a, b), name in zip(ranges, files, strict=True):
        mine = by_list[a:b] if by_list is not None else slice(a, b)
        with np.load(name) as found:
            rows[mine], scores[mine] = found["rows"], found["scores"]
    if to.endswith(".npy"):
        np.save(to, rows)
    else:
        Neighbours(rows, scores).save(Path(to))


def order_rows(labels: Sequence[str], lists: int, to: str) -> None:
    """Write every chunk row by IVF list and where each list starts (a call; see :func:`_order`)."""
    found = np.concatenate([np.load(name) for name in labels])
    order = np.argsort(found, kind="stable")
    starts = np.searchsorted(found[order], np.arange(lists + 1))
    with open(to, "wb") as file:  # np.savez would add ".npz" to a name without it
        np.savez(file, order=order.astype(np.int32), starts=starts.astype(np.int64))


def _order(name: str) -> tuple[np.ndarray, np.ndarray]:  # the rows by list, int64; list starts
    with np.load(name) as saved:
        return saved["order"].astype(np.int64), saved["starts"]


def _put(to: str, rows: np.ndarray, scores: np.ndarray) -> None:
    """Write a call's lists (rows as int32: chunk rows stay below 2^31) where it was told."""
    with open(to, "wb") as file:  # np.savez would add ".npz" to a name without it
        np.savez(file, rows=rows.astype(np.int32), scores=scores)


def exact_lists(source: Source, start: int, stop: int, m: int, to: str) -> None:
    """Write the exact lists of chunk rows ``start``–``stop`` to ``to`` (a call)."""
    search = _open(source)
    found = min(m, search.chunks - 1)
    rows = np.full((stop - start, m), -1, dtype=np.int64)
    scores = np.full((stop - start, m), -np.inf, dtype=np.float32)
    for at in range(start, stop, QUERY_BLOCK):
        block = np.arange(at, min(at + QUERY_BLOCK, stop))
        queries = np.ascontiguousarray(search.matrix(block), dtype=np.float32)
        parts = [p for seg in search.segments for p in _scored_whole(seg, queries, block, found)]
        rows[block - start, :found], scores[block - start, :found] = _merge(parts, found)
        search.release_pages()
    _put(to, rows, scores)


def train_centroids(source: Source, n: int, to: str) -> int:
    """Write unit k-means centroids to the ``.npy`` file ``to`` (a call); return how many.

    One per :data:`LIST_ROWS` rows, trained on a sample (seeded).
    """
    import faiss

    search = _open(source)
    lists = max(1, round(n / LIST_ROWS))
    sample = np.sort(np.random.default_rng(0).choice(n, min(n, lists * TRAIN_PER_LIST),
                                                     replace=False))  # fmt: skip
    vectors = search.read(sample)  # not mapped: a sample of one row in eight maps most pages
    kmeans = faiss.Kmeans(
        vectors.shape[1], lists, niter=10, seed=1, spherical=True,
        min_points_per_centroid=1, max_points_per_centroid=TRAIN_PER_LIST,
    )  # fmt: skip
    kmeans.train(vectors)
    centroids = np.ascontiguousarray(kmeans.centroids, dtype=np.float32)
    np.save(to, centroids)
    return len(centroids)


def assign(source: Source, start: int, stop: int, centroids_file: str, to: str) -> None:
    """Write the nearest centroid of each chunk row ``start``–``stop`` to ``to`` (a call)."""
    centroids = np.load(centroids_file)
    search = _open(source)
    out = np.empty(stop - start, dtype=np.int32)
    step = _rows_per_block(len(centroids))
    for at in range(start, stop, step):
        block = np.arange(at, min(at + step, stop))
        out[block - start] = np.argmax(search.matrix(block) @ centroids.T, axis=1)
        search.release_pages()
    np.save(to, out)


def _rows_per_block(columns: int) -> int:
    """Rows scored at once against ``columns`` centroids: :data:`BLOCK_CELLS` scores."""
    return max(256, BLOCK_CELLS // max(columns, 1))


def join_rows(
    source: Source,
    listed: str,
    start: int,
    stop: int,
    centroids_file: str,
    m: int,
    probes: int,
    to: str,
) -> None:
    """Find the lists of rows (``listed``'s places ``start``–``stop``) in their nearest lists.

    ``listed``: every chunk row by IVF list (:func:`order_rows`); ``centroids_file``: what
    :func:`train_centroids` wrote. Each row reads its ``probes``
    lists nearest by centroid; a list is read once for all the rows that probe it, by one
    matrix product. The lists (rows, cosines) go to the file ``to``.
    """
    order, starts = _order(listed)
    rows = order[start:stop]
    centroids = np.load(centroids_file)
    search = _open(source)
    queries = search.read(rows)
    wide, step = min(probes, len(centroids)), _rows_per_block(len(centroids))
    probed = np.empty((len(queries), wide), dtype=np.int64)
    for at in range(0, len(queries), step):
        # copied out: a slice of argpartition's answer keeps the whole of it (rows × lists
        # int64), and a million rows' slices kept 3.9 GB in each task; let go before the next
        # block (held across it, the last answer raised the task's peak: 800 -> 544 MB at 1M),
        # the product negated in place
        block = queries[at : at + step] @ centroids.T
        nearest = np.argpartition(np.negative(block, out=block), wide - 1, axis=1)
        probed[at : at + step] = nearest[:, :wide]
        del block, nearest
    which, column = np.divmod(np.argsort(probed, axis=None, kind="stable"), wide)
    lists = probed[which, column]  # (row, list) pairs, by list
    del probed, column
    bounds = np.searchsorted(lists, np.arange(len(centroids) + 1))
    del lists
    found = np.full((len(rows), m), -1, dtype=np.int64)
    scores = np.full((len(rows), m), -np.inf, dtype=np.float32)
    for number in np.flatnonzero(np.diff(bounds)):
        held = order[starts[number] : starts[number + 1]]
        if not len(held):
            continue
        vectors = search.read(held)
        # the rows that probe a list by blocks: a crowded list asked by many rows was one
        # product as large as both (the cosines and their copies, about 18 bytes a cell)
        step = max(1, LIST_CELLS // len(held))
        for at in range(bounds[number], bounds[number + 1], step):
            askers = which[at : min(at + step, bounds[number + 1])]
            cosines = queries[askers] @ vectors.T
            part = _best(cosines, np.broadcast_to(held, cosines.shape), rows[askers], m)
            found[askers], scores[askers] = _merge([(found[askers], scores[askers]), part], m)
    _put(to, found, scores)


def refine_rows(
    source: Source, listed: str, start: int, stop: int, listed_in: str, m: int, to: str
) -> None:
    """Find better lists of rows (``listed``'s places ``start``–``stop``) in their lists' lists.

    One round of NN-descent's local join (a neighbour's neighbour is likely a neighbour), every
    candidate scored exactly. The lists are read from the file ``listed_in`` (every row's,
    int32; memory-mapped) and the better ones written to the file ``to``.
    """
    rows = _order(listed)[0][start:stop]
    lists = np.load(listed_in, mmap_mode="r")
    search = _open(source)
    found = np.full((len(rows), m), -1, dtype=np.int64)
    scores = np.full((len(rows), m), -np.inf, dtype=np.float32)
    for at in range(0, len(rows), REFINE_BLOCK):
        mine = rows[at : at + REFINE_BLOCK]
        listed = np.asarray(lists[mine], dtype=np.int64)
        cand = np.concatenate([listed, lists[np.maximum(listed, 0)].reshape(len(mine), -1)], 1)
        cand = np.sort(np.where(cand == mine[:, None], -1, cand), axis=1)
        cand[:, 1:][cand[:, 1:] == cand[:, :-1]] = -1  # each chunk once
        unique, inverse = np.unique(np.maximum(cand, 0), return_inverse=True)
        vectors = search.read(unique)
        queries = search.read(mine)
        cosines = np.einsum("qd,qkd->qk", queries, vectors[inverse.reshape(cand.shape)])
        part = _best(cosines, cand, mine, m)
        found[at : at + len(mine)], scores[at : at + len(mine)] = _merge([part], m)
        release_pages(lists)  # read all over: its pages would add up to every row's list
    _put(to, found, scores)


@functools.lru_cache(maxsize=1)
def _opened(directory: str, manifest_json: str, ids_file: str = "") -> VectorSearch:
    """Open the vectors of a manifest, rows in the order of its chunk table or of ``ids_file``.

    ``ids_file`` (a JSON list): the chunk ids of a write whose chunk table is still being
    written (a forked child writes it while the graphs are updated).
    """
    folder = Path(directory)
    manifest = Manifest.model_validate_json(manifest_json)
    # compactly as read: no list of every id as Python strings (ChunkIds)
    ids = ChunkIds(load_ids(Path(ids_file))) if ids_file else chunk_ids(folder, manifest)
    return VectorSearch.open(folder, manifest, ids, "exact")


def _open(source: Source) -> VectorSearch:
    """Return the search a call reads (a task opens the index once per worker)."""
    return source if isinstance(source, VectorSearch) else _opened(*source)


def _scored_whole(
    segment: SearchSegment, queries: np.ndarray, asked: np.ndarray, m: int
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Return each query's ``m`` best (chunk rows, cosines) of a segment, by blocks of it."""
    step = max(1, BLOCK_CELLS // max(len(queries), 1))
    parts = []
    for at in range(0, len(segment.chunk_rows), step):
        block = np.asarray(segment.vectors[at : at + step], dtype=np.float32)
        held = segment.chunk_rows[at : at + step]
        shape = (len(queries), len(held))
        parts.append(_best(queries @ block.T, np.broadcast_to(held, shape), asked, m))
    return parts


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
