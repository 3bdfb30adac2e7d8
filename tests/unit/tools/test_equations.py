"""The specs' numbered equations, each on an example small enough to work out by hand.

Test names say spec and equation (``test_<spec>_eq<N>_…``); docs/methods.md points here. The
arithmetic is written out in each test so a reader can check it without running anything.
"""

import math

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from hopgraph.agents.tog2.search import entity_scores
from hopgraph.tools import make_retriever
from hopgraph.tools.gear.retriever import diverse_beam_search, flatten_to_chunks, read_triples
from hopgraph.tools.gnn_ret.channels import recurrent_merge
from hopgraph.tools.gnn_ret.layers import gnn_layer
from hopgraph.tools.gnn_ret.training import Sample, hinge_loss
from hopgraph.tools.grag.graph import edge_weights
from hopgraph.tools.grag.training import cross_entropy_loss, pairwise_loss
from hopgraph.tools.shared.fusion import reciprocal_rank_fusion


def undirected(n, edges):
    rows, cols = zip(*edges, strict=True)
    m = sp.csr_matrix((np.ones(len(edges)), (rows, cols)), shape=(n, n))
    return ((m + m.T) > 0).astype(np.float32).tocsr()


# ---- GNN-Ret / RGNN-Ret (spec gnn_ret) -------------------------------------------------------


def _quiet_step(h0):
    """A training step with no messages (h = h⁰); rows: one gold, one rival."""
    return Sample(
        h0=torch.tensor(h0, dtype=torch.float64),
        messages=torch.full((1, 2), math.inf, dtype=torch.float64),
        gold=torch.tensor([True, False]),
        rival=torch.tensor([False, True]),
    )


def test_gnn_ret_eq1_distance_is_one_minus_cosine(docs_index):
    from hopgraph.tools import make_retriever

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

    from hopgraph.agents.tog2.graph import _with_triple_sentence

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
    from hopgraph.tools.gnn_ret.training import RecurrentSample, recurrent_loss

    sample = RecurrentSample((_quiet_step([0.4, 0.5]), _quiet_step([0.2, 0.9])))
    params = torch.tensor([0.5, 0.5], dtype=torch.float64)  # α, then β
    assert recurrent_loss([sample], params, 0.5, False).item() == pytest.approx(0.25)


def test_grag_eq7_own_vector_plus_the_weighted_mean_of_the_neighbours():
    # x = [[1], [2], [4]]; weights 0-1: 1, 0-2: 3 → node 0's neighbour mean = (1·2 + 3·4)/4 = 3.5
    # W_s = 2, W_n = 10, bias 0.5: x₀' = 2·1 + 10·3.5 + 0.5 = 37.5; node 1 hears only 0: 2·2 +
    # 10·1 + 0.5 = 14.5; node 2 hears only 0: 2·4 + 10·1 + 0.5 = 18.5
    from hopgraph.tools.grag.model import GraphLayer, neighbour_mean

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
    from hopgraph.tools.grag.graph import DocumentGraph, GRAGSettings
    from hopgraph.tools.grag.model import GRAGNet, score_graph

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
    from hopgraph.tools import make_retriever
    from tests.fakes import ScriptedChatModel

    # a proximal triple written exactly as a stored one links to it: cosine 1 is the maximum
    stored = docs_index.knowledge_graph.triples[0]
    reply = f'("{stored.subject}", "{stored.predicate}", "{stored.object}")'
    sync = make_retriever("sync_ge", docs_index, chat=ScriptedChatModel(respond=lambda p: reply))
    linked = sync.initial_triples("q", [])
    assert linked == [int(np.argmax(sync.vectors @ sync.vectors[0]))]
    assert docs_index.knowledge_graph.triples[linked[0]].text == stored.text


def test_gear_eq6_reason_reads_the_verdict_and_why():
    from hopgraph.agents.gear.state import parse_reason

    assert parse_reason("Answerable: No\nWhy: the founding year is missing") == (
        False,
        "the founding year is missing",
    )
    assert parse_reason("Answerable: Yes\nAnswer: 1908") == (True, "")


