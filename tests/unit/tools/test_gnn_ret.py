"""GNN-Ret's layer (Eqs. 3-4 of spec gnn_ret §3.2) on graphs small enough to check by hand."""

import numpy as np
import pytest
import scipy.sparse as sp

from hopgraph.tools.gnn_ret.channels import Channel
from hopgraph.tools.gnn_ret.layers import gnn_layer, propagate, smallest, typed_layer


def graph(n, edges):
    rows, cols = zip(*edges, strict=True)
    m = sp.csr_matrix((np.ones(len(edges)), (rows, cols)), shape=(n, n))
    return ((m + m.T) > 0).astype(np.float32).tocsr()


H0 = np.array([0.1, 0.5, 0.9, 0.3, 0.8])
# 0-2, 1-3, 2-3; node 4 is isolated. With K = 2, T_K = {0 (0.1), 3 (0.3)}.
A = graph(5, [(0, 2), (1, 3), (2, 3)])


def test_min_message_from_top_k_blended_by_alpha():
    layer = gnn_layer(H0, A, alpha=0.5, top_k=2)
    # node 2 hears from 0 and 3: m = min(0.1, 0.3) = 0.1, h = 0.5*0.9 + 0.5*0.1 = 0.5
    # node 1 hears from 3: m = 0.3, h = 0.5*0.5 + 0.5*0.3 = 0.4
    # nodes 0, 3 (no neighbour in T_K) and 4 (isolated) keep their distance
    np.testing.assert_allclose(layer.h, [0.1, 0.4, 0.5, 0.3, 0.8])
    assert layer.sender.tolist() == [-1, 3, 0, -1, -1]


def test_alpha_extremes():
    np.testing.assert_allclose(gnn_layer(H0, A, alpha=1.0, top_k=2).h, H0)
    np.testing.assert_allclose(gnn_layer(H0, A, alpha=0.0, top_k=2).h, [0.1, 0.3, 0.1, 0.3, 0.8])


def test_top_k_nodes_adjacent_to_each_other_literal_or_only_lower():
    a = graph(5, [(0, 2), (1, 3), (2, 3), (0, 3)])
    literal = gnn_layer(H0, a, alpha=0.5, top_k=2)
    # 0 hears 0.3 from 3: the literal Eq. 4 raises it to 0.2; 3 hears 0.1 from 0: 0.2
    assert literal.h[0] == pytest.approx(0.2) and literal.h[3] == pytest.approx(0.2)
    guarded = gnn_layer(H0, a, alpha=0.5, top_k=2, only_lower=True)
    assert guarded.h[0] == pytest.approx(0.1) and guarded.sender[0] == -1
    assert guarded.h[3] == pytest.approx(0.2) and guarded.sender[3] == 0


def test_two_layers_use_the_new_top_k():
    h, sender, channel = propagate(H0, [(A, 0.5)], top_k=2, layers=2)
    # layer 1: [0.1, 0.4, 0.5, 0.3, 0.8]; T_K = {0, 3}; node 2 again hears 0.1: 0.3;
    # node 1 hears 0.3: 0.35
    np.testing.assert_allclose(h, [0.1, 0.35, 0.3, 0.3, 0.8])
    assert sender.tolist() == [-1, 3, 0, -1, -1]
    assert channel.tolist() == [-1, 0, 0, -1, -1]


def test_typed_layer_keeps_each_chunks_lowest_channel():
    # Channel 0: the undirected A at α 0.5. Channel 1: one directed link 3 → 4 at α 0.2.
    link = sp.csr_matrix(([1.0], ([3], [4])), shape=(5, 5))
    layer, used = typed_layer(H0, [(A, 0.5), (link, 0.2)], top_k=2)
    # channel 0 gives [0.1, 0.4, 0.5, 0.3, 0.8] (the first test); channel 1 only moves node 4:
    # 0.2*0.8 + 0.8*0.3 = 0.4, below its 0.8
    np.testing.assert_allclose(layer.h, [0.1, 0.4, 0.5, 0.3, 0.4])
    assert layer.sender.tolist() == [-1, 3, 0, -1, 3]
    assert used.tolist() == [-1, 0, 0, -1, 1]


def test_directed_link_carries_a_message_one_way_only():
    # 4 → 0: node 4 is not in T_K, and node 0 (in T_K) has no outgoing link: nothing moves.
    link = sp.csr_matrix(([1.0], ([4], [0])), shape=(5, 5))
    layer, used = typed_layer(H0, [(link, 0.0)], top_k=2)
    np.testing.assert_allclose(layer.h, H0)
    assert used.tolist() == [-1] * 5


def test_channel_checks_its_settings():
    with pytest.raises(ValueError, match="alpha"):
        Channel(("entity",), 1.5)
    with pytest.raises(ValueError, match="edge types"):
        Channel(("hyperlinks",), 0.5)


@pytest.mark.parametrize("k", [0, 1, 3, 7, 50])
def test_smallest_equals_a_stable_sorts_first_k_with_ties(k):
    rng = np.random.default_rng(k)
    values = rng.integers(0, 5, 40).astype(np.float32)  # many ties
    assert smallest(values, k).tolist() == np.argsort(values, kind="stable")[:k].tolist()


