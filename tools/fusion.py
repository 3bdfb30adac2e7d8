"""Rank fusion, shared by the hybrid baseline and the graph methods that fuse with a base."""

from __future__ import annotations

from collections.abc import Sequence


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[str]], k: int = 60, weights: Sequence[float] | None = None
) -> list[tuple[str, float]]:
    """Fuse rankings by RRF: score(d) = Σ_r w_r / (k + rank_r(d)), ranks from 1.

    Cormack, Clarke & Büttcher (SIGIR 2009), where every weight w_r is 1 (the default).
    Ties keep the order of first appearance.
    """
    if k < 0:
        raise ValueError(f"RRF k must be ≥ 0, got {k}")
    weights = [1.0] * len(rankings) if weights is None else list(weights)
    if len(weights) != len(rankings):
        raise ValueError(f"{len(rankings)} rankings but {len(weights)} weights")
    scores: dict[str, float] = {}
    for ranking, weight in zip(rankings, weights, strict=True):
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + weight / (k + rank)
    return sorted(scores.items(), key=lambda pair: -pair[1])
