"""Both graphs made by a cluster's calls from the readings' parts, run here.

The calls (graph_store/cluster/graph_parts.py over graphs/edge_parts.py and kg_parts.py) give
one process's graphs: every edge type's matrix, weights included, the counts (edges, mean
degree, entities, triples) and the knowledge graph's files byte for byte.
tests/integration/test_cluster.py runs them as tasks on a cluster.
"""

import shutil
from itertools import pairwise

import numpy as np
import pytest

from hopgraph.graph_store import Index, build_graphs
from hopgraph.graph_store.cluster.graph_parts import SCRATCH, build_graphs_in_parts
from hopgraph.graph_store.documents.schema import Chunk
from hopgraph.graph_store.graphs.edge_parts import LINK_IN, RowsIn, emit, group, stitch, sum_rows
from hopgraph.graph_store.graphs.extraction.base import Extraction
from hopgraph.graph_store.graphs.extraction.state_shards import STATE_SHARDS
from hopgraph.graph_store.graphs.extraction.table import EXTRACTION_PARTS, ExtractionTable
from hopgraph.graph_store.graphs.passage_edges import build_passage_graph
from hopgraph.graph_store.graphs.passage_graph import (
    EDGE_TYPES,
    PassageGraph,
    PassageGraphSettings,
    mapped_csr,
)
from hopgraph.graph_store.graphs.semantic import Neighbours
from hopgraph.graph_store.index import build as index_build
from hopgraph.graph_store.index.check import check_index
from hopgraph.graph_store.index.graph_build import GraphSettings, GraphTasks
from tests.sample_index import written_in_four_steps
from tests.unit.graph_store.cluster.test_cluster_readings import exact_lists, in_ranges


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    return written_in_four_steps(tmp_path_factory.mktemp("edges") / "index")


def graphs_here(directory, manifest, target, settings):
    """What the graphs' calls do, run here: a parts build as build_graphs takes it.

    The table they read is written whole by now (a write's: its child has written it).
    """
    assert manifest.path(directory, "chunks").is_file()
    source = (str(directory), manifest.model_dump_json())
    return build_graphs_in_parts(source, target, settings)


KG_FILES = (
    "entities.json",
    "triples.jsonl",
    "kg-chunks.json",
    "kg-triple-entity.npz",
    "kg-chunk-entity.npz",
)


def same_graphs(one: Index, other: Index) -> None:
    assert one.manifest.graph["counts"] == other.manifest.graph["counts"]
    assert one.extractions == other.extractions  # the calls' read joined from their parts
    assert other.passage_graph.ids == one.passage_graph.ids
    for kind, edges in one.passage_graph.edges.items():
        theirs = other.passage_graph.edges[kind]
        assert edges.nnz == theirs.nnz and (edges != theirs).nnz == 0, kind
        assert edges.nnz > 0 or kind == "keyword", kind  # a comparison of something


@pytest.mark.parametrize(
    ("parts", "settings"),
    [
        (1, GraphSettings()),
        (3, GraphSettings()),
        (5, GraphSettings(max_df=3, keyword_min_shared=1, semantic_min_sim=-1.0)),
        (2, GraphSettings(embed_triples=True)),  # the graph loaded back for its triples
    ],
)
def test_edges_made_by_the_calls_are_one_process_s(written, tmp_path, monkeypatch, parts, settings):
    one, calls = tmp_path / "one", tmp_path / "calls"
    shutil.copytree(written, one)
    shutil.copytree(written, calls)
    build_graphs(one, settings, show_progress=False, tasks=GraphTasks(exact_lists))
    tasks = GraphTasks(exact_lists, in_ranges(parts), parts=graphs_here)
    with monkeypatch.context() as patched:  # the driver holds no list of chunks: it scans
        patched.setattr(index_build, "read_chunks", _not_read)
        build_graphs(calls, settings, show_progress=False, tasks=tasks)
    with Index.open(one) as a, Index.open(calls) as b:
        same_graphs(a, b)
        folder = b.manifest.path(calls, "graph")
        assert a.manifest.graph["triples_embedded"] == b.manifest.graph["triples_embedded"]
    with Index.open(one) as a:
        theirs = a.manifest.path(one, "graph")
    for name in [*KG_FILES[:3], "nodes.json"]:  # one process's files, byte for byte
        assert (folder / name).read_bytes() == (theirs / name).read_bytes(), name
    for name in KG_FILES[3:]:  # the same matrices, read as the index maps them
        mine, other = (mapped_csr(f / name).to_scipy() for f in (theirs, folder))
        assert mine.shape == other.shape and (mine != other).nnz == 0, name
    # the extractions stay in their parts, the extractor's state in shards, the scratch is
    # gone; the rest as one process's
    assert (folder / EXTRACTION_PARTS).is_dir() and not (folder / SCRATCH).exists()
    mine = sorted([*_graph_files(theirs), EXTRACTION_PARTS, STATE_SHARDS])
    assert _graph_files(folder) == mine
    assert check_index(calls) == []


