"""A write's semantic neighbour lists brought up to date by tasks on a cluster (``add --cluster``).

One process's update (semantic.update_nearest) keeps every list whose neighbours survive and
searches whole only the rows that need it (added chunks, lists left short); the same product
tells which kept lists take an added chunk in. Here the lists never pass through the driver
(180 MB a million rows, and the map of old rows to new another 100 MB of Python objects):

1. a task maps the previous generation's rows to the write's (the previous graph's nodes against
   the write's chunk ids, a file the driver streams out), keeps the lists (as
   semantic.kept_lists does, by blocks of rows: :func:`kept_into`) and saves them with what
   the search needs, each row's bar to take an added chunk in among them (the plan, ``.npy``
   files it writes through maps and lets go of as it goes); it sends back the rows to search:
   the change's;
2. tasks score those rows against ranges of the corpus's rows (:func:`update_scores`, as one
   product over the corpus would) and send back their best and the kept lists they enter: the
   change's size again;
3. a task merges them into the kept lists (mapped: it touches the rows the change does) and
   writes the result.

The lists equal one process's (tests/unit/graph_store/cluster/test_cluster_neighbours.py; a tie
at a list's end may keep another of the tied chunks). The driver holds the change's rows and
answers only. No task holds every list: the plan's holds each old row's new one (8 bytes a row)
and the write's ids (about 40), the search's a range's bars.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from itertools import pairwise
from pathlib import Path
from types import ModuleType

import numpy as np

from hopgraph.core.file_reads import release_pages
from hopgraph.core.id_lists import ChunkIds, load_ids, save_ids
from hopgraph.core.threads import Map, in_process
from hopgraph.graph_store.graphs.semantic import Neighbours, previous_lists, take_in
from hopgraph.graph_store.index.graph_build import Chunks, NeighbourUpdate
from hopgraph.graph_store.stores.chunk_table import ids_of
from hopgraph.graph_store.stores.manifest import Manifest

from .neighbours import BLOCK_CELLS, Source, _best, _merge, _open, _scratch
from .tasks import Peaks, ray_map, task_count

Hits = tuple[np.ndarray, np.ndarray, np.ndarray]
"""Added chunks that enter lists: (chunk row, added chunk's row, cosine)."""
Found = tuple[np.ndarray, np.ndarray, Hits]
"""What a call of :func:`update_scores` sends back: the asked rows' best there, and the hits."""
Asked = tuple[np.ndarray, np.ndarray, int]
"""The rows an update searches whole, which of them are added chunks, their lists' width."""
IDS_FILE, PLAN_DIR = "chunk-ids.json", "update-plan"
PLAN_BLOCK = 1 << 16
"""Rows of the lists a plan reads or writes at a time (12 MB of 20-wide lists)."""


def updated_on(
    ray: ModuleType, partitions: int | None, peaks: Peaks | None = None
) -> NeighbourUpdate:
    """Return how a write brings its neighbour lists up to date on the joined cluster.

    ``peaks``: each kind of task's largest peak RSS (MB) goes there (tasks.ray_map).
    """
    return updated_by(ray_map(ray, peaks), lambda n: task_count(ray, partitions, n))


def updated_by(run: Map, parts_of: Callable[[int], int]) -> NeighbourUpdate:
    """Return how a write brings its lists up to date by ``run``'s calls (``parts_of(n)``).

    The write's chunk table is still being written (by a forked child) when its lists are
    updated: the calls read its chunk ids from a file in the scratch folder.
    """

    def update(
        directory: Path,
        manifest: Manifest,
        chunks: Chunks,
        previous: tuple[Path, frozenset[str]],
        widths: tuple[int, int],
        scratch: Path,
        to: Path,
    ) -> bool:
        n, (old_dir, replaced) = len(chunks), previous
        with _scratch(scratch) as folder:
            ids, plan = folder / IDS_FILE, folder / PLAN_DIR
            save_ids(ids_of(chunks), ids)
            source = (str(directory), manifest.model_dump_json(), str(ids))
            try:
                call = (str(old_dir), str(ids), sorted(replaced), n, widths, str(plan))
                [asked] = run(plan_update, [call])
                if asked is None:
                    return False
                found = _searched(source, asked, str(plan), n, parts_of(n), run)
                run(finish_update, [(str(plan), asked, found, str(to))])
                return True
            finally:
                ids.unlink(missing_ok=True)
                shutil.rmtree(plan, ignore_errors=True)

    return update


def plan_update(
    old_dir: str, ids: str, replaced: list[str], n: int, widths: tuple[int, int], to: str
) -> Asked | None:
    """Keep the previous lists a write leaves and save the plan in the folder ``to`` (a call).

    ``ids``: the write's chunk ids (a JSON file); ``widths``: ``semantic_k`` and the lists'
    width. Returns the rows to search whole, which of them are added chunks and the width they
    are searched to; ``None`` when the previous graph has no lists that wide (the caller
    searches afresh). The previous lists are read mapped, a block at a time.
    """
    k, wanted = widths
    new = ChunkIds(load_ids(Path(ids)))
    if len(new) != n:
        raise ValueError(f"{ids} holds {len(new)} chunk ids, the write {n}")
    previous = previous_lists(Path(old_dir), new, wanted, frozenset(replaced), mapped=True)
    if previous is None:
        return None
    del new
    return kept_into(*previous, n, k, Path(to))


def kept_into(old: Neighbours, old_to_new: np.ndarray, n: int, k: int, to: Path) -> Asked:
    """Write ``semantic.kept_lists``'s plan into the folder ``to``, a block of rows at a time.

    The same lists, bars and rows to search (tests/unit/graph_store/cluster/
    test_cluster_neighbours.py), as ``.npy`` files written through maps whose pages are let go
    after each block: no array of every list here, nor of the old ones (``old`` may be mapped).
    """
    to.mkdir(parents=True, exist_ok=True)
    m = old.rows.shape[1]
    rows = np.lib.format.open_memmap(to / "rows.npy", "w+", np.int64, (n, m))
    scores = np.lib.format.open_memmap(to / "scores.npy", "w+", np.float32, (n, m))
    for a in range(0, n, PLAN_BLOCK):
        rows[a : a + PLAN_BLOCK], scores[a : a + PLAN_BLOCK] = -1, -np.inf
        release_pages(rows, scores)
    is_added = np.ones(n, dtype=bool)
    for a in range(0, len(old_to_new), PLAN_BLOCK):
        mine = old_to_new[a : a + PLAN_BLOCK]
        kept = np.flatnonzero(mine >= 0)
        held = np.asarray(old.rows[a : a + PLAN_BLOCK])[kept]
        remapped = np.where(held >= 0, old_to_new[np.maximum(held, 0)], -1)
        # removed neighbours leave gaps: a stable sort moves the survivors to the front
        order = np.argsort(remapped < 0, axis=1, kind="stable")
        target, lists = mine[kept], np.take_along_axis(remapped, order, axis=1)
        held_scores = np.take_along_axis(np.asarray(old.scores[a : a + PLAN_BLOCK])[kept], order, 1)
        rows[target], scores[target] = lists, np.where(lists >= 0, held_scores, -np.inf)
        is_added[target] = False
        release_pages(rows, scores, old.rows, old.scores)
    threshold, asked = _bars(rows, scores, int((old_to_new >= 0).sum()), k)
    rows.flush(), scores.flush()
    np.save(to / "is_added.npy", is_added)
    np.save(to / "threshold.npy", threshold)
    return asked, is_added[asked], min(m, n - 1)


def _bars(rows: np.ndarray, scores: np.ndarray, kept: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Return each row's bar for an added chunk and the rows left short (kept_lists's rule)."""
    n = len(rows)
    threshold, short = np.empty(n, dtype=np.float32), []
    for a in range(0, n, PLAN_BLOCK):
        block = np.asarray(rows[a : a + PLAN_BLOCK])
        listed = (block >= 0).sum(axis=1)
        held = np.asarray(scores[a : a + PLAN_BLOCK])
        last = held[np.arange(len(block)), np.maximum(listed - 1, 0)]
        # a full list takes in an added chunk that beats its last; one holding every other
        # kept chunk (a small corpus) takes in any; short lists are searched whole instead
        bar = np.where(listed >= kept - 1, -np.inf, last).astype(np.float32)
        low = np.flatnonzero(listed < min(k, n - 1))
        bar[low] = np.inf
        threshold[a : a + len(block)] = bar
        short.append(low + a)
        release_pages(rows, scores)
    return threshold, np.concatenate(short) if short else np.zeros(0, np.int64)


def plan_lists(plan: Path, writable: bool = False) -> Neighbours:
    """Return the kept lists of a plan :func:`kept_into` wrote, mapped."""
    mode = "r+" if writable else "r"
    return Neighbours(np.load(plan / "rows.npy", mmap_mode=mode),
                      np.load(plan / "scores.npy", mmap_mode=mode))  # fmt: skip


def update_lists(
    source: Source,
    old: Neighbours,
    old_to_new: np.ndarray,
    n: int,
    k: int,
    parts: int,
    run: Map = in_process,
) -> Neighbours:
    """Return one process's ``semantic.update_nearest`` of ``old``, searched by ``parts`` calls.

    The calls of a write on a cluster, given the lists in memory: the plan, the search and the
    merge, through a plan in a temporary folder.
    """
    with tempfile.TemporaryDirectory(prefix="hopgraph-plan-") as folder:
        plan = Path(folder)
        asked = kept_into(old, old_to_new, n, k, plan)
        found = _searched(source, asked, str(plan), n, parts, run)
        lists = merged(plan_lists(plan, writable=True), asked, found)
        return Neighbours(np.array(lists.rows), np.array(lists.scores))


def _searched(
    source: Source, asked: Asked, bars: str | np.ndarray, n: int, parts: int, run: Map
) -> list[Found]:
    """Score the asked rows against ``parts`` ranges of the ``n`` rows (``bars``: the plan)."""
    rows, added, width = asked
    if not len(rows):
        return []
    bounds = np.linspace(0, n, parts + 1).astype(int).tolist()
    return run(update_scores, [(source, rows, added, bars, a, b, width)
                               for a, b in pairwise(bounds)])  # fmt: skip


def finish_update(plan: str, asked: Asked, found: list[Found], to: str) -> None:
    """Merge the searches' answers into the plan's kept lists and write them to ``to`` (a call).

    The plan's lists are mapped: the merge touches the change's rows; the write reads the rest
    through the map, a buffer at a time.
    """
    merged(plan_lists(Path(plan), writable=True), asked, found).save(Path(to))


def merged(lists: Neighbours, asked: Asked, found: list[Found]) -> Neighbours:
    """Return the kept ``lists`` with the asked rows' best and the hits taken in."""
    asked_rows, _, width = asked
    if not found:
        return lists
    best, scores = _merge([(rows, cosines) for rows, cosines, _ in found], width)
    lists.rows[asked_rows], lists.scores[asked_rows] = -1, -np.inf
    lists.rows[asked_rows, :width], lists.scores[asked_rows, :width] = best, scores
    hits = [hit for *_, hit in found]
    take_in(lists, *(np.concatenate(column) for column in zip(*hits, strict=True)))
    return lists


def update_scores(
    source: Source,
    asked: np.ndarray,
    added: np.ndarray,
    bars: str | np.ndarray,
    start: int,
    stop: int,
    m: int,
) -> Found:
    """Score rows ``asked`` against chunk rows ``start``–``stop`` (a call).

    Returns each asked row's ``m`` best there (rows, cosines) and the hits: the asked rows that
    are ``added`` chunks against the rows whose bar they beat. ``bars``: every row's (the
    plan's threshold), or the plan's folder.
    """
    if isinstance(bars, str):  # the plan's folder: this range's bars alone
        threshold = np.array(np.load(Path(bars) / "threshold.npy", mmap_mode="r")[start:stop])
    else:
        threshold = bars[start:stop]
    search = _open(source)
    queries = search.read(asked)
    adding = np.flatnonzero(added)
    best = (np.zeros((len(asked), 0), np.int64), np.zeros((len(asked), 0), np.float32))
    hits: list[Hits] = []
    step = max(1, BLOCK_CELLS // max(len(asked), 1))
    for at in range(start, stop, step):
        held = np.arange(at, min(at + step, stop))
        cosines = queries @ np.asarray(search.matrix(held), dtype=np.float32).T
        part = _best(cosines, np.broadcast_to(held, cosines.shape), asked, m)  # itself out
        best = _merge([best, part], m)
        if len(adding):
            mine, bar = cosines[adding], threshold[held - start]
            # few rows take anything in: compare only the columns whose best beats the bar
            columns = np.flatnonzero(mine.max(axis=0) > bar)
            which, at_column = np.nonzero(mine[:, columns] > bar[columns])
            chunk = columns[at_column]
            hits.append((held[chunk], asked[adding][which], mine[which, chunk]))
        search.release_pages()
    if not hits:
        empty = np.zeros(0, np.int64)
        return *best, (empty, empty, np.zeros(0, np.float32))
    return *best, tuple(np.concatenate(column) for column in zip(*hits, strict=True))  # type: ignore[return-value]
