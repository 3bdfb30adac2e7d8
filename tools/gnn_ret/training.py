"""Learning GNN-Ret's α (spec gnn_ret §3.4, Eqs. 5 and 8–11) by autograd, one α per channel.

For each training question with gold chunks S_Y, the competitive set S_O is the ``top_o`` chunks
with the smallest h⁰ (the base distances), and S_{O/Y} = S_O minus S_Y. The loss is the hinge
max(0, r + mean_{S_Y} h¹ − mean_{S_{O/Y}} h¹): gold chunks should end up closer than their
competitors. With one layer the messages come from the constant h⁰, so the top-K sets, the
messages and which chunks receive them are fixed per question; h¹ is then a piecewise-linear
function of the α's and autograd gives Eq. 10–11's gradient exactly. Full-batch gradient descent
with the paper's settings (learning rate 1, α clipped to [0, 1], stop when |gradient| < 0.001,
after 5 rising losses, or after ``max_iterations``), but from the untrained defaults rather than
α = 1: with two channels at α = 1 both equal h⁰, the minimum over channels sends the whole
gradient to the first, and the other α never moves.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from .layers import min_messages
from .retriever import GNNRetriever


@dataclass(frozen=True)
class Sample:
    """One question's h⁰ and per-channel messages on the rows that enter its loss."""

    h0: torch.Tensor  # (rows,)
    messages: torch.Tensor  # (channels, rows); +inf where no message arrives
    gold: torch.Tensor  # (rows,) bool: in S_Y
    rival: torch.Tensor  # (rows,) bool: in S_O \ S_Y


@dataclass
class Training:
    """The learned α per channel and how training went."""

    alphas: list[float]
    losses: list[float] = field(default_factory=list)
    stopped: str = ""


def messages_for(retriever: GNNRetriever, h0: np.ndarray) -> np.ndarray:
    """Return, per channel, the min message each chunk receives from the top-K (inf: none)."""
    out = np.full((len(retriever.adjacencies), len(h0)), np.inf)
    for c, (adjacency, _) in enumerate(retriever.adjacencies):
        who, best = min_messages(h0, adjacency, retriever.top_k)
        out[c, who] = h0[best]
    return out


def make_sample(
    retriever: GNNRetriever, query: str, gold_rows: set[int], top_o: int
) -> Sample | None:
    """Build one question's sample; None when it has no gold chunk or no rival."""
    h0 = retriever.distances(query).astype(np.float64)
    competitive = set(np.argsort(h0, kind="stable")[:top_o].tolist())
    rivals = competitive - gold_rows
    if not gold_rows or not rivals:
        return None
    rows = sorted(gold_rows | rivals)
    messages = messages_for(retriever, h0)[:, rows]
    return Sample(
        h0=torch.tensor(h0[rows]),
        messages=torch.tensor(messages),
        gold=torch.tensor([r in gold_rows for r in rows]),
        rival=torch.tensor([r in rivals for r in rows]),
    )


def blended(sample: Sample, alphas: torch.Tensor, only_lower: bool) -> torch.Tensor:
    """h¹ on the sample's rows: per channel Eq. 4, then the lowest channel (and h⁰)."""
    h0 = sample.h0.unsqueeze(0)
    has = torch.isfinite(sample.messages)
    safe = torch.where(has, sample.messages, h0)
    per_channel = torch.where(has, alphas[:, None] * h0 + (1 - alphas[:, None]) * safe, h0)
    h = per_channel.min(dim=0).values
    return torch.minimum(h, sample.h0) if only_lower else h


def hinge_loss(samples: Sequence[Sample], alphas: torch.Tensor, margin: float, only_lower: bool):
    """Mean over questions of max(0, r + mean gold h¹ − mean rival h¹) (Eq. 5)."""
    losses = []
    for s in samples:
        h = blended(s, alphas, only_lower)
        losses.append(torch.clamp(margin + h[s.gold].mean() - h[s.rival].mean(), min=0.0))
    return torch.stack(losses).mean()


def train_alphas(
    samples: Sequence[Sample],
    initial: Sequence[float],
    only_lower: bool = True,
    margin: float = 0.01,
    **descent: Any,
) -> Training:
    """Learn GNN-Ret's α per channel (Eq. 5) from ``initial``."""
    if not samples:
        raise ValueError("no training question has both gold chunks and competitors")
    return descend(initial, lambda p: hinge_loss(samples, p, margin, only_lower), **descent)