def test_the_question_borrows_the_closest_chunks_entities_it_does_not_name(docs_index, monkeypatch):
    from hopgraph.tools.gnn_ret import retriever as gnn_ret
    from hopgraph.tools.gnn_ret.layers import smallest

    question = "When did military instruction start at the place where Larry Alcala was educated?"
    retriever = gnn_ret.GNNRetriever(docs_index, keep=0)
    closest = int(smallest(retriever.text_distances(question), 1)[0])
    assert docs_index.extraction_table.extraction(closest).entities == (
        "larry alcala", "filipino", "university of santo tomas")  # fmt: skip
    # "larry alcala" is named by the question; the bridge, the university, is not
    assert retriever.expanded(question, closest) == (
        f"{question} filipino ; university of santo tomas"
    )
    one = gnn_ret.GNNRetriever(docs_index, keep=0, expand=1)
    assert one.expanded(question, closest) == f"{question} filipino"
    h0 = np.minimum(retriever.text_distances(question), retriever.text_distances(
        f"{question} filipino ; university of santo tomas"))  # fmt: skip
    np.testing.assert_array_equal(retriever.distances(question), h0)
    off = gnn_ret.GNNRetriever(docs_index, keep=0, expand=0)
    np.testing.assert_array_equal(off.distances(question), off.text_distances(question))
    # only a question that looks multi-hop is expanded (the guard's classifier)
    assert retriever.expands(question) and not retriever.expands("who wrote the declaration")
    monkeypatch.setattr(gnn_ret, "HUB", 0)  # every entity is a hub now: nothing to borrow
    assert retriever.expanded(question, closest) is None
    with pytest.raises(ValueError, match="expand"):
        gnn_ret.GNNRetriever(docs_index, expand=-1)


def test_small_indexes_scan_every_chunk_and_rank_as_the_local_computation(docs_index, monkeypatch):
    from hopgraph.tools.gnn_ret import retriever as gnn_ret

    retriever = gnn_ret.GNNRetriever(docs_index)
    calls = []
    local = retriever.local_ranking
    monkeypatch.setattr(retriever, "local_ranking", lambda q, k: calls.append(q) or local(q, k))
    for question in ["Where was Larry Alcala educated?", "Which county seat is Stanley?"]:
        scanned = retriever.retrieve(question, 4)
        assert not calls  # a few chunks: every chunk's distance, no candidates
        monkeypatch.setattr(gnn_ret, "FULL_SCAN_BELOW", 0)
        assert retriever.retrieve(question, 4) == scanned and calls == [question]
        monkeypatch.setattr(gnn_ret, "FULL_SCAN_BELOW", 32_768)
        calls.clear()


@pytest.mark.parametrize(
    ("question", "names"),
    [
        ("What does render_to_log_kwargs do with positional arguments?", ["render_to_log_kwargs"]),
        ("Does marshmallow run my validators when I call dump()?", ["dump()"]),
        ("What does structlog.get_logger return?", ["structlog.get_logger"]),
        ("When does a @validates_schema method run?", ["@validates_schema"]),
        ("Schema(extra={...}) used to add keys. What replaces it?", ["extra="]),
        ("Why use `cache_logger_on_first_use`?", ["`cache_logger_on_first_use`"]),
        # the Wikipedia sets' shapes: initials, abbreviations, CamelCase names, versions
        ("Which U.S. state did McFly's director come from?", []),
        ("Is a dog, e.g. a terrier, a mammal?", []),
        ("Who founded FleetBoston in the 1990s?", []),
        ("When was the 802.11a standard or Python 3.11 released?", []),
    ],
)
def test_code_shaped_names_are_identifiers_and_wikipedia_names_are_not(question, names):
    from hopgraph.tools.gnn_ret.identifiers import identifiers, names_identifiers

    assert identifiers(question) == names
    assert names_identifiers(question) == bool(names)


def test_rrf_of_hits_keeps_the_first_lists_hit_and_adds_its_fused_place():
    from hopgraph.tools.shared.fusion import fuse_hits
    from hopgraph.tools.shared.hits import Hit, Provenance

    def hits(method, ids):
        return [
            Hit(i, 1.0, "", "", i.split("#")[0], (Provenance(method, "own", r, 1.0),))
            for r, i in enumerate(ids, start=1)
        ]

    graph, keyword = hits("g", ["a#0", "b#0", "c#0"]), hits("h", ["c#0", "d#0", "a#0"])
    fused = fuse_hits([graph, keyword], "gnn_ret", "fused", k=3, rrf_k=0)
    # a: 1/1 + 1/3, c: 1/3 + 1/1 (tie, a first seen first), b: 1/2, d: 1/2
    assert [h.id for h in fused] == ["a#0", "c#0", "b#0"]
    assert fused[0].score == pytest.approx(4 / 3)
    assert [p.method for p in fused[1].provenance] == ["g", "gnn_ret"]  # the graph's hit of c
    assert fused[1].provenance[-1] == Provenance("gnn_ret", "fused", 2, pytest.approx(4 / 3))


def test_a_question_that_names_code_fuses_the_graph_ranking_with_hybrids(docs_index):
    from hopgraph.tools.baselines.retrievers import HybridRetriever
    from hopgraph.tools.gnn_ret import retriever as gnn_ret
    from hopgraph.tools.shared.fusion import fuse_hits

    retriever = gnn_ret.GNNRetriever(docs_index)
    plain = gnn_ret.GNNRetriever(docs_index, identifiers=False)
    words = "Where was Larry Alcala educated?"
    assert retriever.retrieve(words, 4) == plain.retrieve(words, 4)  # names no code
    code = "Where was larry_alcala educated?"
    depth = gnn_ret.FUSE_DEPTH
    lists = [plain.retrieve(code, depth), HybridRetriever(docs_index).retrieve(code, depth)]
    fused = retriever.retrieve(code, 4)
    assert fused == fuse_hits(lists, "gnn_ret", gnn_ret.FUSED, 4)
    assert all(h.provenance[-1].step == gnn_ret.FUSED for h in fused)
    assert plain.retrieve(code, 4) != fused  # the fusion changed the ranking here
    with pytest.raises(ValueError, match="identifiers"):
        gnn_ret.GNNRetriever(docs_index, identifiers="yes")
