"""A write's entity and keyword edges: the last generation's, with the groups it touches redone.

Both edge types join chunks that share items (passage_graph.co_occurrence): weight = the items
two chunks share among those in at most ``max_df`` chunks, kept when at least ``min_shared``.
A write changes the items of some rows: the chunks it adds, and the kept chunks whose reading
changed (a new title is now found in them, a keyword picked anew). An item *touched* is one
whose holders changed; it can change the weight of a pair only if both hold it, now or before,
and it counts (at most ``max_df`` holders) now or before. So a row that holds no counting
touched item, and whose own items did not change, keeps its edges to every other such row: the
write redoes only the rows of the groups it touches, against every row, and keeps the rest of
the previous matrix, moved to the new row order. The result equals
``co_occurrence`` of the whole new incidence (tests/unit/test_edge_groups.py), in the time of
the rows touched rather than the corpus's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from hopgraph.graph_store.documents.schema import Chunk

from .extraction.table import EXTRACTIONS_FILE, ExtractionTable, Ragged, load_ragged
from .passage_graph import PRODUCT_ROWS, PassageGraphSettings, mapped_csr

SHARED_TYPES = ("entity", "keyword")
"""The edge types a write updates by group; it builds the others whole (they are cheap)."""


@dataclass(frozen=True)
class PreviousItems:
    """The last generation's shared-item edges and items, moved to the write's rows and ids."""

    moved: np.ndarray
    """Each previous row's row in the write (-1: removed)."""
    edges: dict[str, sp.csr_matrix]
    """Each shared type's edges over the previous rows (memory-mapped)."""
    items: dict[str, Ragged]
    """Each type's items of the previous rows, in the write's vocabulary ids (-1: not in it)."""


def previous_items(
    old_dir: Path, before: Sequence[Chunk], chunks: Sequence[Chunk], extractions: ExtractionTable
) -> PreviousItems | None:
    """Read what the last generation's graph folder ``old_dir`` holds for an update.

    ``before``/``chunks``: the previous and the new chunk lists; ``extractions``: the new
    ones. ``None`` when the folder lacks a part or holds other rows (an older hopgraph): the
    write then builds those edges whole.
    """
    path = old_dir / EXTRACTIONS_FILE
    files = [old_dir / f"passages-{kind}.npz" for kind in SHARED_TYPES]
    if not path.is_file() or not all(f.is_file() for f in files):
        return None
    parts, _, ids, vocab, _ = load_ragged(path, ("entities", "keywords"))
    if len(parts) < 2 or ids != [c.id for c in before]:
        return None
    known = extractions.vocab.ids
    to_new = np.fromiter((known.get(s, -1) for s in vocab.strings), np.int64, len(vocab))
    to_new = np.append(to_new, -1)  # an id past the vocabulary (none should be) maps to -1
    items = {
        kind: Ragged(part.ptr, to_new[np.minimum(part.values.astype(np.int64), len(vocab))])
        for kind, part in zip(SHARED_TYPES, (parts["entities"], parts["keywords"]), strict=True)
    }
    row = {c.id: i for i, c in enumerate(chunks)}
    moved = np.fromiter((row.get(c.id, -1) for c in before), np.int64, len(before))
    edges = {kind: mapped_csr(f) for kind, f in zip(SHARED_TYPES, files, strict=True)}
    return PreviousItems(moved, edges, items)


def updated_shared_edges(
    previous: PreviousItems, extractions: ExtractionTable, settings: PassageGraphSettings
) -> dict[str, sp.csr_matrix]:
    """Return the entity and keyword edges of ``extractions``, updated from ``previous``."""
    columns = len(extractions.vocab)
    incidence = {
        "entity": extractions.entities.incidence(columns),
        "keyword": extractions.keywords.incidence(columns),
    }
    least = {"entity": 1, "keyword": settings.keyword_min_shared}
    return {
        kind: updated_co_occurrence(
            previous.edges[kind],
            previous.moved,
            previous.items[kind],
            incidence[kind],
            least[kind],
            settings.max_df,
        )
        for kind in SHARED_TYPES
    }


