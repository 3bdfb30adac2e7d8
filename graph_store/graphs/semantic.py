"""Semantic neighbours: each chunk's nearest other chunks by cosine, and the edges they make.

The passage graph's ``semantic`` edges (IIER §2.5) link each chunk to its ``semantic_k`` most
similar chunks with cosine ≥ ``semantic_min_sim``. The lists are found by an exact blocked
search or, from :data:`ANN_FROM` chunks, by faiss's NN-descent kNN graph (``ann``); a write
keeps them current (:func:`update_nearest`) instead of searching again.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from hopgraph.core.file_reads import mapped_members, verify_file
from hopgraph.core.id_lists import ChunkIds, load_ids

from .ann import ann_top_k
from .extraction.table import distinct

ANN_FROM = 20_000
"""Semantic edges come from an approximate index from this many chunks on (``auto``): below it
the exact all-pairs search takes seconds; above it, its quadratic cost dominates the build."""
ANN_MIN = 1_000
"""Fewest chunks searched approximately even when asked (``ann``): NN-descent needs 100."""


SPARE_NEIGHBOURS = 5
"""Neighbours kept per chunk beyond ``semantic_k``: a delete takes the next one from the list,
so a chunk needs a new search only when more than this many of its neighbours go at once."""


NEIGHBOURS_FILE = "semantic-neighbours.npz"
"""Where a graph folder keeps its lists (each chunk's nearest, wider than ``semantic_k``)."""


@dataclass(frozen=True)
class Neighbours:
    """Each chunk's nearest other chunks, best first: rows (-1 pads a short list) and cosines."""

    rows: np.ndarray
    scores: np.ndarray

    def save(self, path: Path) -> None:
        """Write both arrays into one .npz."""
        np.savez(path, rows=self.rows, scores=self.scores)

    @classmethod
    def load(cls, path: Path) -> Neighbours:
        """Read what :meth:`save` wrote."""
        with np.load(verify_file(path)) as data:
            return cls(data["rows"], data["scores"])

    @classmethod
    def mapped(cls, path: Path) -> Neighbours:
        """Map what :meth:`save` wrote (read whole if compressed): read-only, pages as read."""
        arrays = mapped_members(verify_file(path))
        if arrays is None:  # np.savez stores its members; a compressed file is read whole
            return cls.load(path)
        return cls(arrays["rows"], arrays["scores"])

    @classmethod
    def load_rows(cls, path: Path, start: int, stop: int) -> Neighbours:
        """Read the lists of rows ``start``–``stop`` of what :meth:`save` wrote, and no others.

        A task of a write or a graph build takes its part's rows: the whole lists are 120 MB a
        million chunks.
        """
        whole = cls.mapped(path)
        return cls(np.array(whole.rows[start:stop]), np.array(whole.scores[start:stop]))


def previous_lists(
    old_dir: Path,
    ids: Iterable[str],
    wanted: int,
    replaced: frozenset[str],
    mapped: bool = False,
) -> tuple[Neighbours, np.ndarray] | None:
    """Return the previous generation's lists and each old row's new row (-1: gone).

    ``ids``: the write's chunk ids in row order. ``None`` when the previous graph has no lists
    ``wanted`` wide. A ``replaced`` chunk is a new one under an old id: its old row counts as
    removed. ``mapped``: the lists memory-mapped (:meth:`Neighbours.mapped`), not read.
    """
    if not (old_dir / NEIGHBOURS_FILE).is_file():
        return None
    path = old_dir / NEIGHBOURS_FILE
    old = Neighbours.mapped(path) if mapped else Neighbours.load(path)
    if old.rows.shape[1] != wanted:
        return None
    new = ids if isinstance(ids, ChunkIds) else ChunkIds(ids)
    old_ids = load_ids(old_dir / "nodes.json")  # streamed: ten million ids are 800 MB as a list
    rows = (-1 if i in replaced else new.row(i) for i in old_ids)
    mapped = np.fromiter((-1 if r is None else r for r in rows), np.int64)
    return (old, mapped) if len(mapped) == len(old.rows) else None


def semantic_edges(
    embeddings: np.ndarray, k: int, min_sim: float, search: str = "auto", block: int = 512
) -> sp.csr_matrix:
    """Link each chunk to its top-``k`` cosine neighbours (self excluded) above ``min_sim``."""
    return neighbour_edges(nearest(embeddings, k, search, block), k, min_sim)


def neighbour_edges(neighbours: Neighbours, k: int, min_sim: float) -> sp.csr_matrix:
    """Symmetric semantic edges from the first ``k`` neighbours of each chunk above ``min_sim``."""
    n = len(neighbours.rows)
    top, scores = neighbours.rows[:, :k], neighbours.scores[:, :k]
    keep = (top >= 0) & (scores >= min_sim)
    rows = np.nonzero(keep)[0]
    matrix = sp.csr_matrix((scores[keep], (rows, top[keep])), shape=(n, n))
    return matrix.maximum(matrix.T).tocsr().astype(np.float32)


def nearest(embeddings: np.ndarray, m: int, search: str = "auto", block: int = 512) -> Neighbours:
    """Return each chunk's ``m`` nearest other chunks by cosine, best first.

    ``search``: ``exact`` (blocked all-pairs products), ``ann`` (faiss's NN-descent kNN graph,
    recall@10 above 0.99 against exact on 100k real MiniLM vectors:
    ``python -m hopgraph.evals.bench.ann -k 10``) or ``auto`` (ANN from :data:`ANN_FROM` chunks).
    Below :data:`ANN_MIN` chunks ``ann`` searches exactly: faiss's NN-descent refuses fewer than
    100 rows, and the exact answer takes milliseconds there.
    """
    n = len(embeddings)
    out = _empty_neighbours(n, m)
    found = min(m, n - 1)
    if found <= 0:
        return out
    vectors = np.ascontiguousarray(embeddings, dtype=np.float32)
    use_ann = n >= ANN_MIN and (search == "ann" or (search == "auto" and n >= ANN_FROM))
    top, scores = ann_top_k(vectors, found) if use_ann else exact_top_k(vectors, found, block)
    order = _best_first(top, scores)
    out.rows[:, :found] = np.take_along_axis(top, order, axis=1)
    out.scores[:, :found] = np.take_along_axis(scores, order, axis=1)
    return out


class ListUpdate(NamedTuple):
    """The lists of an update before its search (see :func:`kept_lists`)."""

    lists: Neighbours
    """Each kept chunk's list less its removed neighbours; the rest empty."""
    asked: np.ndarray
    """Rows whose lists are searched whole: added chunks, and chunks left short."""
    width: int
    """How many neighbours a whole search finds (the lists' width, or every other chunk)."""
    is_added: np.ndarray
    """For each row, whether it is an added chunk."""
    threshold: np.ndarray
    """For each row, the score an added chunk must beat to enter its list (short rows: none)."""


def update_nearest(
    old: Neighbours,
    old_to_new: np.ndarray,
    embeddings: np.ndarray,
    k: int,
) -> Neighbours:
    """Bring ``old`` up to date after chunks were removed and added; its first ``k`` stay exact.

    ``old_to_new`` maps each old row to its new row (-1: removed); new rows no old row maps to
    are the added chunks. A kept chunk keeps its list less removed neighbours (every survivor
    still outranks every chunk the list never held) and takes in the added chunks that beat its
    last survivor; an added chunk, or a chunk left with fewer than ``k``, gets a full search of
    ``m`` (the lists' width). Cost: one (added + short lists) × corpus product, not corpus².
    A cluster's tasks do the same search by ranges of the corpus (cluster/neighbours.py).
    """
    plan = kept_lists(old, old_to_new, len(embeddings), k)
    vectors = np.ascontiguousarray(embeddings, dtype=np.float32)
    hits = _search_rows(plan.lists, vectors, plan.asked, plan.width, plan.is_added, plan.threshold)
    take_in(plan.lists, *hits)
    return plan.lists


def kept_lists(old: Neighbours, old_to_new: np.ndarray, n: int, k: int) -> ListUpdate:
    """Return an update's kept lists and what its search must do (see :func:`update_nearest`).

    ``n``: the chunks after the change.
    """
    m = old.rows.shape[1]
    out = _empty_neighbours(n, m)
    kept = np.flatnonzero(old_to_new >= 0)
    remapped = np.where(old.rows[kept] >= 0, old_to_new[np.maximum(old.rows[kept], 0)], -1)
    # Removed neighbours leave gaps: a stable sort moves the survivors to the front in order.
    order = np.argsort(remapped < 0, axis=1, kind="stable")
    target = old_to_new[kept]
    out.rows[target] = np.take_along_axis(remapped, order, axis=1)
    out.scores[target] = np.where(
        out.rows[target] >= 0, np.take_along_axis(old.scores[kept], order, axis=1), -np.inf
    )
    is_added = np.ones(n, dtype=bool)
    is_added[target] = False
    short = np.flatnonzero((out.rows >= 0).sum(axis=1) < min(k, n - 1))  # added rows too
    listed = (out.rows >= 0).sum(axis=1)
    # A full list takes in an added chunk that beats its last; one holding every other kept
    # chunk (a small corpus) takes in any. Short lists are searched whole instead.
    threshold = np.where(
        listed >= len(kept) - 1, -np.inf, out.scores[np.arange(n), np.maximum(listed - 1, 0)]
    ).astype(np.float32)
    threshold[short] = np.inf
    return ListUpdate(out, short, min(m, n - 1), is_added, threshold)


def _empty_neighbours(n: int, m: int) -> Neighbours:
    return Neighbours(np.full((n, m), -1, dtype=np.int64), np.full((n, m), -np.inf, np.float32))


def _best_first(top: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """Order each row's answers by score, ties by row number (repeatable)."""
    return np.lexsort((top, -scores), axis=1) if top.size else np.zeros_like(top)


BLOCK_CELLS = 1 << 27
"""Scores held at once by a blocked search (512 MB of float32): rows per block = this / corpus."""


def _block_rows(n: int) -> int:
    return max(16, min(1024, BLOCK_CELLS // max(n, 1)))


def _search_rows(
    out: Neighbours,
    vectors: np.ndarray,
    rows: np.ndarray,
    m: int,
    is_added: np.ndarray,
    threshold: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Give ``rows`` their exact top-``m`` over every chunk; return the take-in hits.

    The same product serves the kept lists: each added row's scores against every chunk are
    compared with the chunks' ``threshold``. Returns (chunk, added row, score) of the hits.
    """
    found: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    block = _block_rows(len(vectors))
    buffer = np.empty((min(block, len(rows)), len(vectors)), dtype=np.float32)
    for start in range(0, len(rows), block):
        part = rows[start : start + block]
        # numpy's product (1.4x torch's here), into one buffer: a fresh 512 MB block per
        # product cost a quarter of its time in page faults
        scores = np.matmul(vectors[part], vectors.T, out=buffer[: len(part)])
        scores[np.arange(len(part)), part] = -np.inf
        top_scores, top = _top(scores, m)
        order = _best_first(top, top_scores)
        out.rows[part] = -1
        out.scores[part] = -np.inf
        out.rows[part, :m] = np.take_along_axis(top, order, axis=1)
        out.scores[part, :m] = np.take_along_axis(top_scores, order, axis=1)
        adding = np.flatnonzero(is_added[part])
        if len(adding):
            # an add searches only added rows: the block as it is, not a copy of it
            mine = scores if len(adding) == len(part) else scores[adding]
            # few chunks take anything in: compare only the columns whose best beats the bar
            cols = np.flatnonzero(mine.max(axis=0) > threshold)
            which, at = np.nonzero(mine[:, cols] > threshold[cols])
            chunk = cols[at]
            found.append((chunk, part[adding][which], mine[which, chunk]))
    if not found:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, np.zeros(0, dtype=np.float32)
    return tuple(np.concatenate(parts) for parts in zip(*found, strict=True))  # type: ignore[return-value]


def _top(scores: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
    """Return each row's ``m`` best scores and their columns, unordered.

    torch's top-k (sentence-transformers' dependency) selects in place of numpy's argpartition:
    50x faster on a 512 × 1M block.
    """
    import torch

    top_scores, top = torch.topk(torch.from_numpy(scores), m, dim=1, sorted=False)
    return top_scores.numpy(), top.numpy().astype(np.int64)


def take_in(out: Neighbours, rows: np.ndarray, added: np.ndarray, scores: np.ndarray) -> None:
    """Merge the hits (``rows[i]`` takes in ``added[i]`` at ``scores[i]``) into the lists."""
    if not len(rows):
        return
    m = out.rows.shape[1]
    targets = distinct(rows)
    cand_row = np.concatenate([np.repeat(targets, m), rows])
    cand_id = np.concatenate([out.rows[targets].ravel(), added])
    cand_score = np.concatenate([out.scores[targets].ravel(), scores])
    valid = cand_id >= 0
    cand_row, cand_id, cand_score = cand_row[valid], cand_id[valid], cand_score[valid]
    order = np.lexsort((cand_id, -cand_score, cand_row))
    cand_row, cand_id, cand_score = cand_row[order], cand_id[order], cand_score[order]
    starts = np.searchsorted(cand_row, targets)
    place = np.arange(len(cand_row)) - np.repeat(starts, np.diff(np.r_[starts, len(cand_row)]))
    keep = place < m
    out.rows[targets], out.scores[targets] = -1, -np.inf
    out.rows[cand_row[keep], place[keep]] = cand_id[keep]
    out.scores[cand_row[keep], place[keep]] = cand_score[keep]


def exact_top_k(
    vectors: np.ndarray, k: int, block: int = 512, rows: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Return each row's k nearest other rows and their cosines, by blocked products.

    ``rows``: only these rows' (in that order), as a benchmark checks a sample; default all.
    """
    asked = np.arange(len(vectors)) if rows is None else rows
    tops, scores_out = [], []
    for start in range(0, len(asked), block):
        part = asked[start : start + block]
        scores = vectors[part] @ vectors.T
        scores[np.arange(len(part)), part] = -np.inf
        top_scores, top = _top(scores, k)
        tops.append(top)
        scores_out.append(top_scores)
    return np.concatenate(tops), np.concatenate(scores_out)
