"""A write's shared-item edges, updated by the groups it touches, equal a fresh count."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from hopgraph.graph_store.graphs.edge_groups import updated_co_occurrence
from hopgraph.graph_store.graphs.extraction.table import Ragged
from hopgraph.graph_store.graphs.passage_graph import co_occurrence


def _items(rng: np.random.Generator, rows: int, columns: int) -> list[list[int]]:
    """Rows of a few items each; a few items are common, so some pass ``max_df``."""
    common = rng.random(columns) < 0.1
    weights = np.where(common, 8.0, 1.0)
    weights /= weights.sum()
    return [rng.choice(columns, size=rng.integers(0, 5), p=weights).tolist() for _ in range(rows)]


def _incidence(lists: list[list[int]], columns: int) -> sp.csr_matrix:
    return Ragged.from_lists(lists).incidence(columns)


def _write(
    rng: np.random.Generator, ids: list[str], lists: list[list[int]], columns: int, step: int
):
    """Remove, change and add rows; return the new ids and items (in id order) and ``moved``."""
    by_id = dict(zip(ids, lists, strict=True))
    for gone in rng.choice(ids, size=rng.integers(0, len(ids) // 3 + 1), replace=False):
        del by_id[str(gone)]
    for changed in rng.choice(sorted(by_id), size=rng.integers(0, 4), replace=False):
        by_id[str(changed)] = rng.choice(columns, size=rng.integers(0, 5)).tolist()
    for j in range(rng.integers(0, 8)):
        by_id[f"r{step}-{j}"] = rng.choice(columns, size=rng.integers(0, 5)).tolist()
    new_ids = sorted(by_id)
    row = {i: n for n, i in enumerate(new_ids)}
    moved = np.array([row.get(i, -1) for i in ids], dtype=np.int64)
    return new_ids, [by_id[i] for i in new_ids], moved


@pytest.mark.parametrize("min_shared", [1, 2])
@pytest.mark.parametrize("seed", range(8))
def test_edges_updated_by_the_groups_a_write_touches_equal_a_fresh_count(seed, min_shared):
    """Property: any sequence of writes, each updated from the last, ends where a fresh count
    does; items cross ``max_df`` both ways (rows that take them over the limit and back)."""
    rng = np.random.default_rng(seed)
    columns, max_df = 30, 4
    ids = [f"r{i:03d}" for i in range(40)]
    lists = _items(rng, len(ids), columns)
    edges = co_occurrence(_incidence(lists, columns), min_shared, max_df)
    for step in range(6):
        new_ids, new_lists, moved = _write(rng, ids, lists, columns, step)
        before = Ragged.from_lists(lists)  # item ids stay (the write's vocabulary keeps them)
        after = _incidence(new_lists, columns)
        edges = updated_co_occurrence(edges, moved, before, after, min_shared, max_df)
        fresh = co_occurrence(after, min_shared, max_df)
        assert edges.shape == fresh.shape
        assert (edges != fresh).nnz == 0, f"step {step}"
        ids, lists = new_ids, new_lists
    assert fresh.nnz > 0


def test_an_item_the_write_removed_from_every_row_and_one_it_never_had_change_nothing_else():
    """Items not in the new vocabulary come as -1; the rows kept lose only those pairs."""
    lists = [[0, 1], [0, 1], [1, 2], [2]]
    edges = co_occurrence(_incidence(lists, 3), 1, None)
    moved = np.array([0, -1, 1, 2])  # row 1 removed: item 0 now in one row only
    before = Ragged.from_lists([[0, 1], [-1, 1], [1, 2], [2]])  # row 1's item -1: not here now
    after = _incidence([[0, 1], [1, 2], [2]], 3)
    updated = updated_co_occurrence(edges, moved, before, after, 1, None)
    assert (updated != co_occurrence(after, 1, None)).nnz == 0
    assert updated[0, 1] == 1 and updated[1, 2] == 1
