"""G-RAG (spec g_rag): concept graph, edge weights, the network, its losses and its training."""

from pathlib import Path

import numpy as np
import pytest
import torch

from hopgraph.cli import main
from hopgraph.core.errors import IndexStateError, InputError
from hopgraph.graph_store import Index
from hopgraph.graph_store.graphs.extraction import Extraction
from hopgraph.graph_store.graphs.extraction.base import Triple
from hopgraph.tools import make_retriever
from hopgraph.tools.grag.graph import ConceptIndex, GRAGSettings, best_neighbour, edge_weights
from hopgraph.tools.grag.model import TensorGraph, neighbour_mean, new_model
from hopgraph.tools.grag.training import cross_entropy_loss, pairwise_loss
from tests.conftest import train_twice


def extraction(chunk, entities, triples=()):
    return Extraction(chunk, tuple(entities), (), tuple(Triple(*t) for t in triples))


CONCEPTS = ConceptIndex(
    [
        extraction("a", ["larry alcala", "ust"], [("larry alcala", "educated at", "ust")]),
        extraction("b", ["ust", "manila"], [("larry alcala", "at", "ust"), ("ust", "in", "manila")]),  # noqa: E501
        extraction("c", ["stanley"]),
    ]
)  # fmt: skip


def test_shared_concepts_and_relations_make_the_edges():
    counts = CONCEPTS.counts(np.array([0, 1, 2]))
    assert counts[:, :, 0].tolist() == [[0, 1, 0], [1, 0, 0], [0, 0, 0]]  # "ust"
    # the (subject, object) pair is the relation: predicates read offline rarely match
    assert counts[:, :, 1].tolist() == [[0, 1, 0], [1, 0, 0], [0, 0, 0]]


def test_path_string_walks_from_the_question_through_the_triples():
    assert CONCEPTS.path_string(0, ["larry alcala", "military"]) == "question larry alcala ust"
    assert CONCEPTS.path_string(1, ["ust"]) == "question ust manila"
    assert CONCEPTS.path_string(2, ["ust"]) == "question"


def test_edge_weights_are_the_channels_scaled_to_their_peak_and_summed():
    counts = np.zeros((3, 3, 2), dtype=np.float32)
    counts[0, 1] = counts[1, 0] = [2, 1]
    counts[1, 2, 0] = counts[2, 1, 0] = 1
    weights = edge_weights(counts)
    # 0–1: 2/2 concepts + 1/1 relation; 1–2: 1/2 concepts, no relation; a direct edge keeps
    # its weight even with no neighbour in common
    assert weights.tolist() == [[0, 2, 0], [2, 0, 0.5], [0, 0.5, 0]]


def test_best_neighbour_max_pools_over_senders():
    signal = np.array([[0.9, 1.0], [0.2, 0.5], [0.4, 0.33]])
    senders = np.array([[0, 1, 1], [0, 0, 1], [0, 0, 0]], dtype=bool)  # 0 → 1, 0 → 2, 1 → 2
    assert best_neighbour(signal, senders).tolist() == [[0, 0], [0.9, 1.0], [0.9, 1.0]]


def test_isolated_nodes_hear_nothing_and_are_still_scored():
    mean = neighbour_mean(torch.tensor([[0.0, 2.0, 0.0], [2.0, 0.0, 0.0], [0.0, 0.0, 0.0]]))
    assert mean.tolist() == [[0, 1, 0], [1, 0, 0], [0, 0, 0]]
    graph = random_graph(np.random.default_rng(0), n=3, isolated=True)
    scores = new_model(4, GRAGSettings(hidden=3), seed=0)(graph)
    assert torch.isfinite(scores).all() and scores.shape == (3,)


def test_the_untrained_network_ranks_as_dense_retrieval():
    graph = random_graph(np.random.default_rng(1), n=6)
    model = new_model(4, GRAGSettings(hidden=3), seed=0).eval()
    assert torch.allclose(model(graph), graph.cosine)


def test_losses_follow_eqs_12_and_13():
    scores = torch.tensor([2.0, 1.5, 0.0])
    labels = torch.tensor([1.0, 0.0, 0.0])
    # pairs (0, 1): max(0, 1 − 0.5) = 0.5; (0, 2): max(0, 1 − 2) = 0
    assert float(pairwise_loss(scores, labels)) == pytest.approx(0.25)
    expected = -torch.log_softmax(scores, 0)[0]
    assert float(cross_entropy_loss(scores, labels)) == pytest.approx(float(expected))
    assert float(pairwise_loss(scores, torch.zeros(3))) == 0.0  # no positive, no signal


