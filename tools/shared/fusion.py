"""Rank fusion, shared by the hybrid baseline and the graph methods that fuse with a base."""

from __future__ import annotations

from collections.abc import Sequence

from .hits import Hit, Provenance


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


def fuse_hits(
    rankings: Sequence[Sequence[Hit]], method: str, step: str, k: int, rrf_k: int = 60
) -> list[Hit]:
    """Fuse lists of hits by RRF into the first ``k``, each scored by its fused score.

    A chunk keeps the hit of the first list that holds it (its provenance says why that method
    found it), with ``Provenance(method, step, rank, score)`` added for its fused place.
    """
    first: dict[str, Hit] = {}
    for ranking in rankings:
        for hit in ranking:
            first.setdefault(hit.id, hit)
    fused = reciprocal_rank_fusion([[h.id for h in r] for r in rankings], rrf_k)[:k]
    return [
        first[chunk_id].with_score(score, Provenance(method, step, rank, score), kind="rrf")
        for rank, (chunk_id, score) in enumerate(fused, start=1)
    ]
