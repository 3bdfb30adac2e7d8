"""Ragged arrays: taking rows by runs gives what taking them value by value gives."""

import numpy as np
import pytest

from hopgraph.graph_store.graphs.extraction import table
from hopgraph.graph_store.graphs.extraction.table import Ragged


@pytest.mark.parametrize("copy_from", [64, 1])
def test_take_equals_the_rows_in_order(copy_from, monkeypatch):
    monkeypatch.setattr(table, "RUN_COPY_FROM", copy_from)  # 1: always by runs
    rng = np.random.default_rng(copy_from)
    for trial in range(300):
        n = int(rng.integers(0, 50))
        lists = [rng.integers(0, 9, rng.integers(0, 4)).tolist() for _ in range(n)]
        ragged = Ragged.from_lists(lists)
        rows = rng.integers(0, max(n, 1), int(rng.integers(0, 80))) if n else np.zeros(0, int)
        if n and trial % 2:
            rows = np.flatnonzero(rng.random(n) < 0.9)  # long runs, as a write keeps them
        got = ragged.take(rows)
        assert got.values.tolist() == [x for i in rows for x in lists[i]]
        assert got.lengths().tolist() == [len(lists[i]) for i in rows]
    pairs = Ragged.from_lists([[(1, 2)], [(3, 4), (5, 6)], []], 2)
    assert pairs.take(np.array([1, 2, 0])).values.tolist() == [[3, 4], [5, 6], [1, 2]]
