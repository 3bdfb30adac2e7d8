"""A graph build's neighbour lists found by a cluster's calls, run here without Ray.

The index of the bundled sample written in four steps (three vector segments, dead rows):
the lists that calls over ranges of chunk rows find (graph_store/cluster/neighbours.py) are
one process's exact lists, and the graphs built from them are the same; the IVF join
(``ann``) keeps nearly all of them, every cosine exact. tests/integration/test_cluster.py
runs the calls as tasks on a cluster.
"""

import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest

from hopgraph.core.threads import in_process
from hopgraph.graph_store import (
    Index,
    add_documents,
    build_graphs,
    delete_documents,
)
from hopgraph.graph_store.cluster import list_update, neighbours
from hopgraph.graph_store.cluster.list_update import update_lists, updated_by
from hopgraph.graph_store.cluster.neighbours import approximate, search_lists
from hopgraph.graph_store.documents.schema import Document
from hopgraph.graph_store.graphs.semantic import (
    ANN_FROM,
    NEIGHBOURS_FILE,
    SPARE_NEIGHBOURS,
    Neighbours,
    nearest,
    update_nearest,
)
from hopgraph.graph_store.index.graph_build import GraphSettings, GraphTasks
from hopgraph.graph_store.index.stored_vectors import read_vectors
from hopgraph.graph_store.stores.manifest import read_manifest, record_files
from hopgraph.graph_store.stores.vector_search import VectorSearch
from tests.sample_index import written_in_four_steps
from tests.unit.graph_store.graphs.test_incremental_graphs import vector_writes

WIDTH = GraphSettings().semantic_k + SPARE_NEIGHBOURS


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    path = written_in_four_steps(tmp_path_factory.mktemp("neighbours") / "index")
    return path


def in_ranges(parts: int, probes: int = 32):
    """What ``parts`` calls a step find, run here: a finder as build_graphs takes it."""

    def finder(directory, manifest, n, m, semantic_search, scratch, to):
        source = (str(directory), manifest.model_dump_json())
        wide = approximate(semantic_search, n)
        search_lists(source, n, m, wide, parts, to, probes=probes, scratch=scratch)

    return finder


def one_process(path) -> Neighbours:
    with Index.open(path) as idx:
        assert len(idx.manifest.vectors) == 3
        vectors = read_vectors(path, idx.manifest, list(idx.chunks.values()))
    return nearest(vectors, WIDTH, "exact")


def found(path, parts, mode, probes=32) -> Neighbours:
    with Index.open(path) as idx:
        source, n = (str(path), idx.manifest.model_dump_json()), len(idx.chunks)
    with tempfile.TemporaryDirectory() as folder:
        to, scratch = Path(folder) / "lists.npz", Path(folder) / "scratch"
        wide = approximate(mode, n)
        search_lists(source, n, WIDTH, wide, parts, to, probes=probes, scratch=scratch)
        assert not any(scratch.iterdir())  # every call's file removed once read
        return Neighbours.load(to)


def test_the_sample_is_searched_exactly_below_the_ann_threshold():
    assert not approximate("auto", ANN_FROM - 1) and not approximate("exact", 10**7)
    assert approximate("auto", ANN_FROM) and approximate("ann", 10)


@pytest.mark.parametrize("parts", [1, 3])
def test_ranges_of_rows_find_one_process_exact_lists(written, parts):
    expected, got = one_process(written), found(written, parts, "exact")
    assert got.rows.shape == expected.rows.shape
    np.testing.assert_allclose(got.scores, expected.scores, atol=1e-6)
    assert np.mean(got.rows == expected.rows) > 0.995  # only tied cosines may swap


@pytest.mark.parametrize(
    ("parts", "probes", "floor"), [(1, 99, 0.995), (3, 99, 0.995), (3, 6, 0.9)]
)
def test_the_ivf_join_keeps_nearly_every_neighbour_with_its_exact_cosine(
    written, monkeypatch, parts, probes, floor
):
    # lists of 16 rows: about 20 of them over the sample; 99 probes read them all (exact)
    monkeypatch.setattr(neighbours, "LIST_ROWS", 16)
    expected, got = one_process(written), found(written, parts, "ann", probes=probes)
    kept = [len(set(a) & set(b)) / len(a) for a, b in zip(expected.rows, got.rows, strict=True)]
    print(f"probes {probes}: kept {np.mean(kept):.4f}")
    assert np.mean(kept) >= floor
    with Index.open(written) as idx:
        vectors = read_vectors(written, idx.manifest, list(idx.chunks.values()))
    listed = got.rows >= 0
    exact = np.einsum("id,ijd->ij", vectors, vectors[np.maximum(got.rows, 0)])
    np.testing.assert_allclose(got.scores[listed], exact[listed], atol=1e-5)


