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
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np

from .arrays import unique_rows
from .file_reads import FileReads

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
    rows_file: FileRows | None = field(default=None, compare=False, repr=False)
    """Where a query's rows are read from when the arrays map a file (:class:`FileRows`)."""

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


FILE_ROWS = 4096
"""Rows past which :func:`row_edges` reads the mapped arrays: a pass over the whole graph
(GNN-Ret's full scan, a build) is not a query's few rows, and one read a row would be slow."""


class FileRows:
    """Rows of a CSR matrix whose arrays lie in a file, read with ``os.pread``: none mapped.

    A query reads a few rows of the passage graph (who its top-K chunks send to). Read through
    the memory map, each row's page brought the 16 cached pages around it into the process as
    well (the kernel's fault-around; MADV_RANDOM does not stop it), so the router's resident
    graph pages grew to the whole file within 200 gnn_ret queries: 342 of the 366 MB of the
    entity, link and structural edges at 3M passages, the most of its growth with the corpus.
    Read here, the page cache keeps the file (shared, reclaimable) and the process only the
    rows it asked for (core/file_reads.py says the same of the chunk table).
    """

    def __init__(self, indptr: np.memmap, indices: np.memmap, data: np.memmap) -> None:
        """Take the file and where each array lies from the three arrays mapping it."""
        arrays = (indptr, indices, data)
        paths = {str(a.filename) for a in arrays}
        if len(paths) != 1:
            raise ValueError(f"the arrays map {len(paths)} files, not one")
        self.path = Path(paths.pop())
        self._spans = [(int(a.offset), a.dtype) for a in arrays]
        self._file = FileReads(self.path)

    def __getstate__(self) -> dict:
        return {"path": self.path, "spans": self._spans}  # the descriptor is this process's

    def __setstate__(self, state: dict) -> None:
        self.path, self._spans = state["path"], state["spans"]
        self._file = FileReads(self.path)

    def _read(self, which: int, start: int, stop: int) -> np.ndarray:
        """Return elements ``start`` to ``stop`` of array ``which`` (indptr, indices, data)."""
        offset, dtype = self._spans[which]
        size = dtype.itemsize
        return np.frombuffer(self._file.read(offset + start * size, offset + stop * size), dtype)

    def row(self, row: int) -> tuple[np.ndarray, np.ndarray]:
        """Return (columns, weights) of one row."""
        start, end = (int(x) for x in self._read(0, row, row + 2))
        if end <= start:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        return self._read(1, start, end), self._read(2, start, end)

    def edges(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Return what :func:`row_edges` returns, reading each row's entries from the file."""
        sources, targets = [], []
        for row in np.asarray(rows, dtype=np.int64).tolist():
            columns, weights = self.row(row)
            columns = columns[weights != 0]
            sources.append(np.full(len(columns), row, dtype=np.int64))
            targets.append(columns.astype(np.int64))
        if not sources:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        return np.concatenate(sources), np.concatenate(targets)


def row_edges(matrix: CsrLike, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return (row, column) of every non-zero entry in ``rows``, row by row: the edges they send.

    One gather over the rows' slices; scipy's row indexing validates and builds a new matrix
    each call, a millisecond at a million rows.
    """
    rows = np.asarray(rows, dtype=np.int64)
    if len(matrix.indices) == 0:  # no edge at all (structural edges of one-chunk documents):
        # its row pointers, mapped, are not read (a map of them only, the pages around each)
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    if isinstance(matrix, Csr) and matrix.rows_file is not None and len(rows) <= FILE_ROWS:
        return matrix.rows_file.edges(rows)
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
    if len(matrix.indices) == 0:
        return False
    if isinstance(matrix, Csr) and matrix.rows_file is not None:
        columns, weights = matrix.rows_file.row(row)
        return bool(weights[columns == column].any())
    start, end = matrix.indptr[row], matrix.indptr[row + 1]
    found = matrix.indices[start:end] == column
    return bool(found.any() and matrix.data[start:end][found].any())