def test_gear_eq7_rewrite_reads_the_next_question():
    from hopgraph.agents.gear.state import parse_next_question

    reply = "Thoughts…\nNext Question: When was UP founded?\n(extra)"
    assert parse_next_question(reply) == "When was UP founded?"


def test_tog2_eq7_reasoning_answers_or_gives_clues():
    from hopgraph.agents.tog2.state import parse_reason

    assert parse_reason("{Yes}. The answer is {1936}.") == (True, "1936")
    assert parse_reason("{No}. Clues: {Larry Alcala studied at Santo Tomas}") == (
        False,
        "Larry Alcala studied at Santo Tomas",
    )


# ---- equations the earlier tests left out ------------------------------------------------------


def test_gnn_ret_eq2_message_then_update_over_every_layer():
    # Eq. 2 is the generic form h^l = f_h(f_m(neighbours of h^{l−1}), h^{l−1}); with L = 2 the
    # second layer starts from the first's output. Path 0-1-2, h⁰ = [0.1, 0.6, 0.9], K = 1, α = 0.5.
    # layer 1: T = {0}; node 1 hears 0.1 → 0.5·0.6 + 0.5·0.1 = 0.35; node 2 hears nothing.
    # layer 2: T = {0} again (0.1 is smallest); node 1 → 0.5·0.35 + 0.5·0.1 = 0.225;
    # node 2 still hears nothing: K = 1 keeps node 1 out of T.
    adjacency = undirected(3, [(0, 1), (1, 2)])
    first = gnn_layer(np.array([0.1, 0.6, 0.9]), adjacency, alpha=0.5, top_k=1)
    np.testing.assert_allclose(first.h, [0.1, 0.35, 0.9])
    second = gnn_layer(first.h, adjacency, alpha=0.5, top_k=1)
    np.testing.assert_allclose(second.h, [0.1, 0.225, 0.9])
    # K = 2 in layer 2: T = {0, 1 (0.35)}; node 2 hears 0.35 → 0.5·0.9 + 0.5·0.35 = 0.625
    np.testing.assert_allclose(gnn_layer(first.h, adjacency, 0.5, top_k=2).h[2], 0.625)


def test_rgnn_ret_eq14_17_gradient_of_the_step_hinges_in_beta():
    # Two steps, no messages, one gold row and one rival; r = 1 keeps both hinges active.
    # ĥ¹ = h¹ (the first step has no recurrence); ĥ² = β h² + (1 − β) ĥ¹, so ∂ĥ²/∂β = h² − ĥ¹.
    # l = (l¹ + l²)/2 and l¹ does not depend on β:
    # ∂l/∂β = ½ [(h²_gold − h¹_gold) − (h²_rival − h¹_rival)] = ½ [(0.2 − 0.4) − (0.9 − 0.5)] = −0.3
    from hopgraph.tools.gnn_ret.training import RecurrentSample, recurrent_loss

    sample = RecurrentSample((_quiet_step([0.4, 0.5]), _quiet_step([0.2, 0.9])))
    params = torch.tensor([0.5, 0.7], dtype=torch.float64, requires_grad=True)  # α, β
    recurrent_loss([sample], params, 1.0, False).backward()
    assert params.grad[1].item() == pytest.approx(-0.3)
    assert params.grad[0].item() == pytest.approx(0.0)  # no message: α does nothing


def _gear_runtime(chat, **context):
    from types import SimpleNamespace

    return SimpleNamespace(context=SimpleNamespace(chat=chat, **context))


def test_gear_eq4_read_with_memory_is_asked_for_the_original_question():
    # Eq. 4: T_G = read(C_n, q, G^(n−1)): the prompt carries the ORIGINAL question (not the
    # round's query q^(n)), the passages, and the memory rendered as ("s", "p", "o").
    from hopgraph.agents.gear.graph import read
    from tests.fakes import ScriptedChatModel

    chat = ScriptedChatModel(respond=lambda p: '("UP", "founded in", "1908")')
    state = {
        "question": "When was Larry Alcala's school founded?",
        "query": "When was UP founded?",
        "evidence": [{"id": "p1", "title": "UP", "text": "UP was founded in 1908.", "score": 1.0}],
        "memory": [["Larry Alcala", "educated at", "UP"]],
    }
    read(state, _gear_runtime(chat))
    prompt = chat.calls[0]
    assert "Question: When was Larry Alcala's school founded?" in prompt
    assert "When was UP founded?" not in prompt
    assert 'Facts: ("Larry Alcala", "educated at", "UP")' in prompt
    assert "UP was founded in 1908." in prompt