def descend(
    initial: Sequence[float],
    loss_of: Callable[[torch.Tensor], torch.Tensor],
    learning_rate: float = 1.0,
    max_iterations: int = 100,
    tolerance: float = 1e-3,
    patience: int = 5,
    on_step: Callable[[int, float], None] | None = None,
) -> Training:
    """Full-batch gradient descent on parameters in [0, 1] (the paper's optimiser and stops)."""
    params = torch.tensor(list(initial), dtype=torch.float64, requires_grad=True)
    result, rising = Training(alphas=list(initial)), 0
    for step in range(max_iterations):
        loss = loss_of(params)
        (gradient,) = torch.autograd.grad(loss, params)
        value = float(loss.detach())
        rising = rising + 1 if result.losses and value > result.losses[-1] else 0
        result.losses.append(value)
        if on_step:
            on_step(step, value)
        if float(gradient.abs().max()) < tolerance:
            result.stopped = "gradient below tolerance"
            break
        if rising >= patience:
            result.stopped = f"loss rose {patience} times in a row"
            break
        with torch.no_grad():
            params -= learning_rate * gradient
            params.clamp_(0.0, 1.0)
    else:
        result.stopped = f"{max_iterations} iterations"
    result.alphas = [round(float(a), 6) for a in params.detach()]
    return result


# -- RGNN-Ret (spec §4.2): β, learned with the α's on gold sub-questions ---------------------


def step_question(text: str, answers: Sequence[str]) -> str:
    """Fill "#k" with earlier answers and turn "X >> relation" into "relation of X"."""
    for k, answer in enumerate(answers, start=1):
        text = text.replace(f"#{k}", answer)
    subject, arrow, relation = text.partition(">>")
    return f"{relation.strip()} of {subject.strip()}" if arrow else text


@dataclass(frozen=True)
class RecurrentSample:
    """One question's steps, each a :class:`Sample` over the same rows."""

    steps: tuple[Sample, ...]


def greedy_labels(h0s: Sequence[np.ndarray], gold_docs: Sequence[list[int]]) -> list[list[int]]:
    """Appendix B: step t takes the remaining gold document closest to its sub-question."""
    pool, labels = list(range(len(gold_docs))), []
    for h0 in h0s:
        if not pool:
            labels.append([])
            continue
        best = min(pool, key=lambda d: min(h0[r] for r in gold_docs[d]))
        pool.remove(best)
        labels.append(gold_docs[best])
    return labels


def make_recurrent_sample(
    retriever: GNNRetriever,
    subquestions: Sequence[str],
    gold_docs: Sequence[list[int]],
    top_o: int,
) -> RecurrentSample | None:
    """Targets at step t: the labels of steps t…T (Y^{t+}); rivals: step t's top-O others."""
    h0s = [retriever.distances(q).astype(np.float64) for q in subquestions]
    labels = greedy_labels(h0s, gold_docs)
    targets = [{r for later in labels[t:] for r in later} for t in range(len(h0s))]
    rivals = [
        set(np.argsort(h0, kind="stable")[:top_o].tolist()) - targets[t] for t, h0 in enumerate(h0s)
    ]
    if not any(targets) or not all(rivals):
        return None
    rows = sorted(set().union(*targets, *rivals))
    steps = tuple(
        Sample(
            h0=torch.tensor(h0[rows]),
            messages=torch.tensor(messages_for(retriever, h0)[:, rows]),
            gold=torch.tensor([r in targets[t] for r in rows]),
            rival=torch.tensor([r in rivals[t] for r in rows]),
        )
        for t, h0 in enumerate(h0s)
    )
    return RecurrentSample(steps)


def recurrent_loss(
    samples: Sequence[RecurrentSample], params: torch.Tensor, margin: float, only_lower: bool
) -> torch.Tensor:
    """Eq. 7/13: the step hinges on ĥ^t = β·h^t + (1 − β)·ĥ^{t−1}, averaged per question."""
    alphas, beta = params[:-1], params[-1]
    losses = []
    for sample in samples:
        running, steps = None, []
        for step in sample.steps:
            h = blended(step, alphas, only_lower)
            running = h if running is None else beta * h + (1 - beta) * running
            if step.gold.any():
                gap = running[step.gold].mean() - running[step.rival].mean()
                steps.append(torch.clamp(margin + gap, min=0.0))
        if steps:
            losses.append(torch.stack(steps).mean())
    return torch.stack(losses).mean()


def train_recurrent(
    samples: Sequence[RecurrentSample],
    initial_alphas: Sequence[float],
    initial_beta: float,
    only_lower: bool = True,
    margin: float = 0.01,
    **descent: Any,
) -> Training:
    """Learn the α's and β of RGNN-Ret jointly; the result's last value is β."""
    if not samples:
        raise ValueError("no training question has gold sub-questions and competitors")
    return descend(
        [*initial_alphas, initial_beta],
        lambda p: recurrent_loss(samples, p, margin, only_lower),
        **descent,
    )
