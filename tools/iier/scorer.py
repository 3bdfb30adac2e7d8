"""IIER's chain scorer (spec iier §3.4): which neighbour of the chain's last chunk comes next.

The paper fine-tunes RoBERTa over the texts of the question, the path so far and the candidate.
Here the encoder stays frozen (CPU only, two cores): the inputs are the vectors the index
already stores — the question's, the mean of the path's chunks' (the path history h_p), the
candidate's — with their element-wise products, which let a small network match the candidate
against the question and the path, and the edge features r(u, n) through f_r (Eq. 2):

    s(n) = f_s([h_q ; h_p ; h_n ; h_q ⊙ h_n ; h_p ⊙ h_n ; f_r(r)]) + cos(q, n) + w · mean(r)

The last two terms are the untrained scorer of ``tools/iier/retriever.py``; f_s's output layer
starts at zero, so an untrained network chooses exactly as the untrained scorer does, and training
learns a correction to it. Torch lives here, for training, apart from ``tools/iier/retriever.py``:
retrieval applies the trained weights in numpy (``ChainRanker`` in ``tools/iier/steps.py``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from hopgraph.graph_store import Index
from hopgraph.tools.shared.weights import load_weights

from .steps import ChainRanker, ScorerSettings, Step

__all__ = ["ChainScorer", "ScorerSettings", "load_scorer", "new_scorer"]

EDGE_FEATURES = 4
"""r(u, n): structural, semantic, keywords / 5, shared entities > 0 (see ``scaled_edges``)."""


class ChainScorer(nn.Module):
    """f_r and f_s over frozen vectors, plus the untrained scorer as a fixed skip."""

    def __init__(self, dimension: int, settings: ScorerSettings) -> None:
        super().__init__()
        self.edge_weight = settings.edge_weight
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
        self._frozen: ChainRanker | None = None

    def forward(self, step: Step) -> torch.Tensor:
        """Return one score (a logit) per candidate."""
        n = torch.from_numpy(step.candidates)
        q = torch.from_numpy(step.question).expand_as(n)
        p = torch.from_numpy(step.path).expand_as(n)
        r = torch.from_numpy(step.edges)
        joint = torch.cat([q, p, n, q * n, p * n, self.edge(r)], dim=1)
        skip = (n * q).sum(dim=1) + self.edge_weight * r.mean(dim=1)
        return self.score(joint).squeeze(-1) + skip

    def rank(self, step: Step) -> np.ndarray:
        """Score a step's candidates in inference mode, in numpy (:class:`ChainRanker`)."""
        if self.training or self._frozen is None:
            self.eval()
            state = {k: v.detach().numpy().copy() for k, v in self.state_dict().items()}
            self._frozen = ChainRanker(state, ScorerSettings(edge_weight=self.edge_weight))
        return self._frozen.rank(step)

    def train(self, mode: bool = True) -> ChainScorer:
        """Switch mode; the numpy copy of the weights is taken again after training."""
        self._frozen = None
        return super().train(mode)


def new_scorer(dimension: int, settings: ScorerSettings, seed: int) -> ChainScorer:
    """Build a fresh scorer; the same seed gives the same initial weights."""
    torch.manual_seed(seed)
    return ChainScorer(dimension, settings)


def load_scorer(path: Path, index: Index) -> tuple[ChainScorer, dict[str, Any]]:
    """Load trained scorer weights checked against ``index`` (see ``tools/shared/weights.py``)."""
    record, state = load_weights(path, index, "iier")
    scorer = ChainScorer(int(record["dimension"]), ScorerSettings(**record["settings"]))
    scorer.load_state_dict({k: torch.from_numpy(v) for k, v in state.items()})
    scorer.eval()
    return scorer, record
