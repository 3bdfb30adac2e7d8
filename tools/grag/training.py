"""Training G-RAG (spec g_rag §7–8): document graphs with gold labels, two losses.

A candidate is positive when its document is one of the question's gold passages (our data
names them, so no answer-string matching is needed, §2.2). Questions with no positive among
the candidates give no signal and are skipped (§7). Early stopping watches the held-back
slice's MRR over all positives (§9.1).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import numpy as np
import torch
from tqdm.auto import tqdm

from hopgraph.tools.shared.training import FitResult, FitSettings, fit

from .graph import GRAGSettings, GraphBuilder
from .model import GRAGNet, TensorGraph, new_model


def make_graphs(
    builder: GraphBuilder, questions: Iterable[tuple[str, Sequence[str]]], progress: bool = False
) -> list[TensorGraph]:
    """Build the labelled document graph of every (question, gold doc ids) with a positive."""
    doc_of = [chunk.doc_id for chunk in builder.index.chunks.values()]
    graphs = []
    for question, gold in tqdm(list(questions), desc="graphs", unit="q", disable=not progress):
        graph = builder.build(question)
        labels = np.array([doc_of[r] in gold for r in graph.rows], dtype=np.float32)
        if labels.any():
            graphs.append(TensorGraph(graph, labels))
    return graphs


def pairwise_loss(scores: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """G-RAG-RL (Eq. 13): mean hinge max(0, 1 − (s_pos − s_neg)) over all (pos, neg) pairs."""
    positive, negative = scores[labels > 0], scores[labels == 0]
    if len(positive) == 0 or len(negative) == 0:
        return scores.sum() * 0.0
    return torch.relu(1.0 - (positive[:, None] - negative[None, :])).mean()


def cross_entropy_loss(scores: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Eq. 12 as written: −Σ_pos log softmax(s)_pos (a sum over the positives)."""
    return -(labels * torch.log_softmax(scores, dim=0)).sum()


LOSSES: dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {
    "pairwise": pairwise_loss,
    "cross_entropy": cross_entropy_loss,
}


def graph_mrr(model: torch.nn.Module, graph: TensorGraph) -> float:
    """MRR over all of a graph's positives (§9.1)."""
    scores = model(graph)
    ranks = (scores[None, :] > scores[graph.labels > 0][:, None]).sum(dim=1) + 1
    return float((1.0 / ranks.float()).mean())


def train_grag(
    graphs: Sequence[TensorGraph],
    groups: Sequence[int],
    dimension: int,
    settings: GRAGSettings,
    fit_settings: FitSettings,
    on_epoch: Callable[[int, float, float], None] | None = None,
) -> tuple[GRAGNet, FitResult]:
    """Train a fresh network on ``graphs`` (``groups``: each one's dataset), early-stopped.

    The held-back slice takes a tenth of every dataset, and its MRR is averaged per dataset.
    """
    loss = LOSSES[settings.loss]
    model = new_model(dimension, settings, fit_settings.seed)
    result = fit(
        model, graphs, groups, lambda m, g: loss(m(g), g.labels), graph_mrr, fit_settings, on_epoch
    )
    return model, result
