"""A graph build's neighbour lists found by ranges of rows (a cluster's tasks), without Ray.

The index of the bundled sample written in four steps (three vector segments, dead rows):
the lists that tasks over ranges of chunk rows find (graph_store/cluster/neighbours.py) are
one process's exact lists, and the graphs built from them are the same; through IVFs
(``ann``) they keep nearly all of them, every cosine exact. tests/integration/test_cluster.py
runs the tasks on a cluster.
"""

import itertools
import shutil

import numpy as np
import pytest

from hopgraph.core.settings import IndexSettings
from hopgraph.demo import sample_dir
from hopgraph.graph_store import (
    Index,
    add_documents,
    build_graphs,
    build_index,
    delete_documents,
    load_documents,
)
from hopgraph.graph_store.cluster.neighbours import rows_neighbours, search_mode
from hopgraph.graph_store.graphs.semantic import ANN_FROM, SPARE_NEIGHBOURS, Neighbours, nearest
from hopgraph.graph_store.index.graph_build import NEIGHBOURS_FILE, GraphSettings
from hopgraph.graph_store.index.reader import read_vectors

WIDTH = GraphSettings().semantic_k + SPARE_NEIGHBOURS


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    docs = load_documents(sample_dir() / "corpus.jsonl")
    path = tmp_path_factory.mktemp("neighbours") / "index"
    build_index(docs[:120], path, IndexSettings(model="hashing"), show_progress=False)
    add_documents(path, docs[120:200], show_progress=False)
    add_documents(path, docs[200:], show_progress=False)
    delete_documents(path, [d.id for d in docs[100:130]])
    return path


def in_ranges(path, parts: int, mode: str):
    """What ``parts`` tasks find, run here: one finder as build_graphs takes it."""

    def finder(directory, manifest, chunks, m, semantic_search):
        bounds = np.linspace(0, len(chunks), parts + 1).astype(int)
        how = mode or search_mode(semantic_search, len(chunks))
        found = [rows_neighbours(str(directory), manifest.model_dump_json(), a, b, m, how)
                 for a, b in itertools.pairwise(bounds)]  # fmt: skip
        return Neighbours(np.concatenate([r for r, _ in found]),
                          np.concatenate([s for _, s in found]))  # fmt: skip

    return finder


def one_process(path) -> Neighbours:
    with Index.open(path) as idx:
        assert len(idx.manifest.vectors) == 3
        vectors = read_vectors(path, idx.manifest, list(idx.chunks.values()))
    return nearest(vectors, WIDTH, "exact")


def found(path, parts, mode) -> Neighbours:
    with Index.open(path) as idx:
        chunks = list(idx.chunks.values())
        return in_ranges(path, parts, mode)(path, idx.manifest, chunks, WIDTH, "auto")


def test_the_sample_is_searched_exactly_below_the_ann_threshold():
    assert search_mode("auto", ANN_FROM - 1) == "exact" and search_mode("exact", 10**7) == "exact"
    assert search_mode("auto", ANN_FROM) == "auto" and search_mode("ann", 10) == "ann"


@pytest.mark.parametrize("parts", [1, 3])
def test_ranges_of_rows_find_one_process_exact_lists(written, parts):
    expected, got = one_process(written), found(written, parts, "exact")
    assert got.rows.shape == expected.rows.shape
    np.testing.assert_allclose(got.scores, expected.scores, atol=1e-6)
    assert np.mean(got.rows == expected.rows) > 0.995  # only tied cosines may swap


def test_through_ivfs_nearly_every_neighbour_is_kept_with_its_exact_cosine(written):
    expected, got = one_process(written), found(written, 2, "ann")
    kept = [len(set(a) & set(b)) / len(a) for a, b in zip(expected.rows, got.rows, strict=True)]
    assert np.mean(kept) >= 0.98
    with Index.open(written) as idx:
        vectors = read_vectors(written, idx.manifest, list(idx.chunks.values()))
    listed = got.rows >= 0
    exact = np.einsum("id,ijd->ij", vectors, vectors[np.maximum(got.rows, 0)])
    np.testing.assert_allclose(got.scores[listed], exact[listed], atol=1e-5)


def test_a_graph_build_given_the_tasks_lists_builds_the_same_graphs(written, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(written, copy)
    build_graphs(written, show_progress=False)
    build_graphs(copy, show_progress=False, search=in_ranges(copy, 3, ""))
    with Index.open(written) as one, Index.open(copy) as other:
        assert one.manifest.graph["counts"] == other.manifest.graph["counts"]
        mine, theirs = (
            Neighbours.load(i.manifest.path(i.directory, "graph") / NEIGHBOURS_FILE)
            for i in (one, other)
        )
        np.testing.assert_allclose(mine.scores, theirs.scores, atol=1e-6)
        for kind, edges in one.passage_graph.edges.items():
            theirs_edges = other.passage_graph.edges[kind]
            assert (edges != theirs_edges).nnz == 0, kind