def test_gear_eq5_memory_grows_by_concatenation():
    # Eq. 5: G^(n) = G^(n−1) ∘ T_G. The node returns T_G, which the state's reducer appends
    # (operator.add); a fact already in G is not appended twice (docs/methods.md).
    from hopgraph.agents.gear.graph import read
    from hopgraph.agents.gear.state import State
    from tests.fakes import ScriptedChatModel

    reply = '("Larry Alcala", "educated at", "UP"), ("UP", "founded in", "1908")'
    state = {
        "question": "q",
        "evidence": [{"id": "p1", "title": "UP", "text": "t", "score": 1.0}],
        "memory": [["Larry Alcala", "educated at", "UP"]],
    }
    update = read(state, _gear_runtime(ScriptedChatModel(respond=lambda p: reply)))
    assert update["memory"] == [["UP", "founded in", "1908"]]
    from typing import get_type_hints

    reducer = get_type_hints(State, include_extras=True)["memory"].__metadata__[0]
    assert reducer(state["memory"], update["memory"]) == [
        ["Larry Alcala", "educated at", "UP"],
        ["UP", "founded in", "1908"],
    ]


def test_gear_eq8_10_passage_link_fuses_passages_and_triples_sources(monkeypatch):
    # passageLink(t, k) = RRF(h_base^k(t, C), h_base^k(t, T) → source passages).
    # base on passages: [p1, p2]; triple vectors against the fact (1, 0): t0 0.2 → p3,
    # t1 0.9 → p2, t2 0.5 → p2 ⇒ nearest triples t1, t2, t0 ⇒ passages [p2, p3]
    # (p2 keeps its best triple's rank). RRF, k = 60: p2 = 1/62 + 1/61, p1 = 1/61, p3 = 1/62.
    from types import SimpleNamespace

    import hopgraph.agents.gear.graph as gear_graph

    hits = [SimpleNamespace(id="p1"), SimpleNamespace(id="p2")]
    sync = SimpleNamespace(
        base=SimpleNamespace(retrieve=lambda query, k: hits[:k]),
        vectors=np.array([[0.2, 0.98], [0.9, 0.44], [0.5, 0.87]]),
        chunk_of=["p3", "p2", "p2"],
    )
    monkeypatch.setattr(gear_graph, "_sync_ge", lambda ctx: sync)
    ctx = SimpleNamespace(
        retrieve_k=3,
        rrf_k=60,
        index=SimpleNamespace(embed_query=lambda text: np.array([1.0, 0.0])),
    )
    assert gear_graph.passage_link(ctx, "UP founded in 1908") == ["p2", "p1", "p3"]


def _tiny_knowledge_graph():
    from hopgraph.graph_store.graphs.extraction import Extraction, Triple
    from hopgraph.graph_store.graphs.extraction.table import ExtractionTable
    from hopgraph.graph_store.graphs.knowledge_graph import build_knowledge_graph

    extractions = [
        Extraction(
            chunk_id="c1",
            entities=("larry alcala", "up"),
            keywords=(),
            triples=(
                Triple("larry alcala", "educated at", "up"),
                Triple("larry alcala", "born in", "manila"),
            ),
        ),
        Extraction(
            chunk_id="c2",
            entities=("up", "diliman"),
            keywords=(),
            triples=(
                Triple("up", "located in", "diliman"),
                Triple("ateneo", "educated at", "up"),
                Triple("maria", "educated at", "up"),
            ),
        ),
    ]
    return build_knowledge_graph(["c1", "c2"], ExtractionTable.from_extractions(extractions))


def test_tog2_eq1_edge_lists_the_relations_and_their_direction():
    # Edge(up) = {(educated at, reverse) ×3, (located in, out) ×1}: the most frequent first;
    # "up" is the object of "educated at" (h = False) and the subject of "located in".
    from hopgraph.agents.tog2.search import Relation, edges

    kg = _tiny_knowledge_graph()
    assert edges(kg, "up") == [Relation("educated at", False), Relation("located in", True)]
    assert edges(kg, "larry alcala") == [
        Relation("educated at", True),
        Relation("born in", True),
    ]


