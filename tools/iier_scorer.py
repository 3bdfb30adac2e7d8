"""IIER's chain scorer (spec iier §3.4, §4): which neighbour of the chain's last chunk comes next.

The paper fine-tunes RoBERTa over the texts of the question, the path so far and the candidate.
Here the encoder stays frozen (CPU only): the inputs are the index's stored vectors — the
question's, the mean of the path's chunks', the candidate's — with their element-wise products
(what a bilinear match needs), and the edge features r(u, n) through f_r (§3.4 Eq. 2):

    s(n) = f_s([h_q ; h_p ; h_n ; h_q ⊙ h_n ; h_p ⊙ h_n ; f_r(r)]) + cos(q, n) + w · mean(r)

The last two terms are the untrained scorer of ``tools/iier.py``; f_s's output layer starts at
zero, so an untrained network scores exactly like it and training learns a correction.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from graph_store import Index

from .weights import load_weights

EDGE_FEATURES = 4


@dataclass(frozen=True)
class ScorerSettings:
    """The network's sizes; saved with its weights."""

    hidden: int = 128
    edge_hidden: int = 32
    dropout: float = 0.2
    edge_weight: float = 0.1


@dataclass(frozen=True)
class Step:
    """One choice of a chain: every candidate of the last chunk, and which were right."""

    question: np.ndarray  # (d,)
    path: np.ndarray  # (d,): mean vector of the chunks so far
    candidates: np.ndarray  # (c, d)
    edges: np.ndarray  # (c, 4): scaled r(u, n)
    labels: np.ndarray | None = None  # (c,): 1 on the shortest path


class ChainScorer(nn.Module):
    """f_r and f_s over frozen vectors, plus the untrained scorer as a fixed skip."""

    def __init__(self, dimension: int, settings: ScorerSettings) -> None:
        super().__init__()
        self.settings = settings
        self.edge = nn.Sequential(
            nn.Linear(EDGE_FEATURES, settings.edge_hidden),
            nn.ReLU(),
            nn.Dropout(settings.dropout),
            nn.Linear(settings.edge_hidden, settings.edge_hidden),
        )
        self.score = nn.Sequential(
            nn.Dropout(settings.dropout),
            nn.Linear(5 * dimension + settings.edge_hidden, settings.hidden),
            nn.ReLU(),
            nn.Dropout(settings.dropout),
            nn.Linear(settings.hidden, 1),
        )
        nn.init.zeros_(self.score[-1].weight)
        nn.init.zeros_(self.score[-1].bias)

    def forward(self, step: Step) -> torch.Tensor:
        """Return one logit per candidate."""
        n = torch.from_numpy(step.candidates)
        q = torch.from_numpy(step.question).expand_as(n)
        p = torch.from_numpy(step.path).expand_as(n)
        r = torch.from_numpy(step.edges)
        joint = torch.cat([q, p, n, q * n, p * n, self.edge(r)], dim=1)
        skip = (n * q).sum(dim=1) + self.settings.edge_weight * r.mean(dim=1)
        return self.score(joint).squeeze(-1) + skip

    def rank(self, step: Step) -> np.ndarray:
        """Scores in inference mode."""
        self.eval()
        with torch.no_grad():
            return self(step).numpy()


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


def new_scorer(dimension: int, settings: ScorerSettings, seed: int) -> ChainScorer:
    """Build a fresh scorer; the same seed gives the same initial weights."""
    torch.manual_seed(seed)
    return ChainScorer(dimension, settings)


def load_scorer(path: Path, index: Index) -> tuple[ChainScorer, dict[str, Any]]:
    """Load trained scorer weights checked against ``index``."""
    record, state = load_weights(path, index, "iier")
    scorer = ChainScorer(int(record["dimension"]), ScorerSettings(**record["settings"]))
    scorer.load_state_dict(state)
    scorer.eval()
    return scorer, record
