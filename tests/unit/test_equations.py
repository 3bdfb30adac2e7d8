"""The specs' numbered equations, each on an example small enough to work out by hand.

Test names say spec and equation (``test_<spec>_eq<N>_…``); docs/methods.md points here. The
arithmetic is written out in each test so a reader can check it without running anything.
"""

import math

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from agents.tog2.search import entity_scores
from tools.fusion import reciprocal_rank_fusion
from tools.gear_ge import diverse_beam_search, flatten_to_chunks, read_triples
from tools.gnn_ret import gnn_layer, recurrent_merge
from tools.gnn_ret_training import Sample, hinge_loss
from tools.grag import edge_weights
from tools.grag_training import cross_entropy_loss, pairwise_loss


def undirected(n, edges):
    rows, cols = zip(*edges, strict=True)
    m = sp.csr_matrix((np.ones(len(edges)), (rows, cols)), shape=(n, n))
    return ((m + m.T) > 0).astype(np.float32).tocsr()


# ---- GNN-Ret / RGNN-Ret (spec gnn_ret) -------------------------------------------------------


def test_gnn_ret_eq1_distance_is_one_minus_cosine(docs_index):
    from tools import make_retriever

    gnn = make_retriever("gnn_ret", docs_index, preset="paper")  # h⁰ from the dense base
    query = "Mountrail County seat"
    cosine = docs_index.similarities(docs_index.embed_query(query))
    np.testing.assert_allclose(gnn.distances(query), 1.0 - cosine, rtol=1e-6)


def test_gnn_ret_eq3_min_message_from_the_top_k_only():
    # h = [0.2, 0.5, 0.9, 0.4]; edges 0-1, 0-2, 1-2, 2-3; K = 2 → T_K = {0 (0.2), 3 (0.4)}.
    # node 1 hears only 0: m = 0.2; node 2 hears 0 and 3: m = min(0.2, 0.4) = 0.2;
    # nodes 0 and 3 have no neighbour in T_K and hear nothing. α = 0 makes h¹ = m.
    h = np.array([0.2, 0.5, 0.9, 0.4])
    layer = gnn_layer(h, undirected(4, [(0, 1), (0, 2), (1, 2), (2, 3)]), alpha=0.0, top_k=2)
    np.testing.assert_allclose(layer.h, [0.2, 0.2, 0.2, 0.4])
    assert layer.sender.tolist() == [-1, 0, 0, -1]


def test_gnn_ret_eq4_blend_with_alpha():
    # α = 0.25: node 1 → 0.25·0.5 + 0.75·0.2 = 0.275; node 2 → 0.25·0.9 + 0.75·0.2 = 0.375
    h = np.array([0.2, 0.5, 0.9, 0.4])
    layer = gnn_layer(h, undirected(4, [(0, 1), (0, 2), (1, 2), (2, 3)]), alpha=0.25, top_k=2)
    np.testing.assert_allclose(layer.h, [0.2, 0.275, 0.375, 0.4])


def test_gnn_ret_eq5_hinge_loss():
    # no message anywhere, so h¹ = h⁰: loss = max(0, r + mean gold h − mean rival h)
    # = max(0, 0.5 + 0.3 − 0.6) = 0.2; with r = 0.2 it is max(0, −0.1) = 0
    sample = Sample(
        h0=torch.tensor([0.3, 0.6], dtype=torch.float64),
        messages=torch.full((1, 2), math.inf, dtype=torch.float64),
        gold=torch.tensor([True, False]),
        rival=torch.tensor([False, True]),
    )
    alphas = torch.tensor([0.5], dtype=torch.float64)
    assert hinge_loss([sample], alphas, 0.5, False).item() == pytest.approx(0.2)
    assert hinge_loss([sample], alphas, 0.2, False).item() == pytest.approx(0.0)


def test_gnn_ret_eq10_11_gradient_of_the_hinge_in_alpha():
    # gold row: h⁰ 0.3, message 0.1; rival row: h⁰ 0.6, message 0.2. h¹ = α h⁰ + (1 − α) m,
    # so ∂h¹/∂α = h⁰ − m, and while the hinge is active ∂l/∂α = (0.3 − 0.1) − (0.6 − 0.2) = −0.2
    sample = Sample(
        h0=torch.tensor([0.3, 0.6], dtype=torch.float64),
        messages=torch.tensor([[0.1, 0.2]], dtype=torch.float64),
        gold=torch.tensor([True, False]),
        rival=torch.tensor([False, True]),
    )
    alphas = torch.tensor([0.5], dtype=torch.float64, requires_grad=True)
    hinge_loss([sample], alphas, 1.0, False).backward()
    assert alphas.grad.item() == pytest.approx(-0.2)