def test_the_driver_hands_the_calls_file_names_not_arrays(written, monkeypatch, tmp_path):
    """What passes between the driver and the calls grows with nothing: the centroids (4 bytes a
    passage) went through the object store as an array, read once and put once a step."""
    monkeypatch.setattr(neighbours, "LIST_ROWS", 16)
    handed = []

    def run(function, calls):
        results = in_process(function, calls)
        handed.extend([*(a for call in calls for a in call), *results])
        return results

    with Index.open(written) as idx:
        source, n = (str(written), idx.manifest.model_dump_json()), len(idx.chunks)
    search_lists(source, n, WIDTH, True, 3, tmp_path / "lists.npz", run, scratch=tmp_path / "s")
    assert not [a for a in handed if isinstance(a, np.ndarray)]
    assert not any((tmp_path / "s").iterdir())  # the centroids' file gone with the rest


def test_a_list_asked_by_many_rows_is_scored_by_blocks_of_them_to_the_same_lists(
    written, monkeypatch
):
    monkeypatch.setattr(neighbours, "LIST_ROWS", 16)
    whole = found(written, 3, "ann", probes=6)
    monkeypatch.setattr(neighbours, "LIST_CELLS", 40)  # two or three rows a block
    blocks = found(written, 3, "ann", probes=6)
    np.testing.assert_array_equal(blocks.rows, whole.rows)
    np.testing.assert_array_equal(blocks.scores, whole.scores)


