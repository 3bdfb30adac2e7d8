"""IIER's unit of choice, shared by the retriever, its trained scorer and the training.

Apart from both tools/iier.py and tools/iier_scorer.py, so neither imports the other's module
for it (the scorer brings in torch; the retriever loads the scorer only when it has weights).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Step:
    """One choice of a chain: every candidate next chunk, and (in training) which were right."""

    question: np.ndarray
    """(d,): the question's vector."""
    path: np.ndarray
    """(d,): the mean vector of the chain's chunks so far."""
    candidates: np.ndarray
    """(c, d): the candidates' vectors."""
    edges: np.ndarray
    """(c, 4): r(last chunk, candidate), scaled by :func:`scaled_edges`."""
    labels: np.ndarray | None = None
    """(c,): 1 where the candidate lies on a shortest path to a gold chunk."""


def scaled_edges(features: np.ndarray) -> np.ndarray:
    """IIER's r(u, n) scaled to [0, 1]: structural, semantic, keywords / 5, shared entities > 0."""
    return np.column_stack(
        [
            features[:, 0],
            np.clip(features[:, 1], 0, 1),
            features[:, 2] / 5,
            np.minimum(features[:, 3], 1),
        ]
    ).astype(np.float32)
