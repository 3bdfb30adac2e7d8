"""IIER's unit of choice, shared by the retriever, its trained scorer and the training.

Apart from both tools/iier/retriever.py and tools/iier/scorer.py, so neither imports the other's
module for it (the scorer brings in torch; the retriever ranks with trained weights in numpy, here).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ScorerSettings:
    """The trained scorer's sizes; saved with its weights."""

    hidden: int = 128
    edge_hidden: int = 32
    dropout: float = 0.2
    """The paper's dropout before each linear layer (§3.4)."""
    edge_weight: float = 0.1
    """w of the untrained scorer's skip term (IIERRetriever's ``edge_weight``)."""


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


class ChainRanker:
    """The trained scorer (tools/iier/scorer.py) in inference mode, in numpy, from its state.

    Equal to ``ChainScorer.forward`` without dropout. A chain step scores a few dozen
    candidates, where torch's per-call overhead would cost more than the arithmetic (6.8 × dense
    latency), and retrieval with trained weights imports no torch (1.5 s of a command's start).
    """

    LAYERS = ("edge.0", "edge.3", "score.1", "score.4")
    """f_r's two linear layers and f_s's, as the state dict names them."""

    def __init__(self, state: Mapping[str, np.ndarray], settings: ScorerSettings) -> None:
        self.edge_weight = settings.edge_weight
        self.layers = [
            (np.asarray(state[f"{name}.weight"]).T.copy(), np.asarray(state[f"{name}.bias"]))
            for name in self.LAYERS
        ]

    def rank(self, step: Step) -> np.ndarray:
        """Return one score (a logit) per candidate of the step."""
        (e1, c1), (e2, c2), (s1, d1), (s2, d2) = self.layers
        n, q, p, r = step.candidates, step.question, step.path, step.edges
        edge = np.maximum(r @ e1 + c1, 0) @ e2 + c2
        joint = np.hstack(
            [np.broadcast_to(q, n.shape), np.broadcast_to(p, n.shape), n, n * q, n * p, edge]
        )
        skip = n @ q + self.edge_weight * r.mean(axis=1)
        return (np.maximum(joint @ s1 + d1, 0) @ s2 + d2)[:, 0] + skip
