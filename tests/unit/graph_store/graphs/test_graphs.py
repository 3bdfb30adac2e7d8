import numpy as np
import pytest
import scipy.sparse as sp

from hopgraph.core.errors import IndexStateError
from hopgraph.core.id_lists import ChunkIds
from hopgraph.evals.coverage import covered
from hopgraph.graph_store.documents.schema import Chunk
from hopgraph.graph_store.graphs import passage_graph
from hopgraph.graph_store.graphs.ann import ann_top_k, locality_order
from hopgraph.graph_store.graphs.extraction import Extraction, Triple
from hopgraph.graph_store.graphs.extraction.table import ExtractionTable
from hopgraph.graph_store.graphs.knowledge_graph import build_knowledge_graph
from hopgraph.graph_store.graphs.passage_edges import (
    build_passage_graph,
    link_edges,
    shared_item_edges,
    structural_edges,
)
from hopgraph.graph_store.graphs.passage_graph import PassageGraph, PassageGraphSettings
from hopgraph.graph_store.graphs.semantic import nearest, semantic_edges


def test_structural_edges_link_consecutive_chunks_of_one_document():
    chunks = [
        Chunk("d#0", "d", "", "x", 0, 3),
        Chunk("d#1", "d", "", "y", 1, 3),
        Chunk("d#2", "d", "", "z", 2, 3),
        Chunk("e", "e", "", "w"),
    ]
    dense = structural_edges(chunks).toarray()
    assert dense.tolist() == [[0, 1, 0, 0], [1, 0, 1, 0], [0, 1, 0, 0], [0, 0, 0, 0]]


def test_shared_items_weight_and_hub_cap():
    items = [["x", "y"], ["x", "y", "hub"], ["y", "hub"], ["hub"]]
    both = shared_item_edges(items, min_shared=1, max_df=None).toarray()
    assert both[0, 1] == 2 and both[1, 2] == 2 and both[2, 3] == 1 and both[0, 0] == 0
    capped = shared_item_edges(items, min_shared=1, max_df=2).toarray()  # "hub" (df 3), "y" (3)
    assert capped.tolist() == [[0, 1, 0, 0], [1, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]]
    assert shared_item_edges(items, min_shared=2, max_df=None).toarray()[2, 3] == 0


def test_semantic_top_k_above_threshold_symmetric():
    v = np.array([[1, 0], [0.8, 0.6], [0, 1], [-1, 0]], dtype=np.float32)
    m = semantic_edges(v, k=1, min_sim=0.5).toarray()
    # cos(0,1) = 0.8, cos(1,2) = 0.6, cos(2,1) = 0.6; node 3's best (cos 0 with 2) < 0.5
    assert m[0, 1] == pytest.approx(0.8) and m[1, 0] == pytest.approx(0.8)
    assert m[1, 2] == pytest.approx(0.6) and m[2, 1] == pytest.approx(0.6)
    assert not m[3].any() and not m[:, 3].any()


def test_ann_semantic_edges_match_exact_ones(monkeypatch):
    from hopgraph.graph_store.graphs import semantic

    rng = np.random.default_rng(0)
    centres = rng.standard_normal((40, 32))
    v = centres[rng.integers(0, 40, 3000)] + 0.3 * rng.standard_normal((3000, 32))
    v = (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)
    v[1] = v[0]  # a duplicate: each is the other's best, and neither links to itself
    exact = semantic_edges(v, k=5, min_sim=0.2, search="exact")
    ann = semantic_edges(v, k=5, min_sim=0.2, search="ann")
    assert ann.diagonal().sum() == 0 and ann[0, 1] == pytest.approx(1.0, abs=1e-5)
    agree = exact.multiply(ann > 0).nnz / exact.nnz
    assert agree >= 0.98 and abs(ann.nnz - exact.nnz) / exact.nnz < 0.02
    np.testing.assert_allclose(ann[ann.nonzero()], np.asarray(ann.T[ann.nonzero()]), atol=1e-6)
    built = []
    monkeypatch.setattr(semantic, "ann_top_k", lambda v, k: built.append(1) or (
        semantic.exact_top_k(v, k)))  # fmt: skip
    monkeypatch.setattr(semantic, "ANN_FROM", 3000)
    semantic_edges(v, k=5, min_sim=0.2)  # auto: 3,000 chunks reach the threshold
    semantic_edges(v[:2999], k=5, min_sim=0.2)
    assert built == [1]


