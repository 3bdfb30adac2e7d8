"""Learning GNN-Ret's α (spec gnn_ret §3.4) on samples small enough to follow by hand."""

import json
import math

import numpy as np
import pytest
import torch

from hopgraph.cli import main
from hopgraph.core.errors import IndexStateError, InputError
from hopgraph.graph_store import Index
from hopgraph.tools.gnn_ret.retriever import GNNRetriever
from hopgraph.tools.gnn_ret.training import Sample, blended, train_alphas
from tests.conftest import DOCS, write_jsonl


def sample():
    # rows: a gold chunk (h⁰ 0.2) that hears 0.0 on channel 0, a rival (h⁰ 0.1) that hears nothing
    inf = math.inf
    return Sample(
        h0=torch.tensor([0.2, 0.1], dtype=torch.float64),
        messages=torch.tensor([[0.0, inf], [inf, inf]], dtype=torch.float64),
        gold=torch.tensor([True, False]),
        rival=torch.tensor([False, True]),
    )


def test_blend_is_eq_4_then_the_lowest_channel():
    h = blended(sample(), torch.tensor([0.5, 1.0], dtype=torch.float64), only_lower=True)
    assert h.tolist() == pytest.approx([0.1, 0.1])  # 0.5·0.2 + 0.5·0.0; the rival keeps h⁰


def test_gradient_descent_by_hand():
    # loss = 0.01 + α·0.2 − 0.1 while positive, so dloss/dα = 0.2 and each step takes 0.2 off:
    # α 0.9 → 0.7 → 0.5 → 0.3, where the hinge is inactive and the gradient 0 stops it
    result = train_alphas([sample()], initial=[0.9, 0.2])
    assert result.alphas == pytest.approx([0.3, 0.2])
    assert result.losses == pytest.approx([0.09, 0.05, 0.01, 0.0])
    assert result.stopped == "gradient below tolerance"


def test_training_is_reproducible_and_saved_with_provenance(tmp_path, capsys):
    data = tmp_path / "tiny"
    data.mkdir()
    write_jsonl(data / "corpus.jsonl", DOCS)
    write_jsonl(
        data / "train.jsonl",
        [
            {"id": "q1", "question": "Where was Larry Alcala educated?", "answers": ["UST"],
             "gold_ids": ["d1", "d2"]},
            {"id": "q2", "question": "What is the seat of the county of Van Hook Township?",
             "answers": ["Stanley"], "gold_ids": ["d4", "d5", "d6"]},
        ],
    )  # fmt: skip
    runs = []
    for n in (1, 2):
        out = tmp_path / f"w{n}.json"
        args = ["train", "gnn_ret", "--data", str(data), "--model", "hashing", "--out", str(out)]
        assert main([*args, "--top-o", "4", "-q"]) == 0
        runs.append(json.loads(out.read_text()))
    assert runs[0]["channels"] == runs[1]["channels"]  # same data, same weights
    assert runs[0]["model"] == "hashing" and runs[0]["samples"] == 2 and runs[0]["losses"]
    assert "learned structural+entity α" in capsys.readouterr().out
    # the weights load into GNN-Ret for an index of the same model, and are refused otherwise
    index_dir = next(p for p in (tmp_path / "cache" / "eval-indexes").iterdir() if p.is_dir())
    assert main(["eval", "--data", str(data), "--split", "train", "--methods", "gnn_ret",
                 "--model", "hashing", "--gnn-weights", str(tmp_path / "w1.json"), "-q",
                 "--out", str(tmp_path / "run")]) == 0  # fmt: skip
    runs[0]["model"] = "another-model"
    (tmp_path / "bad.json").write_text(json.dumps(runs[0]))
    with Index.open(index_dir) as idx, pytest.raises(IndexStateError, match="another-model"):
        GNNRetriever(idx, weights=tmp_path / "bad.json")


def test_step_questions_and_greedy_labels():
    from hopgraph.tools.gnn_ret.training import greedy_labels, step_question

    assert step_question("#1 >> capital", ["Mountrail County"]) == "capital of Mountrail County"
    assert step_question("Who founded #2?", ["a", "Acme"]) == "Who founded Acme?"
    h0s = [np.array([0.9, 0.1, 0.5]), np.array([0.2, 0.8, 0.6])]
    # step 1 takes the document closest to its question (rows [1]); step 2 the rest ([0, 2])
    assert greedy_labels(h0s, [[0, 2], [1]]) == [[1], [0, 2]]


def test_recurrent_loss_blends_steps_by_beta():
    from hopgraph.tools.gnn_ret.training import RecurrentSample, recurrent_loss, train_recurrent

    inf = math.inf
    step = Sample(
        h0=torch.tensor([0.2, 0.1], dtype=torch.float64),
        messages=torch.tensor([[inf, inf], [inf, inf]], dtype=torch.float64),
        gold=torch.tensor([True, False]),
        rival=torch.tensor([False, True]),
    )
    later = Sample(  # the second step sees the gold chunk close and the rival far
        h0=torch.tensor([0.0, 0.5], dtype=torch.float64),
        messages=step.messages,
        gold=step.gold,
        rival=step.rival,
    )
    sample = RecurrentSample((step, later))
    params = torch.tensor([1.0, 1.0, 0.5], dtype=torch.float64)
    # step 1: 0.01 + 0.2 − 0.1 = 0.11; step 2: ĥ = 0.5·[0, 0.5] + 0.5·[0.2, 0.1] = [0.1, 0.3],
    # 0.01 + 0.1 − 0.3 < 0 → 0; mean 0.055
    assert float(recurrent_loss([sample], params, 0.01, True)) == pytest.approx(0.055)
    result = train_recurrent([sample], [1.0, 1.0], 0.5)
    assert result.losses[0] == pytest.approx(0.055) and result.losses[-1] <= result.losses[0]


def test_rgnn_context_takes_beta_from_weights(tmp_path, docs_index):
    from hopgraph.agents.rgnn_ret.context import Context
    from tests.fakes import ScriptedChatModel

    path = tmp_path / "rgnn.json"
    path.write_text(json.dumps({"beta": 0.7, "channels": [], "model": "hashing"}))
    context = Context(index=docs_index, chat=ScriptedChatModel(), weights=str(path))
    assert context.beta == 0.7
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(InputError, match="not an RGNN-Ret weights file"):
        Context(index=docs_index, chat=ScriptedChatModel(), weights=str(tmp_path / "bad.json"))