def test_rgnn_ret_eq6_recurrent_merge():
    # β = 0.9: 0.9·[0.2, 0.8] + 0.1·[0.6, 0.4] = [0.24, 0.76]; β = 1 forgets the earlier steps
    h, previous = np.array([0.2, 0.8]), np.array([0.6, 0.4])
    np.testing.assert_allclose(recurrent_merge(h, previous, 0.9), [0.24, 0.76])
    np.testing.assert_allclose(recurrent_merge(h, previous, 1.0), h)


# ---- GEAR (spec gear) ------------------------------------------------------------------------


def test_gear_eq1_read_parses_proximal_triples():
    reply = 'Facts: ("Larry Alcala", "educated at", "UP") and ("UP", "founded", "1908").'
    assert read_triples(reply) == [
        ("Larry Alcala", "educated at", "UP"),
        ("UP", "founded", "1908"),
    ]


def test_gear_eq3_rrf_fusion():
    # a: 1/61; b: 1/62 + 1/61; c: 1/62 (k = 60, ranks from 1)
    fused = dict(reciprocal_rank_fusion([["a", "b"], ["b", "c"]], k=60))
    assert fused == pytest.approx({"a": 1 / 61, "b": 1 / 62 + 1 / 61, "c": 1 / 62})
    assert list(fused) == ["b", "a", "c"]


def test_gear_algorithm1_diverse_beam_search_penalises_later_children():
    # q = (1, 0); t0 = (1, 0), t1 = (0, 1), t2 = (1, 1)/√2; start [t0] scores cos = 1.
    # [t0, t2]: sum (1.7071, 0.7071), cos = 0.9239 → (1 + 0.9239)·e^0 = 1.9239
    # [t0, t1]: sum (1, 1), cos = 0.7071 → second child: (1 + 0.7071)·e^(−1/γ), γ = 2b = 4
    #           = 1.70711 · 0.77880 = 1.32950
    vectors = np.array([[1.0, 0.0], [0.0, 1.0], [1 / math.sqrt(2), 1 / math.sqrt(2)]])
    beams = diverse_beam_search(
        np.array([1.0, 0.0]), [0], vectors, lambda row: np.array([1, 2]), beam_width=2
    )
    assert [chain for _, chain in beams] == [[0, 2], [0, 1]]
    assert [score for score, _ in beams] == pytest.approx([1.92388, 1.32950], abs=1e-5)


def test_gear_step5_beams_flatten_breadth_first_to_their_chunks():
    chunk_of = ["c1", "c2", "c1", "c3"]
    beams = [(2.0, [0, 1]), (1.5, [2, 3])]
    # first positions: triple 0 → c1, triple 2 → c1 (seen); then triple 1 → c2, triple 3 → c3
    assert flatten_to_chunks(beams, chunk_of) == [("c1", 0), ("c2", 1), ("c3", 3)]


def test_gear_eq9_final_fusion_of_links_and_rounds():
    # Eq. 9: RRF over every passageLink list and every round's list, all weight 1
    linked, rounds = [["p2", "p1"]], [["p1", "p3"]]
    fused = dict(reciprocal_rank_fusion([*linked, *rounds], k=60))
    assert fused["p1"] == pytest.approx(1 / 62 + 1 / 61)
    assert fused["p2"] == pytest.approx(1 / 61) and fused["p3"] == pytest.approx(1 / 62)


# ---- ToG-2 (spec tog2) -----------------------------------------------------------------------


def test_tog2_eq6_entity_score_by_rank_decay():
    # α = 0.8: A = 0.9·e^(−0.8) + 0.5·e^(−2.4) = 0.40439 + 0.04536 = 0.44975; B = 0.8·e^(−1.6)
    scores = entity_scores([(0.9, "A"), (0.8, "B"), (0.5, "A")], alpha=0.8)
    assert scores["A"] == pytest.approx(0.9 * math.exp(-0.8) + 0.5 * math.exp(-2.4))
    assert scores["A"] == pytest.approx(0.44975, abs=1e-5)
    assert scores["B"] == pytest.approx(0.16152, abs=1e-5)