def test_asking_for_ann_on_a_few_chunks_searches_exactly():
    # faiss's NN-descent refuses fewer than 100 rows; a small index asked for ann still builds
    v = np.random.default_rng(2).standard_normal((50, 8)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    assert np.array_equal(nearest(v, 5, "ann").rows, nearest(v, 5, "exact").rows)


def test_locality_order_groups_alike_rows_and_the_ann_lists_come_back_in_row_order():
    rng = np.random.default_rng(1)
    topic = rng.integers(0, 20, 2000)
    v = rng.standard_normal((20, 16))[topic] + 0.1 * rng.standard_normal((2000, 16))
    v = (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)
    order = locality_order(v, clusters=40, leaf=16)
    assert sorted(order) == list(range(2000))
    assert np.array_equal(locality_order(v, clusters=40, leaf=16), order)  # seeded
    same_topic_next = np.mean(topic[order][1:] == topic[order][:-1])
    assert same_topic_next > 0.8 and np.mean(topic[1:] == topic[:-1]) < 0.1
    rows, scores = ann_top_k(v, 5)  # NN-descent works on the rows in locality order
    assert not (rows == np.arange(2000)[:, None]).any()
    assert np.mean(topic[rows] == topic[:, None]) > 0.99  # each row's own topic, in row order
    np.testing.assert_allclose(scores, np.einsum("ij,ikj->ik", v, v[rows]), atol=1e-5)
    assert (np.diff(scores, axis=1) <= 1e-6).all()  # best first


def test_passage_graph_features_neighbours_and_round_trip(tmp_path, monkeypatch):
    chunks = [
        Chunk("a", "a", "A", "t"),
        Chunk("b#0", "b", "B", "t", 0, 2),
        Chunk("b#1", "b", "B", "t", 1, 2),
    ]
    extractions = [
        Extraction("a", ("a", "b"), ("k1", "k2")),
        Extraction("b#0", ("b",), ("k1", "k2", "k3")),
        Extraction("b#1", ("b",), ()),
    ]
    vectors = np.array([[1, 0], [0.6, 0.8], [0, 1]], dtype=np.float32)
    graph = build_passage_graph(
        chunks,
        ExtractionTable.from_extractions(extractions),
        vectors,
        PassageGraphSettings(max_df=5, keyword_min_shared=2, semantic_k=1, semantic_min_sim=0.5),
    )
    # a–b#0: semantic 0.6, keywords {k1,k2}, entity {b}; b#0–b#1: structural, entity {b}
    np.testing.assert_allclose(
        graph.edge_features("a", ["b#0", "b#1"]), [[0, 0.6, 2, 1], [0, 0, 0, 1]], rtol=1e-6
    )
    np.testing.assert_allclose(graph.edge_features("b#0", ["b#1"]), [[1, 0.8, 0, 1]], rtol=1e-6)
    assert graph.neighbours("a", ["keyword"]) == ["b#0"]
    assert graph.degrees().tolist() == [2, 2, 2]
    monkeypatch.setattr(passage_graph, "DEGREE_ROWS", 2)  # counted by blocks of rows
    assert graph.degrees().tolist() == [2, 2, 2]
    assert graph.degrees(["link"]).tolist() == [2, 1, 1]  # either direction
    # "a" mentions page B: links a → b#0 and a → b#1, one way; b's chunks mention no other page
    assert graph.edges["link"].toarray().tolist() == [[0, 1, 1], [0, 0, 0], [0, 0, 0]]
    assert graph.edge_count("link") == 2 and graph.edge_count("structural") == 1
    assert graph.adjacency(["link"], undirected=True)[1, 0] == 1
    graph.save(tmp_path)
    again = PassageGraph.load(tmp_path)
    assert again.ids == graph.ids
    known = ChunkIds(graph.ids)  # an index's table's ids: the graph's order shares them
    assert PassageGraph.load(tmp_path, known).ids is known
    for other in (graph.ids[:-1], [*graph.ids, "z"], graph.ids[::-1]):  # another order: its own
        own = PassageGraph.load(tmp_path, ChunkIds(other)).ids
        assert own == graph.ids and list(own) == list(graph.ids)
    assert all((again.edges[k] != graph.edges[k]).nnz == 0 for k in graph.edges)
    exported = again.to_networkx()
    assert exported.number_of_edges() == sum(graph.edge_count(k) for k in graph.edges)
    links = [d for _, _, d in exported.edges(data=True) if d["type"] == "link"]
    assert [d["source"] for d in links] == ["a", "a"]
    (tmp_path / "passages-link.npz").unlink()  # a graph written before link edges existed
    with pytest.raises(IndexStateError, match="no link edges"):
        PassageGraph.load(tmp_path)


def test_link_edges_follow_titles_across_documents_only():
    chunks = [
        Chunk("p", "p", "Paris", "t"),
        Chunk("q#0", "q", "Seine River", "t", 0, 2),
        Chunk("q#1", "q", "Seine River", "t", 1, 2),
        Chunk("r", "r", "Paris", "t"),  # a second page with the same title
    ]
    extractions = [
        Extraction("p", ("paris", "seine river"), ()),
        Extraction("q#0", ("seine river", "paris"), ()),
        Extraction("q#1", ("seine river",), ()),  # its own page: no link to itself
        Extraction("r", ("paris", "london"), ()),  # "london" has no page here
    ]
    links = link_edges(chunks, ExtractionTable.from_extractions(extractions)).toarray()
    assert links.tolist() == [
        [0, 1, 1, 0],  # p → both chunks of the Seine page (naming Paris is naming itself)
        [1, 0, 0, 1],  # q#0 mentions Paris: both pages of that title
        [0, 0, 0, 0],  # q#1 names only its own page
        [0, 0, 0, 0],  # r names itself and "london", which has no page here
    ]
    # When q#1 names Paris too, both Paris pages are linked from two chunks: a cap of one
    # drops the links into them and keeps those into the Seine page.
    extractions[2] = Extraction("q#1", ("seine river", "paris"), ())
    capped = link_edges(chunks, ExtractionTable.from_extractions(extractions), 1).toarray()
    assert capped.tolist() == [[0, 1, 1, 0], [0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]]


def test_knowledge_graph_lookups_by_hand():
    extractions = [
        Extraction("c1", ("x", "y"), (), (Triple("x", "born in", "y"), Triple("x", "son of", "z"))),
        Extraction("c2", ("y",), (), (Triple("y", "capital of", "w"),)),
    ]
    kg = build_knowledge_graph(["c1", "c2"], ExtractionTable.from_extractions(extractions))
    assert kg.entities == ["w", "x", "y", "z"]
    assert {t.text for t in kg.triples_of("y")} == {"x born in y", "y capital of w"}
    assert kg.chunks_of("y") == ["c1", "c2"] and kg.chunks_of("w") == ["c2"]
    born = next(t for t in kg.triples if t.predicate == "born in")
    # neighbours share a head or tail: "x son of z" (via x) and "y capital of w" (via y)
    assert {t.text for t in kg.triple_neighbours(born.id)} == {"x son of z", "y capital of w"}
    assert kg.triples_of("nobody") == [] and all(t.chunk_id for t in kg.triples)


def test_coverage_connects_gold_groups_within_hops():
    # path 0 - 1 - 2 - 3
    a = sp.csr_matrix(
        np.array([[0, 1, 0, 0], [1, 0, 1, 0], [0, 1, 0, 1], [0, 0, 1, 0]], dtype=np.float32)
    )
    assert covered(a, [[0], [2]], hops=2)
    assert not covered(a, [[0], [3]], hops=2)
    assert covered(a, [[0], [3]], hops=3)
    assert covered(a, [[0], [2], [3]], hops=2)  # 0~2 and 2~3 chain the three


def test_link_edges_from_the_readings_pages_equal_those_worked_out_from_titles():
    from dataclasses import replace

    from hopgraph.graph_store.graphs.extraction.readings import CorpusReadings
    from tests.conftest import DOCS

    chunks = [Chunk(d["id"], d["id"], d["title"], d["text"]) for d in DOCS]
    table = CorpusReadings().update(chunks, [], chunks)
    assert table.pages is not None and (table.pages >= 0).all()
    given = link_edges(chunks, table)
    worked_out = link_edges(chunks, replace(table, pages=None))
    assert given.nnz > 0 and (given != worked_out).nnz == 0


@pytest.mark.parametrize("compressed", [False, True])
def test_a_range_of_neighbour_lists_reads_those_rows_alone(tmp_path, compressed):
    from hopgraph.graph_store.graphs.semantic import Neighbours

    rng = np.random.default_rng(2)
    lists = Neighbours(rng.integers(-1, 500, size=(500, 10)), rng.random((500, 10), np.float32))
    path = tmp_path / "neighbours.npz"
    if compressed:  # what an older writer might have left: read whole, then cut
        np.savez_compressed(path, rows=lists.rows, scores=lists.scores)
    else:
        lists.save(path)
    part = Neighbours.load_rows(path, 120, 377)
    np.testing.assert_array_equal(part.rows, lists.rows[120:377])
    np.testing.assert_array_equal(part.scores, lists.scores[120:377])
    assert part.rows.flags.writeable and not isinstance(part.rows, np.memmap)
    empty = Neighbours.load_rows(path, 500, 500)
    assert empty.rows.shape == (0, 10)