def test_tog2_eq4_tail_follows_a_relation_in_its_direction():
    # Tail(up, (educated at, reverse)) = the subjects of "… educated at up", in order found;
    # Tail(up, (educated at, out)) = ∅: "up" is never the subject of "educated at".
    from hopgraph.agents.tog2.search import Relation, tails

    kg = _tiny_knowledge_graph()
    assert tails(kg, "up", Relation("educated at", False)) == ["larry alcala", "ateneo", "maria"]
    assert tails(kg, "up", Relation("educated at", True)) == []
    assert tails(kg, "up", Relation("located in", True)) == ["diliman"]


def test_tog2_eq3_combined_relation_prune_reads_each_entity_section():
    # Eq. 3: one call for every topic entity; the reply's "Entity i:" sections give (i − 1,
    # relation, score). Relations not offered for that entity are dropped.
    from hopgraph.agents.tog2.state import parse_relations

    reply = (
        "Entity 1: up\n1. {located in (Score: 8)}: where it is.\n"
        "2. {founded (Score: 3)}: not offered.\n"
        "Entity 2: larry alcala\n1. {educated at (Score: 9)}: his school.\n"
    )
    offered = [["located in", "educated at (reverse)"], ["educated at", "born in"]]
    assert parse_relations(reply, offered) == [
        (0, "located in", 8.0),
        (1, "educated at", 9.0),
    ]


def test_tog2_eq2_per_entity_prune_is_eq3_with_one_entity():
    # Eq. 2 (PROMPT_RP for one entity) is the combined prompt of Eq. 3 with a single
    # "Entity 1" section; hopgraph runs Eq. 3 as the paper's main experiments do.
    from hopgraph.agents.tog2.state import parse_relations

    reply = "Entity 1: up\n1. {located in (Score: 6)}\n2. {educated at (reverse) (Score: 2)}"
    assert parse_relations(reply, [["located in", "educated at (reverse)"]]) == [
        (0, "located in", 6.0),
        (0, "educated at (reverse)", 2.0),
    ]


def test_grag_eq1_2_node_features_are_the_passage_and_its_concept_path(docs_index):
    # Eq. 1: x̃_i = Encode(p_i); Eq. 2: x_i = Encode(p_i ⊕ a_i). Here x_i = [Encode(p_i) ;
    # Encode(a_i)] (docs/methods.md): the first half is the passage vector the index holds,
    # the second the encoded path string a_i ("encoded"), or by default the unit sum of its
    # concepts' vectors ("concepts": Encode("question") and each concept on the path).
    from hopgraph.tools.grag.graph import GRAGSettings, GraphBuilder

    question = "Which city is the seat of Mountrail County?"
    hybrid = make_retriever("hybrid", docs_index)
    d = docs_index.embedding_matrix.shape[1]
    embed = docs_index.embedder.embed
    encoded = GraphBuilder(docs_index, GRAGSettings(n=3, concept_paths="encoded"), hybrid)
    graph = encoded.build(question)
    np.testing.assert_allclose(graph.features[:, :d], docs_index.embedding_matrix[graph.rows])
    np.testing.assert_allclose(graph.features[:, d:], embed(list(graph.paths)), atol=1e-6)
    assert all(path.startswith("question") for path in graph.paths)
    summed = GraphBuilder(docs_index, GRAGSettings(n=3), hybrid).build(question)
    np.testing.assert_array_equal(summed.rows, graph.rows)
    wanted = encoded.question_concepts(question)
    for row, got in zip(summed.rows, summed.features[:, d:], strict=True):
        total = embed(["question", *encoded.concepts.path(int(row), wanted)]).sum(axis=0)
        np.testing.assert_allclose(got, total / np.linalg.norm(total), atol=1e-6)