def updated_co_occurrence(
    edges: sp.csr_matrix,
    moved: np.ndarray,
    before: Ragged,
    after: sp.csr_matrix,
    min_shared: int,
    max_df: int | None,
) -> sp.csr_matrix:
    """Return ``co_occurrence(after, min_shared, max_df)`` from the previous rows' ``edges``.

    ``moved``: each previous row's row in ``after`` (-1: removed); ``before``: the previous
    rows' items in ``after``'s column ids (-1: an item no row holds now).
    """
    n, columns = after.shape
    after = after.tocsr()
    was, gone = _previous_incidence(moved, before, n, columns)
    df_now = np.bincount(after.indices, minlength=columns)
    df_was = np.bincount(was.indices, minlength=columns) + np.bincount(gone, minlength=columns)
    limit = np.inf if max_df is None else max_df
    counts = (df_now <= limit) | (df_was <= limit)  # an item that counts, now or before
    diff = (after != was).tocoo()  # an item a kept row gained or lost, or a new row's
    touched = np.zeros(columns, dtype=bool)
    touched[diff.col] = True
    touched[gone] = True  # a removed row's items have one holder less
    touched &= counts
    affected = np.zeros(n, dtype=bool)
    affected[diff.row[counts[diff.col]]] = True
    holders = np.repeat(np.arange(n), np.diff(after.indptr))
    affected[holders[touched[after.indices]]] = True
    row, col, weight = _rows_against_all(
        after, np.flatnonzero(affected), df_now <= limit, min_shared
    )
    kept = _moved_edges(edges.tocoo(), moved, affected)
    back = ~affected[col]  # a pair of two redone rows is in both of their rows already
    rows = np.concatenate([kept[0], row, col[back]])
    cols = np.concatenate([kept[1], col, row[back]])
    data = np.concatenate([kept[2], weight, weight[back]]).astype(np.float32)
    return sp.csr_matrix((data, (rows, cols)), shape=(n, n))


def _previous_incidence(
    moved: np.ndarray, before: Ragged, n: int, columns: int
) -> tuple[sp.csr_matrix, np.ndarray]:
    """Return the kept previous rows' items as an incidence over the new rows.

    And the items of the removed rows (one per removed row and item, repeats dropped).
    """
    rows = moved[before.row_of_values()]
    items = before.values
    known = items >= 0
    here = known & (rows >= 0)
    ones = np.ones(int(here.sum()), dtype=np.float32)
    was = sp.csr_matrix((ones, (rows[here], items[here])), shape=(n, columns))
    was.data[:] = 1.0
    removed = known & (rows < 0)
    if not removed.any():
        return was, np.zeros(0, dtype=np.int64)
    pairs = np.unique(np.stack([before.row_of_values()[removed], items[removed]]), axis=1)
    return was, pairs[1]


def _rows_against_all(
    incidence: sp.csr_matrix, rows: np.ndarray, counted: np.ndarray, min_shared: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return the edges of ``rows`` to every row (itself aside): rows, columns, weights.

    A weight is the number of ``counted`` items two rows share, kept from ``min_shared``.
    """
    matrix = incidence[:, np.flatnonzero(counted)]
    transposed = matrix.T.tocsr()
    found = [(rows[:0], rows[:0], np.zeros(0, dtype=np.float32))]
    for at in range(0, len(rows), PRODUCT_ROWS):  # as co_occurrence: bounded pairs at once
        block = rows[at : at + PRODUCT_ROWS]
        part = (matrix[block] @ transposed).tocoo()
        row = block[part.row]
        keep = (part.col != row) & (part.data >= min_shared)
        found.append((row[keep], part.col[keep].astype(np.int64), part.data[keep]))
    return tuple(np.concatenate(column) for column in zip(*found, strict=True))  # type: ignore[return-value]


def _moved_edges(
    edges: sp.coo_matrix, moved: np.ndarray, affected: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return the previous edges between kept rows that the write does not redo, moved."""
    rows, cols = moved[edges.row], moved[edges.col]
    keep = (rows >= 0) & (cols >= 0)
    rows, cols, data = rows[keep], cols[keep], np.asarray(edges.data)[keep]
    keep = ~affected[rows] & ~affected[cols]
    return rows[keep], cols[keep], data[keep]
