import pytest

from hopgraph.evals.metrics import (
    all_at_k,
    exact_match,
    f1_score,
    normalize_answer,
    percentile,
    recall_at_k,
    reciprocal_rank,
)
from hopgraph.tools.shared.fusion import reciprocal_rank_fusion


def test_recall_all_and_rr_by_hand():
    ranked = ["x", "g1", "y", "g2"]
    gold = ["g1", "g2"]
    assert recall_at_k(ranked, gold, 2) == 0.5
    assert recall_at_k(ranked, gold, 4) == 1.0
    assert all_at_k(ranked, gold, 2) == 0.0
    assert all_at_k(ranked, gold, 4) == 1.0
    assert reciprocal_rank(ranked, gold) == 0.5
    assert reciprocal_rank(["x"], gold) == 0.0
    with pytest.raises(ValueError):
        recall_at_k(ranked, [], 2)


def test_squad_normalisation_em_f1():
    assert normalize_answer("The  Eiffel-Tower!") == "eiffeltower"
    assert exact_match("the Pittsburgh Pirates", ["Pirates", "Pittsburgh Pirates"]) == 1.0
    assert exact_match("Pirates of Pittsburgh", ["Pittsburgh Pirates"]) == 0.0
    # pred tokens {new, york, city}, gold {new, york}: P = 2/3, R = 1, F1 = 0.8
    assert f1_score("New York City", ["New York"]) == pytest.approx(0.8)
    assert f1_score("", ["x"]) == 0.0


def test_percentile_interpolates():
    assert percentile([1, 2, 3, 4], 50) == 2.5
    assert percentile([5], 95) == 5
    assert percentile([], 50) == 0.0


def test_rrf_by_hand():
    fused = dict(reciprocal_rank_fusion([["a", "b"], ["b", "c"]], k=60))
    assert fused["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert fused["a"] == pytest.approx(1 / 61)
    assert fused["c"] == pytest.approx(1 / 62)
    assert list(fused) == ["b", "a", "c"]
