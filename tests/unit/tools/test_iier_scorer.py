"""IIER's trained chain scorer (spec iier §3.4, §4): labels, the untrained skip, training."""

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from hopgraph.cli import main
from hopgraph.core.errors import InputError
from hopgraph.graph_store import Index
from hopgraph.tools import make_retriever
from hopgraph.tools.iier.scorer import ScorerSettings, new_scorer
from hopgraph.tools.iier.steps import Step
from hopgraph.tools.iier.training import hop_accuracy, shortest_chains, step_loss
from tests.conftest import train_twice


def adjacency(n, edges):
    rows, cols = zip(*(edges + [(b, a) for a, b in edges]), strict=True)
    return sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(n, n))


def test_shortest_chains_join_every_ordered_pair_of_gold_chunks():
    graph = adjacency(5, [(0, 1), (1, 2), (2, 3), (0, 4)])
    assert sorted(shortest_chains(graph, [0, 2])) == [[0, 1, 2], [2, 1, 0]]
    assert shortest_chains(graph, [0]) == []  # one gold chunk: nothing to walk to
    assert shortest_chains(adjacency(4, [(0, 1)]), [0, 3]) == []  # not connected


def step(labels=None, seed=0):
    rng = np.random.default_rng(seed)
    vectors = rng.normal(size=(6, 8)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    edges = rng.random((4, 4)).astype(np.float32)
    return Step(vectors[0], vectors[1], vectors[2:], edges, labels)


def test_the_untrained_scorer_is_iiers_similarity_scorer():
    s = step()
    scores = new_scorer(8, ScorerSettings(), seed=3).rank(s)
    expected = s.candidates @ s.question + 0.1 * s.edges.mean(axis=1)
    assert np.allclose(scores, expected, atol=1e-6)


def test_numpy_ranking_equals_the_torch_forward_pass():
    scorer = new_scorer(8, ScorerSettings(hidden=6), seed=1)
    torch.nn.init.normal_(scorer.score[-1].weight)  # a scorer that has learned something
    s = step(seed=2)
    first = scorer.rank(s)
    with torch.no_grad():
        assert np.allclose(first, scorer.eval()(s).numpy(), atol=1e-5)
    with torch.no_grad():
        scorer.score[-1].bias.fill_(1.0)
    scorer.train()  # training invalidates the numpy copy of the weights
    assert np.allclose(scorer.rank(s), first + 1.0, atol=1e-5)


def test_loss_and_hop_accuracy_follow_the_labels():
    scorer = new_scorer(8, ScorerSettings(dropout=0.0), seed=0).eval()
    s = step()
    best = int(np.argmax(scorer.rank(s)))
    right = Step(s.question, s.path, s.candidates, s.edges, np.eye(4, dtype=np.float32)[best])
    wrong = Step(s.question, s.path, s.candidates, s.edges, 1 - right.labels)
    assert hop_accuracy(scorer, [right]) == 1.0
    assert hop_accuracy(scorer, [wrong, right]) == 0.5
    with torch.no_grad():
        assert float(step_loss(scorer, [right])) < float(step_loss(scorer, [wrong]))


TRAIN = [
    {"id": "q1", "question": "When did military instruction start where Larry Alcala studied?",
     "answers": ["1936"], "gold_ids": ["d1", "d2"]},
    {"id": "q2", "question": "What is the seat of the county of Van Hook Township?",
     "answers": ["Stanley"], "gold_ids": ["d4", "d5"]},
    {"id": "q3", "question": "Which state is the seat of Mountrail County in?",
     "answers": ["North Dakota"], "gold_ids": ["d5", "d6"]},
]  # fmt: skip


def test_training_twice_gives_identical_weights_that_iier_then_uses(tmp_path, capsys):
    data, record, states = train_twice(tmp_path, "iier", TRAIN)
    assert all(torch.equal(states[0][k], states[1][k]) for k in states[0])  # same data, same seed
    assert record["method"] == "iier" and record["settings"]["hidden"] == 4
    assert len(record["held_out_hop_accuracy"]) == len(record["losses"]) + 1
    assert "trained iier on" in capsys.readouterr().out
    forced = tmp_path / "forced.pt"
    args = ["train", "iier", "--data", str(data), "--model", "hashing", "--out", str(forced)]
    assert main([*args, "--epochs", "2", "--always-trained", "-q"]) == 0
    assert torch.load(forced, weights_only=True)["record"]["best_epoch"] >= 1  # never epoch 0
    evaluate = ["eval", "--data", str(data), "--split", "train", "--model", "hashing", "-q"]
    report = ["--methods", "iier", "--out", str(tmp_path / "run")]
    assert main([*evaluate, *report, "--weights", f"iier={tmp_path / 'iier2.pt'}"]) == 0
    assert main([*evaluate, *report, "--weights", "iier=none"]) == 0
    assert main([*evaluate, *report, "--weights", "iier"]) != 0
    assert "is not METHOD=FILE" in capsys.readouterr().err
    assert main([*evaluate, *report, "--weights", "iier=missing.pt"]) != 0
    assert "no file missing.pt" in capsys.readouterr().err

    index_dir = next(p for p in (tmp_path / "cache" / "eval-indexes").iterdir() if p.is_dir())
    with Index.open(index_dir) as idx:
        assert make_retriever("iier", idx).scorer is None  # no weights: the untrained scorer
        trained = make_retriever("iier", idx, weights=tmp_path / "iier1.pt")
        assert trained.scorer is not None
        hits = trained.retrieve("Where was Larry Alcala educated?", 3)
        assert [h.provenance[-1].method for h in hits] == ["iier"] * 3
        (idx.directory / "models").mkdir(exist_ok=True)
        (tmp_path / "iier1.pt").rename(idx.directory / "models" / "iier.pt")
        assert make_retriever("iier", idx).scorer is not None  # found with the index
        assert make_retriever("iier", idx, weights=False).scorer is None  # asked for untrained
        grag = tmp_path / "grag.pt"
        torch.save({"record": {**record, "method": "grag"}, "state": states[0]}, grag)
        with pytest.raises(InputError, match="holds 'grag' weights, not 'iier'"):
            make_retriever("iier", idx, weights=grag)