# ---- G-RAG (spec g_rag) ----------------------------------------------------------------------


def test_grag_eq8_edge_weight_sums_the_scaled_channels():
    # counts (concepts, relations): pair 0-1 = (2, 1), pair 0-2 = (1, 0), pair 1-2 = (0, 0)
    # peaks 2 and 1: w01 = 2/2 + 1/1 = 2, w02 = 1/2 + 0 = 0.5, w12 = 0
    counts = np.zeros((3, 3, 2), dtype=np.float32)
    counts[0, 1] = counts[1, 0] = [2, 1]
    counts[0, 2] = counts[2, 0] = [1, 0]
    np.testing.assert_allclose(edge_weights(counts), [[0, 2, 0.5], [2, 0, 0], [0.5, 0, 0]])


def test_grag_eq12_cross_entropy_over_the_positives():
    # −log softmax([1, 0.5, 1.5])₀ = logsumexp − 1 = log(8.84869) − 1 = 1.18027
    loss = cross_entropy_loss(torch.tensor([1.0, 0.5, 1.5]), torch.tensor([1.0, 0.0, 0.0]))
    assert loss.item() == pytest.approx(1.18027, abs=1e-5)


def test_grag_eq13_pairwise_hinge():
    # pairs (pos 1.0, neg 0.5) → 1 − 0.5 = 0.5; (pos 1.0, neg 1.5) → 1 + 0.5 = 1.5; mean 1.0
    loss = pairwise_loss(torch.tensor([1.0, 0.5, 1.5]), torch.tensor([1.0, 0.0, 0.0]))
    assert loss.item() == pytest.approx(1.0)


def test_tog2_eq5_chunk_scored_with_the_triple_that_reached_it(docs_index):
    from types import SimpleNamespace

    from agents.tog2.graph import _with_triple_sentence

    ctx = SimpleNamespace(index=docs_index)
    candidate = {"entity": "stanley", "parent": "mountrail county", "relation": "seat",
                 "outgoing": True}  # fmt: skip
    chunk = docs_index.chunk("d6")
    # s = DRM(q, [triple sentence : chunk]): here cos(E(q), E("mountrail county seat stanley: …")
    text = f"mountrail county seat stanley: {chunk.title}\n{chunk.text}"
    query = "Which city is the county seat?"
    expected = float(docs_index.embedder.embed([text])[0] @ docs_index.embed_query(query))
    assert _with_triple_sentence(ctx, query, candidate, ["d6"]) == pytest.approx([expected])
    reverse = {**candidate, "outgoing": False}  # the sentence follows the edge's direction
    text = f"stanley seat mountrail county: {chunk.title}\n{chunk.text}"
    expected = float(docs_index.embedder.embed([text])[0] @ docs_index.embed_query(query))
    assert _with_triple_sentence(ctx, query, reverse, ["d6"]) == pytest.approx([expected])


def test_rgnn_ret_eq7_step_hinges_on_the_merged_distances_averaged():
    # two steps, no messages (h = h⁰), β = 0.5, r = 0.5; rows: gold, rival.
    # step 1: ĥ = [0.4, 0.5] → max(0, 0.5 + 0.4 − 0.5) = 0.4
    # step 2: h = [0.2, 0.9], ĥ = 0.5·[0.2, 0.9] + 0.5·[0.4, 0.5] = [0.3, 0.7] → max(0, 0.1) = 0.1
    # l = (0.4 + 0.1) / 2 = 0.25
    from tools.gnn_ret_training import RecurrentSample, recurrent_loss

    def step(h0):
        return Sample(
            h0=torch.tensor(h0, dtype=torch.float64),
            messages=torch.full((1, 2), math.inf, dtype=torch.float64),
            gold=torch.tensor([True, False]),
            rival=torch.tensor([False, True]),
        )

    sample = RecurrentSample((step([0.4, 0.5]), step([0.2, 0.9])))
    params = torch.tensor([0.5, 0.5], dtype=torch.float64)  # α, then β
    assert recurrent_loss([sample], params, 0.5, False).item() == pytest.approx(0.25)


