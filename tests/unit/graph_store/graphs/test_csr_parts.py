"""Matrices saved a part of rows at a time and stitched into one scipy file."""

import itertools

import numpy as np
import pytest
import scipy.sparse as sp

from hopgraph.graph_store.graphs import csr_parts


@pytest.mark.parametrize("block", [2, 5, 1 << 20])
def test_parts_stitched_a_block_at_a_time_are_the_whole_matrix(tmp_path, monkeypatch, block):
    monkeypatch.setattr(csr_parts, "BLOCK", block)
    whole = sp.random(23, 17, density=0.3, format="csr", random_state=1, dtype=np.float32)
    bounds = [0, 5, 5, 12, 23]  # an empty part too
    parts = []
    for n, (a, b) in enumerate(itertools.pairwise(bounds)):
        cells = whole[a:b].tocoo()
        order = np.lexsort((cells.col, cells.row))
        arrays = csr_parts.csr_rows(
            "m", cells.row[order], cells.col[order], cells.data[order], b - a
        )
        parts.append(tmp_path / f"part{n}.npz")
        np.savez(parts[-1], **arrays)
    path = tmp_path / "whole.npz"
    assert csr_parts.stitch_csr(path, parts, "m", whole.shape) == whole.nnz
    stitched = sp.load_npz(path)
    assert stitched.shape == whole.shape and (stitched != whole).nnz == 0
    assert stitched.indptr.tolist() == whole.indptr.tolist()
