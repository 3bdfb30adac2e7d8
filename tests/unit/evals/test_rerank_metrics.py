"""G-RAG's reranking metrics on the spec's worked example (g_rag §9.2) and by hand."""

import pytest

from hopgraph.evals.rerank_metrics import (
    competition_ranks,
    mhits_all,
    mrr_all,
    mtrr,
    tied_hits,
    tmhits,
)

# 1 doc at 100, 8 tied at 50, 4 tied at 20, 87 at 0
SCORES = (
    {"a": 100.0}
    | {f"b{i}": 50.0 for i in range(8)}
    | {f"c{i}": 20.0 for i in range(4)}
    | {f"d{i}": 0.0 for i in range(87)}
)


def test_competition_ranks_of_the_worked_example():
    ranks = competition_ranks(SCORES)
    assert ranks["a"] == (1, 1) and ranks["b3"] == (2, 8)
    assert ranks["c0"] == (10, 4) and ranks["d86"] == (14, 87)


@pytest.mark.parametrize(
    ("positive", "hits", "trr"),
    [("a", 1.0, 1.0), ("b0", 1.0, 2 / 11), ("c0", 1 / 4, 2 / 23), ("d0", 0.0, 2 / 114)],
)
def test_tied_hits_and_mtrr_terms(positive, hits, trr):
    assert tmhits(SCORES, {positive}) == pytest.approx(hits)
    assert mtrr(SCORES, {positive}) == pytest.approx(trr)


def test_averages_over_all_positives_and_equal_the_untied_metrics_without_ties():
    both = {"a", "c0"}
    assert tmhits(SCORES, both) == pytest.approx((1 + 1 / 4) / 2)
    assert tied_hits(10, 4) == pytest.approx(1 / 4) and tied_hits(2, 8) == 1.0
    untied = {"x": 0.9, "y": 0.8, "z": 0.7}
    ranked = ["x", "y", "z"]
    assert mtrr(untied, {"y", "z"}) == pytest.approx(mrr_all(ranked, {"y", "z"}))
    assert mrr_all(ranked, {"y", "z"}) == pytest.approx((1 / 2 + 1 / 3) / 2)
    assert mhits_all(ranked, {"y", "q"}, k=2) == 0.5  # q is not ranked: it counts 0
    assert mrr_all(ranked, set()) == 0.0  # a question with no positive counts 0
