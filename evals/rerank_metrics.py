"""Reranking metrics of G-RAG (spec g_rag §9): averaged over *all* positives of a question.

MRR and MHits@10 follow GST: for each positive p with 1-based rank r_p,
``1/r_p`` and ``1[r_p ≤ 10]``, averaged over the question's positives, then over questions; a
question with no positive stays in the denominator and counts 0. The tie-aware versions (§9.2)
rank by score with competition ranks: r_p = 1 + #{strictly higher}, t_p = #{equal scores};

- MTRR (Eq. 14): 2 / (2·r_p + t_p − 1), the reciprocal of the mid-rank of p's tie block;
- TMHits@10 (Eqs. 15, 21; the spec's repaired form): min(t_p, max(0, 11 − r_p)) / t_p, the share
  of p's tie block inside the top 10.

With no ties, MTRR = MRR and TMHits@10 = MHits@10. Values are fractions; report ×100.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def mrr_all(ranked: Sequence[str], positives: set[str]) -> float:
    """Mean of 1/r_p over the positives (a positive not ranked counts 0)."""
    position = {item: rank for rank, item in enumerate(ranked, start=1)}
    return _mean([1 / position[p] if p in position else 0.0 for p in positives])


def mhits_all(ranked: Sequence[str], positives: set[str], k: int = 10) -> float:
    """Share of the positives ranked in the top ``k``."""
    top = set(ranked[:k])
    return _mean([1.0 if p in top else 0.0 for p in positives])


def competition_ranks(scores: Mapping[str, float]) -> dict[str, tuple[int, int]]:
    """Return, per item, (1 + items scored strictly higher, items with exactly its score)."""
    values = sorted(scores.values(), reverse=True)
    first: dict[float, int] = {}
    ties: dict[float, int] = {}
    for index, value in enumerate(values):
        first.setdefault(value, index + 1)
        ties[value] = ties.get(value, 0) + 1
    return {item: (first[s], ties[s]) for item, s in scores.items()}


def mtrr(scores: Mapping[str, float], positives: set[str]) -> float:
    """Mean tied reciprocal rank over the positives (Eq. 14)."""
    ranks = competition_ranks(scores)
    return _mean(
        [2 / (2 * ranks[p][0] + ranks[p][1] - 1) if p in ranks else 0.0 for p in positives]
    )


def tied_hits(rank: int, ties: int, k: int = 10) -> float:
    """Hits@k of one item: the share of its tie block inside the top ``k``."""
    return min(ties, max(0, k + 1 - rank)) / ties


def tmhits(scores: Mapping[str, float], positives: set[str], k: int = 10) -> float:
    """Tied mean Hits@k over the positives (Eqs. 15, 21)."""
    ranks = competition_ranks(scores)
    return _mean([tied_hits(*ranks[p], k) if p in ranks else 0.0 for p in positives])
