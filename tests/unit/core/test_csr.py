"""core/csr.py: rows read with numpy give what scipy gives, and a saved graph is read mapped."""

import pickle
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from hopgraph.core.csr import Csr, has_entry, row_edges
from hopgraph.graph_store.graphs.extraction.table import Ragged
from hopgraph.graph_store.graphs.passage_graph import EDGE_TYPES, PassageGraph


def _random(seed: int, n: int = 60, density: float = 0.08) -> sp.csr_matrix:
    matrix = sp.random(n, n, density=density, format="csr", random_state=seed, dtype=np.float32)
    matrix.data[::7] = 0.0  # explicit zeros: no edge, as scipy's comparisons read them
    return matrix


@pytest.mark.parametrize("seed", range(4))
def test_row_edges_are_scipys_non_zero_entries_of_those_rows(seed):
    matrix = _random(seed)
    rows = np.random.default_rng(seed).choice(60, 9, replace=False)
    source, target = row_edges(Csr.of(matrix), rows)
    picked = matrix[rows].tocoo()
    nonzero = picked.data != 0
    assert sorted(zip(source.tolist(), target.tolist(), strict=True)) == sorted(
        zip(rows[picked.row[nonzero]].tolist(), picked.col[nonzero].tolist(), strict=True)
    )
    assert row_edges(matrix, rows)[0].tolist() == source.tolist()  # scipy's own matrix reads too


def test_rows_with_no_entries_send_nothing():
    empty = Csr.of(sp.csr_matrix((5, 5), dtype=np.float32))
    source, target = row_edges(empty, np.arange(5))
    assert len(source) == len(target) == 0


def test_a_binary_matrix_counts_a_repeated_pair_once():
    matrix = Csr.binary(np.array([0, 2, 0, 2]), np.array([1, 3, 1, 0]), 4)
    dense = matrix.to_scipy().toarray()
    expected = np.zeros((4, 4))
    expected[0, 1] = expected[2, 3] = expected[2, 0] = 1
    np.testing.assert_array_equal(dense, expected)
    assert has_entry(matrix, 2, 3) and not has_entry(matrix, 3, 2)


def test_read_only_unsorted_arrays_become_a_matrix_scipy_can_compute_with():
    # rows written unsorted, as graphs were saved before save sorted them
    indptr, indices = np.array([0, 2, 3]), np.array([1, 0, 0])
    arrays = [indptr, indices, np.ones(3, dtype=np.float32)]
    for a in arrays:
        a.flags.writeable = False
    matrix = Csr(*arrays, (2, 2)).to_scipy()
    np.testing.assert_array_equal((matrix != 0).toarray(), [[True, True], [True, False]])


def test_column_counts_are_the_incidences_column_sums():
    lists = Ragged.from_lists([[0, 2, 2], [2], [], [1, 0]])
    np.testing.assert_array_equal(lists.column_counts(4), [2, 1, 2, 0])
    np.testing.assert_array_equal(
        lists.column_counts(4), np.asarray(lists.incidence(4).sum(axis=0)).ravel()
    )


def _graph(n: int = 40) -> PassageGraph:
    edges = {kind: _random(seed, n, 0.1) for seed, kind in enumerate(EDGE_TYPES)}
    for kind in ("structural", "entity", "keyword", "semantic"):
        edges[kind] = edges[kind].maximum(edges[kind].T).tocsr()
    return PassageGraph([f"c{i}" for i in range(n)], edges)


def test_a_saved_graph_is_read_memory_mapped_and_keeps_every_edge(tmp_path):
    graph = _graph()
    graph.save(tmp_path / "graph")
    loaded = PassageGraph.load(tmp_path / "graph")
    for kind in EDGE_TYPES:
        assert isinstance(loaded.csr[kind].indices, np.memmap), kind
        np.testing.assert_array_equal(
            loaded.edges[kind].toarray(), graph.edges[kind].toarray(), err_msg=kind
        )
    # scipy arithmetic over the mapped (read-only) arrays works
    assert loaded.adjacency(undirected=True).nnz >= loaded.adjacency().nnz


