"""GNN-Ret's message channels: the edge types a message travels and its α (Eq. 4).

Learned channels (`hopgraph train gnn_ret`) are read back here, and RGNN-Ret's recurrent merge
(Eq. 6) blends one step's distances with the last.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hopgraph.core.errors import IndexStateError, InputError
from hopgraph.graph_store import Index
from hopgraph.graph_store.graphs.passage_graph import EDGE_TYPES


@dataclass(frozen=True)
class Channel:
    """One message type: the passage-graph edge types it travels and its blend weight α (Eq. 4)."""

    edge_types: tuple[str, ...]
    alpha: float

    def __post_init__(self) -> None:
        if not 0.0 <= self.alpha <= 1.0:
            raise ValueError(f"alpha must be in [0, 1], got {self.alpha}")
        unknown = set(self.edge_types) - set(EDGE_TYPES)
        if unknown or not self.edge_types:
            raise ValueError(f"edge types must be some of {EDGE_TYPES}, got {self.edge_types}")


WEIGHTS_HINT = "train them for this index's model: `hopgraph train gnn_ret --data DIR`"


PAPER_CHANNELS = (Channel(("structural", "entity"), 0.5),)
"""The paper's graph: structure and keyword (shared-entity) edges, untyped, one α of 0.5."""


DEFAULT_CHANNELS = (Channel(("structural", "entity"), 0.65), Channel(("structural", "link"), 0.2))


def recurrent_merge(h: np.ndarray, previous: np.ndarray, beta: float) -> np.ndarray:
    """RGNN-Ret's Eq. 6: ĥ^t = β·h^t + (1 − β)·ĥ^{t−1} (this step's distances, blended)."""
    return beta * h + (1 - beta) * previous


def load_channels(path: Path, index: Index) -> tuple[Channel, ...]:
    """Read learned channels (`hopgraph train gnn_ret`); refuse ones made for another model."""
    try:
        saved = json.loads(path.read_text(encoding="utf-8"))
        channels = tuple(
            Channel(tuple(c["edge_types"]), float(c["alpha"])) for c in saved["channels"]
        )
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise InputError(f"{path}: not a GNN-Ret weights file ({err})", WEIGHTS_HINT) from err
    model = index.manifest.settings.model
    if saved.get("model") != model:
        raise IndexStateError(
            f"{path} was trained on an index embedded with {saved.get('model')!r}; "
            f"this index uses {model!r}",
            WEIGHTS_HINT,
        )
    return channels
