"""The array helpers against numpy's own (slower) answers."""

import numpy as np
import pytest

from hopgraph.core.arrays import union_places, union_rows


@pytest.mark.parametrize("seed", range(5))
def test_union_places_are_the_unions_positions_of_every_value(seed):
    rng = np.random.default_rng(seed)
    parts = [np.sort(rng.choice(500, n, replace=False)) for n in rng.integers(0, 120, 4)]
    rows, places = union_places(*parts)
    joined = np.concatenate(parts)
    np.testing.assert_array_equal(rows, np.unique(joined))
    np.testing.assert_array_equal(rows, union_rows(*parts))
    np.testing.assert_array_equal(places, np.searchsorted(rows, joined))


def test_union_places_of_nothing_is_empty():
    rows, places = union_places(np.zeros(0, dtype=np.int64))
    assert len(rows) == 0 and len(places) == 0
    assert len(union_places()[0]) == 0