def test_walks_are_the_binary_adjacency_without_scipy():
    graph = _graph()
    for types in (EDGE_TYPES, ("link",), ("entity", "semantic")):
        np.testing.assert_array_equal(
            graph.walks(types).to_scipy().toarray(), graph.adjacency(types).toarray()
        )


def _mapped_pages(path) -> int:
    """Return how many kB of ``path`` this process has mapped in (its resident pages)."""
    total, inside = 0, False
    with open("/proc/self/smaps") as smaps:
        for line in smaps:
            head = line.split()
            if "-" in head[0] and not head[0].endswith(":"):
                inside = len(head) > 5 and head[5] == str(path)
            elif inside and head[0] == "Rss:":
                total += int(head[1])
    return total


def test_a_loaded_graphs_rows_are_read_from_its_file_with_no_page_mapped_in(tmp_path):
    graph = _graph(400)
    graph.save(tmp_path / "graph")
    loaded = PassageGraph.load(tmp_path / "graph")
    rows = np.array([5, 0, 399, 17, 5])
    for kind in EDGE_TYPES:
        matrix = loaded.csr[kind]
        assert matrix.rows_file is not None, kind
        mine = row_edges(matrix, rows)
        expected = row_edges(Csr.of(graph.edges[kind]), rows)  # the arrays, in memory
        for got, want in zip(mine, expected, strict=True):
            np.testing.assert_array_equal(got, want, err_msg=kind)
        for row, column in [(0, 1), (17, 3), (399, 2)]:
            assert has_entry(matrix, row, column) == has_entry(graph.edges[kind], row, column)
    if Path("/proc/self/smaps").exists():  # the rows came through reads, not the map
        assert _mapped_pages(tmp_path / "graph" / "passages-entity.npz") == 0


def test_a_graph_of_file_rows_goes_to_another_process_by_its_path(tmp_path):
    graph = _graph()
    graph.save(tmp_path / "graph")
    matrix = PassageGraph.load(tmp_path / "graph").csr["entity"]
    again = pickle.loads(pickle.dumps(matrix))
    assert again.rows_file is not None and again.rows_file.path == matrix.rows_file.path
    for got, want in zip(
        row_edges(again, np.arange(40)), row_edges(matrix, np.arange(40)), strict=True
    ):
        np.testing.assert_array_equal(got, want)


def test_a_pass_over_many_rows_reads_the_mapped_arrays(tmp_path, monkeypatch):
    graph = _graph()
    graph.save(tmp_path / "graph")
    matrix = PassageGraph.load(tmp_path / "graph").csr["link"]
    monkeypatch.setattr("hopgraph.core.csr.FILE_ROWS", 10)
    monkeypatch.setattr(type(matrix.rows_file), "edges", _refused)
    source, _ = row_edges(matrix, np.arange(40))  # a full pass: the maps, not one read a row
    assert len(source) == int((graph.edges["link"].data != 0).sum())


def _refused(*_: object) -> None:
    raise AssertionError("a pass over the graph read it a row at a time")


def test_an_edge_type_with_no_edge_reads_none_of_its_row_pointers(tmp_path):
    graph = _graph(400)
    graph.csr["structural"] = Csr.of(sp.csr_matrix((400, 400), dtype=np.float32))
    graph.save(tmp_path / "graph")
    matrix = PassageGraph.load(tmp_path / "graph").csr["structural"]
    source, target = row_edges(matrix, np.array([3, 200, 399]))
    assert len(source) == len(target) == 0 and not has_entry(matrix, 3, 4)
    if Path("/proc/self/smaps").exists():  # its pointers are mapped: a read maps their pages
        assert _mapped_pages(tmp_path / "graph" / "passages-structural.npz") == 0
