"""Sparse matrices made a part of rows at a time and written as one file, a part at a time.

A graph built by tasks (edge_parts.py, kg_parts.py) has each task save the CSR rows of its
part; :func:`stitch_csr` writes the file scipy.sparse.save_npz would write (uncompressed, so
readers map its arrays in place: passage_graph.mapped_csr) holding one part in memory at once.
"""

from __future__ import annotations

import zipfile
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np


def csr_rows(prefix: str, rows: np.ndarray, cols: np.ndarray, data: np.ndarray,
             count: int) -> dict[str, np.ndarray]:  # fmt: skip
    """Return the CSR arrays of ``count`` rows from cells sorted by (row, col), rows from 0.

    Named ``{prefix}_indptr``, ``_indices`` and ``_data``, as :func:`stitch_csr` reads them.
    """
    indptr = np.r_[0, np.cumsum(np.bincount(rows, minlength=count))].astype(np.int64)
    return {f"{prefix}_indptr": indptr, f"{prefix}_indices": cols.astype(np.int64),
            f"{prefix}_data": data.astype(np.float32)}  # fmt: skip


def binary_rows(prefix: str, rows: np.ndarray, cols: np.ndarray, count: int,
                columns: int) -> dict[str, np.ndarray]:  # fmt: skip
    """Return :func:`csr_rows` of the distinct cells given (any order), each of weight 1."""
    cells = np.unique(rows.astype(np.int64) * columns + cols)
    return csr_rows(prefix, cells // columns, cells % columns, np.ones(len(cells)), count)


def stitch_csr(
    path: Path,
    parts: Sequence[Path],
    prefix: str,
    shape: tuple[int, int],
    nnz: int | None = None,
) -> int:
    """Write the matrix whose rows are the parts' in turn into ``path``; return its nnz.

    ``nnz``: the parts' values in all, when the caller knows it (else counted, a read of each
    part's indices): the file's header says it before the values follow.
    """
    if nnz is None:
        nnz = 0
        for part in parts:
            with np.load(part) as arrays:
                nnz += len(arrays[f"{prefix}_indices"])
    index = np.int64 if max(*shape, nnz) >= np.iinfo(np.int32).max else np.int32
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED, allowZip64=True) as archive:
        _member(archive, "indices", parts, prefix, index, nnz)
        _member(archive, "indptr", parts, prefix, index, shape[0] + 1)
        _whole(archive, "format", np.array(b"csr"))
        _whole(archive, "shape", np.array(shape))
        _member(archive, "data", parts, prefix, np.float32, nnz)
    return nnz


def _member(archive: zipfile.ZipFile, name: str, parts: Sequence[Path], prefix: str,
            dtype: type, length: int) -> None:  # fmt: skip
    """Write one array of ``length`` as the parts' arrays one after the other, a block at a time.

    Each part's array is read through its archive a block at a time (:func:`_blocks`): a
    part's whole array was 50 MB a million chunks on the driver that stitched.
    """
    header = {"descr": np.lib.format.dtype_to_descr(np.dtype(dtype)), "fortran_order": False,
              "shape": (length,)}  # fmt: skip
    with archive.open(f"{name}.npy", "w", force_zip64=True) as handle:
        np.lib.format.write_array_header_2_0(handle, header)
        offset, written = 0, 0
        for p, part in enumerate(parts):
            shift, first = offset, True
            for values in _blocks(part, f"{prefix}_{name}"):
                if name == "indptr":  # each part counts from 0: shifted by the rows before it
                    if p and first:
                        values = values[1:]  # the part's leading 0: the row before's end
                    values = values + shift
                    offset = int(values[-1]) if len(values) else offset
                first = False
                handle.write(np.ascontiguousarray(values, dtype=dtype).tobytes())
                written += len(values)
        if written != length:  # the header said otherwise: a part changed under us
            raise ValueError(f"{prefix} {name}: the parts held {written} values, not {length}")


BLOCK = 1 << 20
"""Values of a part's array read at a time."""


def _blocks(path: Path, key: str) -> Iterator[np.ndarray]:
    """Yield the one-dimensional array ``key`` of the .npz ``path``, :data:`BLOCK` values a time."""
    with zipfile.ZipFile(path) as archive, archive.open(f"{key}.npy") as handle:
        major, _ = np.lib.format.read_magic(handle)
        read_header = (
            np.lib.format.read_array_header_1_0
            if major == 1
            else np.lib.format.read_array_header_2_0
        )
        shape, _, dtype = read_header(handle)  # a one-dimensional array: no order to mind
        if len(shape) != 1 or dtype.hasobject:
            raise ValueError(f"{path} {key}: not a one-dimensional array of numbers")
        left = shape[0]
        while left:
            count = min(left, BLOCK)
            raw = handle.read(count * dtype.itemsize)
            if len(raw) != count * dtype.itemsize:
                raise ValueError(f"{path} {key}: the array ends before its header says")
            yield np.frombuffer(raw, dtype=dtype)
            left -= count


def _whole(archive: zipfile.ZipFile, name: str, value: np.ndarray) -> None:
    with archive.open(f"{name}.npy", "w") as handle:
        np.lib.format.write_array(handle, value, allow_pickle=False)
