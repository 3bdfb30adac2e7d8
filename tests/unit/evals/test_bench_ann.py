"""The ANN benchmark: its vectors and its comparison run end to end on a small sample."""

import json

import numpy as np
import pytest

from hopgraph.evals.bench import ann
from hopgraph.evals.bench.graphs import hierarchical_vectors, synthetic_vectors


def neighbour_statistics(vectors: np.ndarray) -> tuple[float, float]:
    scores = vectors[:500] @ vectors.T
    scores[np.arange(500), np.arange(500)] = -np.inf
    return float(np.sort(scores, axis=1)[:, -1].mean()), float(scores[:, 1000:1500].mean())


def test_hierarchical_vectors_have_graded_neighbourhoods_unlike_the_topic_ones():
    tree = hierarchical_vectors(5000)
    assert tree.shape == (5000, 256) and np.allclose(np.linalg.norm(tree, axis=1), 1, atol=1e-5)
    assert np.array_equal(hierarchical_vectors(5000), tree)  # seeded
    best, random_pair = neighbour_statistics(tree)
    assert 0.5 < best < 0.7 and 0.0 < random_pair < 0.1  # real MiniLM: 0.61, 0.04
    tree_scores = np.sort(tree[:200] @ tree.T, axis=1)[:, -11:-1]
    topic = synthetic_vectors(5000, dimension=256)
    topic_scores = np.sort(topic[:200] @ topic.T, axis=1)[:, -11:-1]
    # best minus 10th best: a slope in the tree, a plateau in the topics
    assert np.ptp(tree_scores, axis=1).mean() > 2 * np.ptp(topic_scores, axis=1).mean()


def test_the_benchmark_compares_nn_descent_with_exact(tmp_path, capsys):
    out = tmp_path / "ann.json"
    args = ["--size", "3000", "-k", "5", "--vectors", "hierarchical", "--libraries", "nndescent"]
    ann.main([*args, "--out", str(out)])
    rows = {row["library"]: row for row in json.loads(out.read_text())["rows"]}
    assert rows["exact"]["recall"] == 1.0 and rows["nndescent"]["recall"] > 0.95
    assert "nndescent" in capsys.readouterr().out


def test_an_unknown_library_is_refused_with_the_choices(capsys):
    with pytest.raises(SystemExit) as exit_:
        ann.main(["--libraries", "nndescent,annoy"])
    assert exit_.value.code == 2 and "choose among nndescent" in capsys.readouterr().err
