"""Rank fusion, shared by the hybrid baseline and the graph methods that fuse with a base."""

from __future__ import annotations

from collections.abc import Sequence


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[str]], k: int = 60
) -> list[tuple[str, float]]:
    """Fuse rankings by RRF: score(d) = Σ_r 1 / (k + rank_r(d)), ranks from 1.

    Cormack, Clarke & Büttcher (SIGIR 2009). Ties keep the order of first appearance.
    """
    if k < 0:
        raise ValueError(f"RRF k must be ≥ 0, got {k}")
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
    return sorted(scores.items(), key=lambda pair: -pair[1])
