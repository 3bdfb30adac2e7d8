"""Array helpers that numpy has, only slower.

numpy 2.4's ``np.unique`` hashes its input before sorting the result: on the chunk rows a query
gathers it is 20× slower than a sort (40,000 rows: 3.3 against 0.14 ms; 300,000: 31 against
1.8 ms, measured here), and GNN-Ret's local computation takes unions on every layer.
"""

from __future__ import annotations

import numpy as np


def unique_rows(rows: np.ndarray) -> np.ndarray:
    """Return the distinct values of an integer array, ascending (``np.unique`` by a sort)."""
    if len(rows) < 2:
        return np.asarray(rows).copy()
    ordered = np.sort(rows)
    keep = np.empty(len(ordered), dtype=bool)
    keep[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=keep[1:])
    return ordered[keep]


def sparse_at(
    rows: np.ndarray, values: np.ndarray, wanted: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Look ``wanted`` up in a sparse vector (``rows`` ascending): (held, values, 0 elsewhere)."""
    out = np.zeros(len(wanted), dtype=values.dtype)
    hit = np.zeros(len(wanted), dtype=bool)
    if len(rows):
        at = np.minimum(np.searchsorted(rows, wanted), len(rows) - 1)
        hit = rows[at] == wanted
        out[hit] = values[at[hit]]
    return hit, out


def union_places(*parts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return the distinct values of several integer arrays (ascending) and where each lands.

    ``places[i]`` is the position in the union of the i-th value of the parts concatenated: one
    stable argsort, 3× faster than a sort and a ``searchsorted`` per part (50,000 rows: 0.4
    against 1.2 ms).
    """
    values = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    first = np.empty(len(ordered), dtype=bool)
    first[:1] = True
    np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
    places = np.empty(len(values), dtype=np.int64)
    places[order] = np.cumsum(first) - 1
    return ordered[first], places


def union_rows(*parts: np.ndarray) -> np.ndarray:
    """Return the distinct values of several integer arrays, ascending."""
    if not parts:
        return np.zeros(0, dtype=np.int64)
    return unique_rows(np.concatenate(parts))