def test_grag_eq2_concept_path_string_is_a_bfs_from_the_question():
    # a_i: from the question's concepts held by chunk i, follow the chunk's (subject → object)
    # relations breadth-first, each concept once: question, larry alcala, up, manila, diliman.
    from hopgraph.graph_store.graphs.extraction import Extraction, Triple
    from hopgraph.tools.grag.graph import ConceptIndex

    concepts = ConceptIndex(
        [
            Extraction(
                chunk_id="c1",
                entities=("larry alcala", "up", "manila", "diliman"),
                keywords=(),
                triples=(
                    Triple("larry alcala", "educated at", "up"),
                    Triple("larry alcala", "born in", "manila"),
                    Triple("up", "located in", "diliman"),
                    Triple("diliman", "part of", "larry alcala"),
                ),
            )
        ]
    )
    path = concepts.path_string(0, ["larry alcala", "not held"])
    assert path == "question larry alcala up manila diliman"
    assert concepts.path_string(0, ["nothing"]) == "question"


def test_grag_eq6_raw_edges_count_shared_concepts_and_relations():
    # Ê_ij1 = |C_i ∩ C_j|, Ê_ij2 = |T_i ∩ T_j|, zero diagonal, and zero where no concept is shared.
    # c1 {a, b, c}, rel (a, b); c2 {a, b}, rel (a, b); c3 {d}, rel (a, b) (a relation without
    # a shared concept makes no edge). Ê_12 = (2, 1); Ê_13 = Ê_23 = (0, 0).
    from hopgraph.graph_store.graphs.extraction import Extraction, Triple
    from hopgraph.tools.grag.graph import ConceptIndex

    def chunk(chunk_id, entities):
        return Extraction(chunk_id, tuple(entities), (), (Triple("a", "r", "b"),))

    concepts = ConceptIndex([chunk("c1", "abc"), chunk("c2", "ab"), chunk("c3", "d")])
    counts = concepts.counts(np.array([0, 1, 2]))
    # c3's relation (a, b) adds a and b to nothing: concepts are entities and keywords only
    np.testing.assert_array_equal(counts[0, 1], [2, 1])
    np.testing.assert_array_equal(counts[1, 0], [2, 1])
    np.testing.assert_array_equal(counts[0, 2], [0, 0])
    np.testing.assert_array_equal(counts[:, :, 0].diagonal(), [0, 0, 0])


def test_grag_eq9_edges_stay_fixed_through_the_layers():
    # Eq. 9 updates edge features, with no parameterisation given (spec §6.2 default: static).
    # A layer returns node vectors only; the next layer gets the same edge weights. Own and
    # neighbour weights 1, no bias, edge 0-1 weight 1: x = [1, 3] → [1 + 3, 3 + 1] → [8, 8].
    from hopgraph.tools.grag.model import GraphLayer, neighbour_mean

    layer = GraphLayer(1, 1)
    with torch.no_grad():
        layer.own.weight.fill_(1.0)
        layer.own.bias.zero_()
        layer.neighbours.weight.fill_(1.0)
    weights = torch.tensor([[0.0, 1.0], [1.0, 0.0]])
    mean = neighbour_mean(weights)
    x = torch.tensor([[1.0], [3.0]])
    once = layer(x, mean)  # [1 + 3, 3 + 1] = [4, 4]
    twice = layer(once, mean)  # [4 + 4, 4 + 4]
    assert once.squeeze(-1).tolist() == [4.0, 4.0]
    assert twice.squeeze(-1).tolist() == [8.0, 8.0]


def test_grag_eq10_query_is_encoded_by_the_node_encoder(docs_index):
    # y = Encode(q) with the same encoder as the nodes: the graph's query vector is the index's
    # own query embedding.
    from hopgraph.tools.grag.graph import GRAGSettings, GraphBuilder

    question = "Which city is the seat of Mountrail County?"
    base = make_retriever("hybrid", docs_index)
    graph = GraphBuilder(docs_index, GRAGSettings(n=3), base).build(question)
    np.testing.assert_allclose(graph.query, docs_index.embed_query(question), rtol=1e-6)