def _not_read(*args, **kwargs):
    raise AssertionError("a graph build by tasks read the whole chunk table")


def _graph_files(folder):
    """Name the graph folder's files but the readings' (saved in parts by the calls)."""
    readings = ("offline-readings", "titles", "extractions.")
    return sorted(p.name for p in folder.iterdir() if not p.name.startswith(readings))


def test_a_reading_in_parts_without_edge_calls_leaves_no_parts(written, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(written, copy)
    build_graphs(copy, show_progress=False, tasks=GraphTasks(exact_lists, in_ranges(3)))
    with Index.open(copy) as idx:
        folder = idx.manifest.path(copy, "graph")
    assert not (folder / EXTRACTION_PARTS).exists()


def _rows_in(start, chunks, extractions, neighbours):
    return RowsIn(
        start,
        ExtractionTable.from_extractions(extractions),
        [c.doc_id for c in chunks],
        np.array([c.position for c in chunks]),
        [c.title for c in chunks],
        neighbours,
    )


def test_hubs_pages_linked_from_many_and_one_sided_neighbours_as_one_process(tmp_path):
    """Small enough to read: an entity in 4 rows (> max_df 3) makes no edges; page P is
    mentioned from 4 rows of other documents, so it gets no links in; page Q from 2."""
    chunks = [
        Chunk("p#0", "p", "P", "x", 0, 2),
        Chunk("p#1", "p", "P", "x", 1, 2),
        Chunk("q", "q", "Q", "x"),
        Chunk("a", "a", "A", "x"),
        Chunk("b", "b", "B", "x"),
        Chunk("c", "c", "C", "x"),
        Chunk("d", "d", "D", "x"),
    ]
    extractions = [
        Extraction("p#0", ("hub", "e1"), ("k1", "k2")),
        Extraction("p#1", ("hub", "q"), ("k1",)),
        Extraction("q", ("hub", "e1", "q"), ("k1", "k2")),
        Extraction("a", ("hub", "p"), ()),
        Extraction("b", ("p", "q"), ()),
        Extraction("c", ("p",), ()),
        Extraction("d", ("p", "p"), ("k2",)),
    ]
    lists = Neighbours(
        np.array([[1, 2], [0, -1], [3, 6], [2, 4], [6, 3], [6, 0], [5, 4]], dtype=np.int32),
        np.array(
            [[0.9, 0.4], [0.9, 0], [0.2, -0.3], [0.7, 0.6], [0.8, 0.5], [0.6, 0.1], [0.6, 0.5]],
            dtype=np.float32,
        ),
    )
    settings = PassageGraphSettings(
        max_df=3, keyword_min_shared=1, semantic_k=2, semantic_min_sim=-0.5
    )
    one = build_passage_graph(
        chunks, ExtractionTable.from_extractions(extractions), lists, settings
    )
    assert one.edge_count("entity") > 0 and one.edge_count("link") > 0
    assert one.edges["link"][:, 0].nnz == 0  # P's first chunk: linked from 4 rows, none kept
    cuts = [0, 2, 5, 7]
    bounds = np.array(cuts)
    names, out = [f"part{p}" for p in range(3)], tmp_path / "scratch"
    out.mkdir()
    for p, (a, b) in enumerate(pairwise(cuts)):
        part = Neighbours(lists.rows[a:b], lists.scores[a:b])
        emit(_rows_in(a, chunks[a:b], extractions[a:b], part), names[p], bounds, 2, out, settings)
    for bucket in range(2):  # fewer buckets than parts: any number will do
        group(bucket, names, bounds, out, settings)
    found = [
        sum_rows((p, a, b), 7, (names, 2), out, settings) for p, (a, b) in enumerate(pairwise(cuts))
    ]
    stitch(out, [nnz for nnz, _ in found], 7, tmp_path)
    shutil.rmtree(out)
    (tmp_path / "nodes.json").write_text('["p#0","p#1","q","a","b","c","d"]', encoding="utf-8")
    made = PassageGraph.load(tmp_path)
    for kind in EDGE_TYPES:
        assert (made.edges[kind] != one.edges[kind]).nnz == 0, kind
        assert made.edges[kind].has_sorted_indices, kind
    assert sum(degree for _, degree in found) == one.degrees().sum()
    assert sum(nnz["link"] for nnz, _ in found) == one.edges["link"].nnz
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["nodes.json", *(f"passages-{k}.npz" for k in EDGE_TYPES)]
    )
    assert LINK_IN not in {k for nnz, _ in found for k in nnz}
