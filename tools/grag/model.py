"""G-RAG's network (spec g_rag §6–7): a 2-layer graph network with edge weights, scored against y.

Each layer is the literal reading of Eq. 7 that the spec offers beside PyG's GCNConv: a node's
own vector and the edge-weighted mean of its neighbours' vectors pass through separate linear
maps, x_v' = W_s x_v + W_n Σ_u ŵ_vu x_u (ŵ: the edge weights of v's row scaled to sum to 1).
With GCNConv's symmetric normalisation a node's own features weigh 1/(degree + 1), a tenth in
these graphs, and the network could not tell a passage holding the question's concepts from its
neighbours; the self/neighbour split keeps both. A node without edges is scored from its own
vector alone, so isolated passages are still ranked (§10).

Two branches share the graph:

- the paper's: x^0 = [Encode(p) ; Encode(a)] → hidden → d, scored yᵀx^L (Eq. 11);
- a relevance branch over four question-aware numbers per passage (cos(q, p), cos(q, a), the
  base ranking's −log rank, the share of question concepts held) → 8 → 1, so that relevance
  can flow along the edges: a passage next to passages that answer the question is worth a look.

    s = yᵀx^L + r^L + a · cos(q, p) + b · (−log base rank)

Both branches' output layers start at zero, and a = 1, b = 0: the untrained network ranks as
dense retrieval does, and training moves away from it only as far as the held-back slice allows.
Torch lives here, for training, apart from ``tools/grag/retriever.py``: retrieval applies the
trained weights in numpy (``GraphScorer`` in ``tools/grag/retriever.py``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from hopgraph.graph_store import Index
from hopgraph.tools.shared.weights import load_weights

from .graph import DocumentGraph, GRAGSettings

RELEVANCE_FEATURES = 8
RELEVANCE_HIDDEN = 8


class GraphLayer(nn.Module):
    """x_v' = W_s x_v + W_n · (edge-weighted mean of the neighbours' x)."""

    def __init__(self, inputs: int, outputs: int, silent: bool = False) -> None:
        super().__init__()
        self.own = nn.Linear(inputs, outputs)
        self.neighbours = nn.Linear(inputs, outputs, bias=False)
        if silent:
            for layer in (self.own, self.neighbours):
                nn.init.zeros_(layer.weight)
            nn.init.zeros_(self.own.bias)

    def forward(self, x: torch.Tensor, mean: torch.Tensor) -> torch.Tensor:
        """Apply the layer; ``mean`` is the row-normalised edge-weight matrix."""
        return self.own(x) + self.neighbours(mean @ x)


class GRAGNet(nn.Module):
    """The graph reranker over one document graph."""

    def __init__(self, dimension: int, settings: GRAGSettings) -> None:
        super().__init__()
        paths = settings.concept_paths != "none"
        self.first = GraphLayer((2 if paths else 1) * dimension, settings.hidden)
        self.second = GraphLayer(settings.hidden, dimension, silent=True)
        relevance = RELEVANCE_FEATURES if paths else RELEVANCE_FEATURES - 1  # no cos(q, a_i)
        self.relevance_first = GraphLayer(relevance, RELEVANCE_HIDDEN)
        self.relevance_second = GraphLayer(RELEVANCE_HIDDEN, 1, silent=True)
        self.dropout = nn.Dropout(settings.dropout)
        self.mix = nn.Parameter(torch.tensor([1.0, 0.0]))

    def forward(self, graph: TensorGraph) -> torch.Tensor:
        """Return one score per candidate."""
        h = self.dropout(torch.relu(self.first(self.dropout(graph.features), graph.mean)))
        h = self.second(h, graph.mean)
        r = torch.relu(self.relevance_first(graph.relevance, graph.mean))
        r = self.relevance_second(r, graph.mean).squeeze(-1)
        return h @ graph.query + r + self.mix[0] * graph.cosine + self.mix[1] * graph.prior


class TensorGraph:
    """A :class:`DocumentGraph` as tensors, with its neighbour-mean operator precomputed."""

    def __init__(self, graph: DocumentGraph, labels: np.ndarray | None = None) -> None:
        self.features = torch.from_numpy(graph.features)
        self.mean = neighbour_mean(torch.from_numpy(graph.weights))
        self.query = torch.from_numpy(graph.query)
        self.cosine = torch.from_numpy(graph.cosine)
        self.prior = torch.from_numpy(graph.prior)
        self.relevance = torch.from_numpy(graph.relevance)
        self.labels = None if labels is None else torch.from_numpy(labels.astype(np.float32))


def neighbour_mean(weights: torch.Tensor) -> torch.Tensor:
    """Rows scaled to sum to 1; an isolated node's row stays 0 (it hears nothing)."""
    sums = weights.sum(dim=1, keepdim=True)
    return torch.where(sums > 0, weights / sums.clamp(min=1e-12), torch.zeros_like(weights))


def new_model(dimension: int, settings: GRAGSettings, seed: int) -> GRAGNet:
    """Build a fresh network; the same seed gives the same initial weights."""
    torch.manual_seed(seed)
    return GRAGNet(dimension, settings)


def score_graph(model: GRAGNet, graph: DocumentGraph) -> np.ndarray:
    """Score a document graph with a model in inference mode, on one thread.

    A graph is about a hundred nodes: split over two cores, each small product cost more in
    hand-offs than it saved (musique dev, G-RAG's query p50 / p95 8.0 / 17.1 ms on torch's
    threads, 3.8 / 4.4 ms on one; evals/bench). Training keeps torch's threads.
    """
    model.eval()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with torch.no_grad():
            return model(TensorGraph(graph)).numpy()
    finally:
        torch.set_num_threads(threads)


def load_model(path: Path, index: Index) -> tuple[GRAGNet, dict[str, Any]]:
    """Load trained G-RAG weights checked against ``index`` (see ``tools/shared/weights.py``)."""
    record, state = load_weights(path, index, "grag")
    # Weights saved before concept_paths existed embedded the path strings.
    record["settings"] = {"concept_paths": "encoded", **record["settings"]}
    model = GRAGNet(int(record["dimension"]), GRAGSettings(**record["settings"]))
    model.load_state_dict({name: torch.from_numpy(value) for name, value in state.items()})
    model.eval()
    return model, record