def random_graph(rng, n, isolated=False):
    from hopgraph.tools.grag.graph import DocumentGraph

    weights = rng.random((n, n)).astype(np.float32)
    weights = (weights + weights.T) / 2
    np.fill_diagonal(weights, 0)
    if isolated:
        weights[-1, :] = weights[:, -1] = 0
    query = rng.standard_normal(4).astype(np.float32)
    features = rng.standard_normal((n, 8)).astype(np.float32)
    cosine = features[:, :4] @ query
    graph = DocumentGraph(
        rows=np.arange(n),
        features=features,
        weights=weights,
        cosine=cosine,
        prior=-np.log(np.arange(1, n + 1, dtype=np.float32)),
        query=query,
        relevance=rng.random((n, 8)).astype(np.float32),
        paths=("question",) * n,
    )
    return TensorGraph(graph, labels=(np.arange(n) == n - 2).astype(np.float32))


TRAIN = [
    {"id": "q1", "question": "Where was Larry Alcala educated?", "answers": ["UST"],
     "gold_ids": ["d1", "d2"]},
    {"id": "q2", "question": "What is the seat of the county of Van Hook Township?",
     "answers": ["Stanley"], "gold_ids": ["d4", "d5"]},
    {"id": "q3", "question": "Which city is the seat of Mountrail County?",
     "answers": ["Stanley"], "gold_ids": ["d5", "d6"]},
    {"id": "q4", "question": "When did military instruction start at UST?",
     "answers": ["1936"], "gold_ids": ["d2"]},
]  # fmt: skip


def test_training_twice_gives_identical_weights_and_a_usable_reranker(tmp_path, capsys):
    import hopgraph.tools.shared.weights

    _, record, states = train_twice(tmp_path, "grag", TRAIN)
    assert states[0].keys() == states[1].keys()
    assert all(torch.equal(states[0][k], states[1][k]) for k in states[0])  # same data, same seed
    assert record["model"] == "hashing" and record["data"][0]["used"] == 4
    assert len(record["held_out_mrr"]) == len(record["losses"]) + 1  # untrained first
    assert "trained grag on 4 questions" in capsys.readouterr().out

    index_dir = next(p for p in (tmp_path / "cache" / "eval-indexes").iterdir() if p.is_dir())
    with Index.open(index_dir) as idx:
        grag = make_retriever("grag", idx, weights=tmp_path / "grag1.pt", keep=0)  # unguarded
        hits = grag.retrieve("Where was Larry Alcala educated?", 3)
        assert len(hits) == 3 and hits[0].provenance[-1].method == "grag"
        assert "reranked from base rank" in hits[0].provenance[-1].step
        # issue 74: guarded, every list is on G-RAG's scale (logits), falling with rank; a kept
        # chunk G-RAG did not score shows G-RAG's score below it, its cosine its raw_score
        for question in [q["question"] for q in TRAIN] + ["Stanley", "Larry Alcala"]:
            for preset in ("tuned", "paper"):
                listed = make_retriever(
                    "grag", idx, weights=tmp_path / "grag1.pt", preset=preset, keep=2
                ).retrieve(question, 4)
                assert {h.score_kind for h in listed} == {"logit"}, (question, listed)
                scores = [h.score for h in listed]
                assert scores == sorted(scores, reverse=True), (question, scores)
        with pytest.raises(IndexStateError, match="grag needs trained weights"):
            make_retriever("grag", idx)  # nothing at INDEX/models, nothing shipped for hashing
        record["model"] = "another-model"
        hopgraph.tools.shared.weights.save_weights(tmp_path / "bad.pt", record, states[0])
        with pytest.raises(IndexStateError, match="another-model"):
            make_retriever("grag", idx, weights=tmp_path / "bad.pt")
        (tmp_path / "junk.pt").write_text("not weights")
        with pytest.raises(InputError, match="not a hopgraph weights file"):
            make_retriever("grag", idx, weights=tmp_path / "junk.pt")


def test_training_on_several_datasets_needs_an_out_file(tmp_path, capsys):
    args = ["train", "grag", "--data", "a", "--data", "b", "--model", "hashing", "-q"]
    assert main(args) != 0
    assert "needs --out" in capsys.readouterr().err


def _train(tmp_path, data, concept_paths: str) -> Path:
    out = tmp_path / f"{concept_paths}.pt"
    args = ["train", "grag", "--data", str(data), "--model", "hashing", "--out", str(out)]
    args += ["--concept-paths", concept_paths, "--epochs", "2", "--hidden", "4", "-q"]
    assert main(args) == 0
    return out


