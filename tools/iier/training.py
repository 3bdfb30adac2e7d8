"""Training IIER's chain scorer (spec iier §4): shortest-path labels, BCE, early stopping.

For a training question the gold evidence chunks are those of its gold passages (§4.1). From
each gold chunk as a seed, the shortest path over the chunk-interaction graph to every other
gold chunk is a chain the scorer should have grown: at each step (u → v) the history is the
path up to u, the candidates are u's unvisited neighbours (as ``IIERRetriever.chain`` sees
them), and v is positive. Steps with the same history, reached on the way to different gold
chunks, merge, so a candidate on any shortest path is positive; every other candidate is
negative. A question is one training item (its steps together), so the held-back slice holds
whole questions.

The loss is binary cross-entropy on the scores with at most ``NEGATIVES`` negatives drawn per
positive (the code's ``negative_ratio = 7``, §4.1); early stopping watches hop accuracy on the
held-back questions: how often the top-scored candidate of a step is a positive, the choice the
greedy chain actually makes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import numpy as np
import scipy.sparse as sp
import torch
from scipy.sparse.csgraph import shortest_path
from tqdm.auto import tqdm

from hopgraph.graph_store import Index
from hopgraph.tools.shared.training import FitResult, FitSettings, fit

from .scorer import ChainScorer, ScorerSettings, new_scorer
from .steps import Step, scaled_edges

NEGATIVES = 7
"""Negatives drawn per positive for the loss (spec iier §4.1)."""
MAX_HOPS = 4
"""Longest shortest path used: chains hold at most five chunks (spec iier §6, L = 5)."""


def shortest_chains(adjacency: sp.csr_matrix, gold: Sequence[int]) -> list[list[int]]:
    """Return every shortest path (chunk rows) from one gold chunk to another, ≤ ``MAX_HOPS``."""
    if len(gold) < 2:
        return []
    distances, predecessors = shortest_path(
        adjacency, unweighted=True, indices=list(gold), return_predecessors=True
    )
    chains = []
    for i, seed in enumerate(gold):
        for target in gold:
            if target == seed or not np.isfinite(distances[i, target]):
                continue
            if distances[i, target] > MAX_HOPS:
                continue
            path = [int(target)]
            while path[-1] != seed:
                path.append(int(predecessors[i, path[-1]]))
            chains.append(path[::-1])
    return chains


def question_steps(
    index: Index, adjacency: sp.csr_matrix, question: str, gold: Sequence[int]
) -> list[Step]:
    """Return the labelled steps of one question (none when its gold chunks do not connect)."""
    positives: dict[tuple[int, ...], set[int]] = {}
    for chain in shortest_chains(adjacency, gold):
        for hop in range(1, len(chain)):
            positives.setdefault(tuple(chain[:hop]), set()).add(chain[hop])
    if not positives:
        return []
    query = index.embed_query(question).astype(np.float32)
    vectors = index.embedding_matrix
    steps = []
    for history, right in positives.items():
        last = history[-1]
        neighbours = adjacency.indices[adjacency.indptr[last] : adjacency.indptr[last + 1]]
        candidates = [int(n) for n in neighbours if n not in history]
        edges = scaled_edges(index.passage_graph.edge_features_rows(last, candidates))
        steps.append(
            Step(
                question=query,
                path=vectors[list(history)].mean(axis=0).astype(np.float32),
                candidates=vectors[candidates].astype(np.float32),
                edges=edges,
                labels=np.array([c in right for c in candidates], dtype=np.float32),
            )
        )
    return steps


def make_items(
    index: Index, questions: Iterable[tuple[str, Sequence[str]]], progress: bool = False
) -> list[list[Step]]:
    """Return one list of steps per (question, gold doc ids) whose gold chunks connect."""
    adjacency = index.passage_graph.adjacency()
    row_of = index.rows
    by_doc: dict[str, list[int]] = {}
    for chunk_id, chunk in index.chunks.items():
        by_doc.setdefault(chunk.doc_id, []).append(row_of[chunk_id])
    items = []
    for question, gold_docs in tqdm(list(questions), desc="chains", unit="q", disable=not progress):
        gold = sorted({row for doc in gold_docs for row in by_doc.get(doc, ())})
        steps = question_steps(index, adjacency, question, gold)
        if steps:
            items.append(steps)
    return items


def step_loss(scorer: ChainScorer, steps: Sequence[Step]) -> torch.Tensor:
    """BCE over each step's positives and up to ``NEGATIVES`` drawn negatives per positive."""
    losses = []
    for step in steps:
        scores = scorer(step)
        labels = torch.from_numpy(step.labels)
        positive = torch.nonzero(labels > 0).squeeze(-1)
        negative = torch.nonzero(labels == 0).squeeze(-1)
        # torch's global generator draws: seeded by the training loop, so runs repeat exactly
        drawn = negative[torch.randperm(len(negative))[: NEGATIVES * len(positive)]]
        chosen = torch.cat([positive, drawn])
        losses.append(
            torch.nn.functional.binary_cross_entropy_with_logits(scores[chosen], labels[chosen])
        )
    return torch.stack(losses).mean()


def hop_accuracy(scorer: ChainScorer, steps: Sequence[Step]) -> float:
    """Share of a question's steps whose top-scored candidate is a positive."""
    hits = [float(step.labels[int(torch.argmax(scorer(step)))] > 0) for step in steps]
    return float(np.mean(hits)) if hits else 0.0


def train_iier(
    items: Sequence[Sequence[Step]],
    groups: Sequence[int],
    dimension: int,
    settings: ScorerSettings,
    fit_settings: FitSettings,
    on_epoch: Callable[[int, float, float], None] | None = None,
) -> tuple[ChainScorer, FitResult]:
    """Train a fresh scorer on ``items`` (questions; ``groups``: their datasets), early-stopped.

    The held-back questions are a tenth of every dataset; hop accuracy is averaged per question,
    then per dataset.
    """
    scorer = new_scorer(dimension, settings, fit_settings.seed)
    result = fit(scorer, items, groups, step_loss, hop_accuracy, fit_settings, on_epoch)
    return scorer, result