def test_grag_eq14_mean_tied_reciprocal_rank():
    # scores: a 0.9, b 0.5, c 0.5, d 0.1; positives {b, d}. b: r = 2, t = 2 → 2/(4 + 1) = 0.4;
    # d: r = 4, t = 1 → 1/4. MTRR = (0.4 + 0.25)/2 = 0.325. Without ties it is the MRR.
    from hopgraph.evals.rerank_metrics import mrr_all, mtrr

    scores = {"a": 0.9, "b": 0.5, "c": 0.5, "d": 0.1}
    assert mtrr(scores, {"b", "d"}) == pytest.approx(0.325)
    untied = {"a": 0.9, "b": 0.5, "c": 0.4, "d": 0.1}
    assert mtrr(untied, {"b", "d"}) == pytest.approx(mrr_all(["a", "b", "c", "d"], {"b", "d"}))


def test_grag_eq15_21_tied_mean_hits_at_10():
    # 12 items: the first 9 distinct, then 3 tied at rank 10 (t = 3): one place of three inside
    # the top 10 → 1/3; a positive at rank 3 → 1. TMHits@10 over {rank 3, tied} = (1 + 1/3)/2.
    from hopgraph.evals.rerank_metrics import tmhits

    scores = {f"x{i}": 1.0 - i / 100 for i in range(9)} | {"t1": 0.5, "t2": 0.5, "t3": 0.5}
    assert tmhits(scores, {"x2", "t1"}) == pytest.approx((1 + 1 / 3) / 2)


def _iier_step():
    """q = (1, 0), path (0, 1); n₁ = (0.6, 0.8) over edge r₁ = (1, 0, 0, 0), n₂ = (0.8, 0.6)."""
    from hopgraph.tools.iier.steps import Step

    return Step(
        question=np.array([1.0, 0.0], dtype=np.float32),
        path=np.array([0.0, 1.0], dtype=np.float32),
        candidates=np.array([[0.6, 0.8], [0.8, 0.6]], dtype=np.float32),
        edges=np.array([[1, 0, 0, 0], [0, 0, 0, 0]], dtype=np.float32),
    )


def test_iier_eq1_3_scorer_concatenates_question_path_candidate_and_edge_features():
    # Eqs. 1–3: s(n) = f_s([h_q ; h_p ; h_n ; … ; f_r(r)]) + skip. With f_s's output zeroed (its
    # initial state) s(n) is the untrained scorer: cos(q, n) + w · mean(r). q = (1, 0);
    # n₁ = (0.6, 0.8), r₁ = (1, 0, 0, 0) → 0.6 + 0.1·0.25 = 0.625;
    # n₂ = (0.8, 0.6), r₂ = 0 → 0.8. Torch and numpy paths agree.
    from hopgraph.tools.iier.scorer import ScorerSettings, new_scorer

    scorer = new_scorer(2, ScorerSettings(hidden=4, edge_hidden=3), seed=0)
    step = _iier_step()
    scorer.eval()
    assert scorer(step).tolist() == pytest.approx([0.625, 0.8], abs=1e-6)
    assert scorer.rank(step).tolist() == pytest.approx([0.625, 0.8], abs=1e-6)


def test_iier_eq4_next_chunk_is_the_argmax_of_the_scores():
    # n* = argmax s(n): with the output layer's bias set to 0 and one weight on the h_p ⊙ h_n
    # block, a candidate that matches the path can outrank one that matches the question.
    # f_s = w·relu(W₁ x): W₁ picks (h_p ⊙ h_n)₂ (index 2·5 − 1 = 9 of the 5·2 + 3 inputs),
    # w = 2: n₁ = (0.6, 0.8) → 0.625 + 2·0.8 = 2.225; n₂ = (0.8, 0.6) → 0.8 + 2·0.6 = 2.0.
    from hopgraph.tools.iier.scorer import ScorerSettings, new_scorer

    scorer = new_scorer(2, ScorerSettings(hidden=1, edge_hidden=3), seed=0)
    with torch.no_grad():
        first, last = scorer.score[1], scorer.score[4]
        first.weight.zero_()
        first.bias.zero_()
        first.weight[0, 9] = 1.0
        last.weight.fill_(2.0)
    step = _iier_step()
    scores = scorer.rank(step)
    assert scores.tolist() == pytest.approx([2.225, 2.0], abs=1e-6)
    assert int(np.argmax(scores)) == 0