def _count_embedded(idx: Index) -> list[str]:
    embedded: list[str] = []
    embed = idx.embedder.embed
    idx.embedder.embed = lambda texts, progress=None: embedded.extend(texts) or embed(texts)
    return embedded


def test_without_concept_paths_only_the_question_is_embedded(tmp_path):
    """--concept-paths none: a network over [Encode(p)] and 7 relevance numbers; no path is
    embedded at query time, so a new question costs one embedding (issue 37's latency)."""
    data, _, _ = train_twice(tmp_path, "grag", TRAIN)
    none, encoded = _train(tmp_path, data, "none"), _train(tmp_path, data, "encoded")
    record, state = torch.load(none, weights_only=True).values()
    assert record["settings"]["concept_paths"] == "none"
    assert state["first.own.weight"].shape[1] == record["dimension"]  # Encode(p) alone
    assert state["relevance_first.own.weight"].shape[1] == 7  # no cos(q, a_i)
    index_dir = next(p for p in (tmp_path / "cache" / "eval-indexes").iterdir() if p.is_dir())
    with Index.open(index_dir) as idx:
        grag = make_retriever("grag", idx, weights=none, keep=0)
        embedded = _count_embedded(idx)
        hits = grag.retrieve("When did military instruction start at UST?", 3)
        assert len(hits) == 3 and embedded == ["When did military instruction start at UST?"]
        embedded.clear()
        make_retriever("grag", idx, weights=encoded, keep=0).retrieve(
            "Which city is the seat of Mountrail County?", 3
        )
        assert embedded[0] == "Which city is the seat of Mountrail County?"
        assert all(t.startswith("question") for t in embedded[1:]) and len(embedded) > 1
    with pytest.raises(ValueError, match="concept_paths must be one of"):
        GRAGSettings(concept_paths="hashed")


def test_concept_paths_are_sums_of_concept_vectors_embedded_once_per_index(tmp_path):
    """The default: the index's concepts are embedded when G-RAG first opens it and kept on
    disk; a question embeds only itself, and Encode(a_i) is its path concepts' unit sum."""
    train_twice(tmp_path, "grag", TRAIN)  # default settings: concept sums
    index_dir = next(p for p in (tmp_path / "cache" / "eval-indexes").iterdir() if p.is_dir())
    weights = tmp_path / "grag1.pt"
    assert torch.load(weights, weights_only=True)["record"]["settings"]["concept_paths"] == (
        "concepts"
    )
    with Index.open(index_dir) as idx:  # the training run embedded them: nothing is left
        embedded = _count_embedded(idx)
        grag = make_retriever("grag", idx, weights=weights, keep=0)
        assert embedded == []
        question = "Which city is the seat of Mountrail County?"
        grag.retrieve(question, 3)
        assert embedded == [question]
        builder = grag.builder
        wanted = builder.question_concepts(question)
        row = next(r for r in range(len(idx.chunks)) if builder.concepts.path(r, wanted))
        path = builder.concepts.path(row, wanted)
        expected = idx.embedder.embed(["question", *path]).sum(axis=0)
        got = builder.path_vectors([path])[0]
        assert np.allclose(got, expected / np.linalg.norm(expected), atol=1e-6)
        assert builder.concepts.path_string(row, wanted) == " ".join(["question", *path])


def test_the_latency_benchmark_counts_the_paths_a_new_question_embeds(tmp_path, monkeypatch):
    """With the query embedded, every timed call embeds its concept paths too (shared cache)."""
    from hopgraph.evals.bench.__main__ import PASSES, time_queries

    data, _, _ = train_twice(tmp_path, "grag", TRAIN)
    encoded = _train(tmp_path, data, "encoded")  # the paths embedded at query time
    index_dir = next(p for p in (tmp_path / "cache" / "eval-indexes").iterdir() if p.is_dir())
    embedded = []
    embed_queries = Index.embed_queries

    def counted(self, texts):
        embedded.extend(t for t in texts if t not in self._query_vectors)
        return embed_queries(self, texts)

    monkeypatch.setattr(Index, "embed_queries", counted)
    question = "Which city is the seat of Mountrail County?"
    options = {"grag": {"weights": encoded, "keep": 0}}
    time_queries(index_dir, [question], 3, ["grag"], embedded=True, options=options)
    paths = [t for t in embedded if t.startswith("question")]
    assert embedded.count(question) == PASSES + 1  # up front (then cached), and each pass
    assert paths and len(paths) % (PASSES + 1) == 0  # its paths: at the warm-up and each pass