def test_grag_eq7_own_vector_plus_the_weighted_mean_of_the_neighbours():
    # x = [[1], [2], [4]]; weights 0-1: 1, 0-2: 3 → node 0's neighbour mean = (1·2 + 3·4)/4 = 3.5
    # W_s = 2, W_n = 10, bias 0.5: x₀' = 2·1 + 10·3.5 + 0.5 = 37.5; node 1 hears only 0: 2·2 +
    # 10·1 + 0.5 = 14.5; node 2 hears only 0: 2·4 + 10·1 + 0.5 = 18.5
    from tools.grag_model import GraphLayer, neighbour_mean

    layer = GraphLayer(1, 1)
    with torch.no_grad():
        layer.own.weight.fill_(2.0)
        layer.own.bias.fill_(0.5)
        layer.neighbours.weight.fill_(10.0)
    weights = torch.tensor([[0.0, 1.0, 3.0], [1.0, 0.0, 0.0], [3.0, 0.0, 0.0]])
    x = torch.tensor([[1.0], [2.0], [4.0]])
    out = layer(x, neighbour_mean(weights)).squeeze(-1)
    assert out.tolist() == pytest.approx([37.5, 14.5, 18.5])


def test_grag_eq11_score_is_the_query_dotted_with_the_last_layer():
    # d = 1, hidden 1, no edges; first layer x·[1, 1] then ReLU, second ×2, y = Encode(q) = 3;
    # the relevance branch and the cosine / prior terms are switched off (zero weights).
    # node 0: x = [0.5, 0.25] → relu(0.75) · 2 · 3 = 4.5; node 1: x = [−1, 0.2] → relu(−0.8) = 0
    from tools.grag import DocumentGraph, GRAGSettings
    from tools.grag_model import GRAGNet, score_graph

    model = GRAGNet(1, GRAGSettings(hidden=1))
    with torch.no_grad():
        model.first.own.weight.copy_(torch.tensor([[1.0, 1.0]]))
        model.first.own.bias.zero_()
        model.second.own.weight.fill_(2.0)
        model.mix.zero_()
    graph = DocumentGraph(
        rows=np.array([0, 1]),
        features=np.array([[0.5, 0.25], [-1.0, 0.2]], dtype=np.float32),
        weights=np.zeros((2, 2), dtype=np.float32),
        cosine=np.zeros(2, dtype=np.float32),
        prior=np.zeros(2, dtype=np.float32),
        query=np.array([3.0], dtype=np.float32),
        relevance=np.zeros((2, 8), dtype=np.float32),
        paths=("question", "question"),
    )
    assert score_graph(model, graph).tolist() == pytest.approx([4.5, 0.0])


def test_gear_eq2_triple_link_takes_the_most_similar_stored_triple(docs_index):
    from tests.fakes import ScriptedChatModel
    from tools.gear_ge import SyncGERetriever

    # a proximal triple written exactly as a stored one links to it: cosine 1 is the maximum
    stored = docs_index.knowledge_graph.triples[0]
    reply = f'("{stored.subject}", "{stored.predicate}", "{stored.object}")'
    sync = SyncGERetriever(docs_index, chat=ScriptedChatModel(respond=lambda p: reply))
    linked = sync.initial_triples("q", [])
    assert linked == [int(np.argmax(sync.vectors @ sync.vectors[0]))]
    assert docs_index.knowledge_graph.triples[linked[0]].text == stored.text


def test_gear_eq6_reason_reads_the_verdict_and_why():
    from agents.gear.state import parse_reason

    assert parse_reason("Answerable: No\nWhy: the founding year is missing") == (
        False,
        "the founding year is missing",
    )
    assert parse_reason("Answerable: Yes\nAnswer: 1908") == (True, "")


def test_gear_eq7_rewrite_reads_the_next_question():
    from agents.gear.state import parse_next_question

    reply = "Thoughts…\nNext Question: When was UP founded?\n(extra)"
    assert parse_next_question(reply) == "When was UP founded?"


def test_tog2_eq7_reasoning_answers_or_gives_clues():
    from agents.tog2.state import parse_reason

    assert parse_reason("{Yes}. The answer is {1936}.") == (True, "1936")
    assert parse_reason("{No}. Clues: {Larry Alcala studied at Santo Tomas}") == (
        False,
        "Larry Alcala studied at Santo Tomas",
    )