def test_a_graph_build_given_the_tasks_lists_builds_the_same_graphs(written, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(written, copy)
    build_graphs(written, show_progress=False)
    build_graphs(copy, show_progress=False, tasks=GraphTasks(in_ranges(3)))
    with Index.open(written) as one, Index.open(copy) as other:
        assert one.manifest.graph["counts"] == other.manifest.graph["counts"]
        mine, theirs = (
            Neighbours.load(i.manifest.path(i.directory, "graph") / NEIGHBOURS_FILE)
            for i in (one, other)
        )
        np.testing.assert_allclose(mine.scores, theirs.scores, atol=1e-6)
        for kind, edges in one.passage_graph.edges.items():
            theirs_edges = other.passage_graph.edges[kind]
            assert ((edges != 0) != (theirs_edges != 0)).nnz == 0, kind  # the same pairs
            # the same weights; a cosine found by a task's product of a range of rows may round
            # apart from the whole matrix's in its last bit (seen with some CPUs' BLAS kernels)
            assert abs(edges - theirs_edges).max() <= 1e-6, kind


def test_the_joins_hand_their_lists_over_in_files_left_in_no_graph_folder(written, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(written, copy)
    ann = GraphSettings(semantic_search="ann")
    build_graphs(copy, ann, show_progress=False, tasks=GraphTasks(in_ranges(3, probes=4)))
    with Index.open(copy) as other:
        folder = other.manifest.path(copy, "graph")
        assert not (folder / "neighbour-search").exists()
        lists = Neighbours.load(folder / NEIGHBOURS_FILE)
    expected = one_process(written)
    kept = [len(set(a) & set(b)) / len(a) for a, b in zip(expected.rows, lists.rows, strict=True)]
    assert np.mean(kept) > 0.9


@pytest.mark.parametrize("parts", [1, 3])
@pytest.mark.parametrize("seed", range(6))
def test_calls_over_ranges_update_the_lists_as_one_process_does(monkeypatch, parts, seed):
    """A write's update by calls (cluster/list_update.update_lists) equals update_nearest.

    Chunks removed and added over several writes; the calls' blocks made small so that each
    call scores its range in several blocks, and the plan keeps the lists by blocks of rows.
    """
    monkeypatch.setattr(list_update, "BLOCK_CELLS", 64)
    monkeypatch.setattr(list_update, "PLAN_BLOCK", 4)
    writes = vector_writes(np.random.default_rng(seed), (5, 40), 4, 8, 6, keep=3, start=1000)
    lists = nearest(next(writes)[1], 6)
    for old_to_new, matrix in writes:
        expected = update_nearest(lists, old_to_new, matrix, k=3)
        search = VectorSearch.of_matrix(matrix, "exact")
        lists = update_lists(search, lists, old_to_new, len(matrix), 3, parts)
        np.testing.assert_array_equal(lists.rows, expected.rows)
        np.testing.assert_allclose(lists.scores, expected.scores, rtol=0, atol=1e-6)


def test_a_write_given_the_update_calls_writes_the_same_graphs(tmp_path):
    """An add and a delete on an index with graphs, their lists updated by calls over ranges
    (as `add --cluster` has tasks do): the same passage graph as a write in one process."""
    here, there = tmp_path / "here", tmp_path / "there"
    written_in_four_steps(here)
    build_graphs(here, GraphSettings(), show_progress=False)
    shutil.copytree(here, there)
    docs = [Document(f"new{i}", f"New page {i}", f"A new page {i} about shared words.")
            for i in range(3)]  # fmt: skip
    calls = []

    def three(n):
        calls.append(n)
        return 3

    by_calls = GraphTasks(update=updated_by(in_process, three))
    for path, tasks in ((here, None), (there, by_calls)):
        add_documents(path, docs, show_progress=False, tasks=tasks)
        with Index.open(path) as idx:
            gone = sorted({c.doc_id for c in idx.chunks.values()})[:2]
        delete_documents(path, gone, tasks)
    assert len(calls) == 2  # the add's update and the delete's
    a, b = (Neighbours.load(_graph_folder(p) / NEIGHBOURS_FILE) for p in (here, there))
    np.testing.assert_array_equal(a.rows, b.rows)
    np.testing.assert_allclose(a.scores, b.scores, rtol=0, atol=1e-6)
    assert not (_graph_folder(there) / "neighbour-search").exists()
    with Index.open(here) as one, Index.open(there) as other:
        assert one.chunks.keys() == other.chunks.keys()
        for kind in ("entity", "semantic", "link"):
            got, expected = other.passage_graph.edges[kind], one.passage_graph.edges[kind]
            assert ((got != 0) != (expected != 0)).nnz == 0, kind
            assert abs(got - expected).max() <= 1e-6, kind  # cosines by other products


def _graph_folder(path):
    with Index.open(path) as idx:
        return idx.manifest.path(path, "graph")


def test_a_write_whose_previous_graph_has_no_lists_searches_them_afresh(tmp_path):
    """Lists of another width (settings changed by hand, or an older build): the plan's call
    says so and the write searches afresh, as one process's does."""
    here, there = tmp_path / "here", tmp_path / "there"
    written_in_four_steps(here)
    build_graphs(here, GraphSettings(), show_progress=False)
    lists = Neighbours.load(_graph_folder(here) / NEIGHBOURS_FILE)
    Neighbours(lists.rows[:, :3], lists.scores[:, :3]).save(_graph_folder(here) / NEIGHBOURS_FILE)
    manifest = read_manifest(here)  # as the build that wrote them recorded them
    record_files(here, manifest, None)
    manifest.write(here)
    shutil.copytree(here, there)
    docs = [Document("new", "New page", "A new page about shared words.")]
    ran = []

    def run(function, calls):
        ran.append(function.__name__)
        return in_process(function, calls)

    for path, given in ((here, None), (there, GraphTasks(update=updated_by(run, lambda n: 2)))):
        add_documents(path, docs, show_progress=False, tasks=given)
    assert ran == ["plan_update"]  # it said the lists are too narrow: nothing searched there
    a, b = (Neighbours.load(_graph_folder(p) / NEIGHBOURS_FILE) for p in (here, there))
    assert a.rows.shape == (len(lists.rows) + 1, WIDTH)  # searched afresh, as wide as wanted
    np.testing.assert_array_equal(a.rows, b.rows)
    assert not (_graph_folder(there) / "neighbour-search").exists()
