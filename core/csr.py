"""A compressed-sparse-row matrix read with numpy alone: what a query needs of an edge matrix.

A query reads a few rows of the passage graph's edge matrices (who a top-K chunk sends to);
building a ``scipy.sparse`` matrix for that imported scipy, whose array-API layer then imports
``numpy.f2py`` and more: 0.2 s of every GNN-Ret call's 1.5 s start, measured with
``python -X importtime``. :class:`Csr` holds the same three arrays (memory-mapped from the saved
graph) and reads rows directly; :meth:`Csr.to_scipy` gives scipy's matrix, over the same arrays,
to the code that multiplies or adds matrices (graph builds, degrees, IIER's and G-RAG's scoring).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np

from .arrays import unique_rows

if TYPE_CHECKING:
    import scipy.sparse as sp


class CsrLike(Protocol):
    """Anything with CSR's arrays: a :class:`Csr` or a ``scipy.sparse.csr_matrix``."""

    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray
    shape: tuple[int, ...]


@dataclass(frozen=True)
class Csr:
    """Row ``i`` holds ``indices[indptr[i]:indptr[i + 1]]``, weights ``data[…]``: scipy's CSR."""

    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray
    shape: tuple[int, int]

    @classmethod
    def of(cls, matrix: CsrLike) -> Csr:
        """Return ``matrix``'s arrays (shared, not copied); a scipy matrix is made CSR first."""
        if isinstance(matrix, Csr):
            return matrix
        tocsr = getattr(matrix, "tocsr", None)
        if tocsr is not None:
            matrix = tocsr()
        rows, cols = matrix.shape
        return cls(matrix.indptr, matrix.indices, matrix.data, (int(rows), int(cols)))

    @classmethod
    def binary(cls, source: np.ndarray, target: np.ndarray, n: int) -> Csr:
        """Return the n × n 0/1 matrix with an edge source[i] → target[i] (repeats count once)."""
        source, target = np.asarray(source, np.int64), np.asarray(target, np.int64)
        pairs = unique_rows(source * n + target)
        rows, cols = np.divmod(pairs, n)
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=n), out=indptr[1:])
        return cls(indptr, cols, np.ones(len(cols), dtype=np.float32), (n, n))

    @property
    def nnz(self) -> int:
        """Return the number of stored entries (explicit zeros included, as scipy's)."""
        return int(self.indptr[-1])

    def to_scipy(self) -> sp.csr_matrix:
        """Return scipy's CSR matrix over these arrays (imports scipy: not on a query's path).

        scipy sorts a row's indices in place before most arithmetic; arrays mapped read-only
        from a file saved unsorted (graphs saved before saving sorted them) are copied first.
        """
        import scipy.sparse as sp

        matrix = sp.csr_matrix((self.data, self.indices, self.indptr), shape=self.shape)
        if not matrix.has_canonical_format and not _writable(self):
            matrix = matrix.copy()
        return matrix


def _writable(matrix: Csr) -> bool:
    return all(a.flags.writeable for a in (matrix.indptr, matrix.indices, matrix.data))


def row_edges(matrix: CsrLike, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return (row, column) of every non-zero entry in ``rows``, row by row: the edges they send.

    One gather over the rows' slices; scipy's row indexing validates and builds a new matrix
    each call, a millisecond at a million rows.
    """
    rows = np.asarray(rows, dtype=np.int64)
    starts, ends = matrix.indptr[rows], matrix.indptr[rows + 1]
    counts = (ends - starts).astype(np.int64)
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    firsts = np.cumsum(counts) - counts  # where each row's entries begin in the output
    at = np.repeat(starts.astype(np.int64) - firsts, counts) + np.arange(total)
    keep = np.asarray(matrix.data[at]) != 0
    source = np.repeat(rows, counts)[keep]
    return source, np.asarray(matrix.indices[at], dtype=np.int64)[keep]


def rows_edges(matrices: Sequence[CsrLike], rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return :func:`row_edges` of ``rows`` in each matrix, one after another (a union's edges)."""
    pairs = [row_edges(matrix, rows) for matrix in matrices]
    if not pairs:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    return np.concatenate([p[0] for p in pairs]), np.concatenate([p[1] for p in pairs])


def has_entry(matrix: CsrLike, row: int, column: int) -> bool:
    """Whether ``matrix`` holds a non-zero entry at (row, column) (its row, read directly)."""
    start, end = matrix.indptr[row], matrix.indptr[row + 1]
    found = matrix.indices[start:end] == column
    return bool(found.any() and matrix.data[start:end][found].any())
