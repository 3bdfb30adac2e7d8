"""The training loop the trained retrievers share: seeded, mini-batched, early-stopped.

Same items + same seed ⇒ same weights: the seed fixes the initial weights (set by the caller
before building the model), the held-back slice, the batch order and dropout. Early stopping
watches a held-back slice of the training questions (never the dev split), drawn from every
training dataset and averaged with every dataset weighing the same: after every epoch the
slice's metric (higher is better) is measured, the best weights so far are kept, and training
stops after ``patience`` epochs without a gain. The untrained network is the first candidate, so
training that does not help on the held-back slice returns the weights it started with.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np
import torch
from torch import nn

T = TypeVar("T")


@dataclass(frozen=True)
class FitSettings:
    """Optimiser and stopping knobs."""

    seed: int = 0
    epochs: int = 30
    patience: int = 4
    batch_size: int = 5
    learning_rate: float = 1e-3
    weight_decay: float = 0.01
    held_out: float = 0.1
    """Share of the training items held back for early stopping."""
    keep_untrained: bool = True
    """Count the untrained network as epoch 0's candidate; off, the best trained epoch is kept
    even where it is worse on the held-back slice (to measure what training does)."""


@dataclass
class FitResult:
    """What a run did: the kept weights and the curves that chose them."""

    state: dict[str, Any]
    best_epoch: int
    stopped: str
    losses: list[float] = field(default_factory=list)
    held_out: list[float] = field(default_factory=list)
    """The held-back metric per epoch, the untrained network's first."""


def hold_out(
    items: Sequence[T], fraction: float, seed: int, groups: Sequence[int] | None = None
) -> tuple[list[T], list[T]]:
    """Split items into (train, held back) by a seeded permutation; at least one each.

    With ``groups`` (say, the dataset each item comes from) every group gives its own share,
    so a small dataset is not left out of the slice that picks the epoch.
    """
    if len(items) < 2:
        raise ValueError(f"need at least 2 training items to hold one back, got {len(items)}")
    groups = [0] * len(items) if groups is None else list(groups)
    rng = np.random.default_rng(seed)
    train: list[int] = []
    held: list[int] = []
    for group in sorted(set(groups)):
        members = rng.permutation([i for i, g in enumerate(groups) if g == group]).tolist()
        count = min(max(1, round(len(members) * fraction)), len(members) - 1)
        held += members[:count]
        train += members[count:]
    if not held:  # every group a single item
        held.append(train.pop(0))
    return [items[i] for i in train], [items[i] for i in held]


def balanced_mean(values: Sequence[float], groups: Sequence[int]) -> float:
    """Return the mean over groups of each group's mean: every dataset weighs the same."""
    by_group: dict[int, list[float]] = {}
    for value, group in zip(values, groups, strict=True):
        by_group.setdefault(group, []).append(value)
    return float(np.mean([np.mean(v) for v in by_group.values()])) if by_group else 0.0


def fit(
    model: nn.Module,
    items: Sequence[T],
    groups: Sequence[int],
    loss_of: Callable[[nn.Module, T], torch.Tensor],
    metric_of: Callable[[nn.Module, T], float],
    settings: FitSettings,
    on_epoch: Callable[[int, float, float], None] | None = None,
) -> FitResult:
    """Train ``model`` with AdamW on mini-batches; keep the weights best on a held-back slice.

    ``groups`` names each item's dataset: the slice takes ``settings.held_out`` of every one,
    and ``metric_of`` (per item) is averaged per dataset, then over datasets.
    """
    rows, held_rows = hold_out(range(len(items)), settings.held_out, settings.seed, groups)
    train = [items[i] for i in rows]

    def held_metric(m: nn.Module) -> float:
        return balanced_mean(
            [metric_of(m, items[i]) for i in held_rows], [groups[i] for i in held_rows]
        )

    torch.manual_seed(settings.seed)
    rng = np.random.default_rng(settings.seed)
    optimiser = torch.optim.AdamW(
        model.parameters(), lr=settings.learning_rate, weight_decay=settings.weight_decay
    )
    untrained = _measure(model, held_metric)
    best = untrained if settings.keep_untrained else float("-inf")
    result = FitResult(copy.deepcopy(model.state_dict()), 0, "epoch limit", [], [untrained])
    waited = 0
    for epoch in range(1, settings.epochs + 1):
        model.train()
        order, total = rng.permutation(len(train)), 0.0
        for start in range(0, len(order), settings.batch_size):
            batch = order[start : start + settings.batch_size]
            optimiser.zero_grad()
            loss = torch.stack([loss_of(model, train[i]) for i in batch]).mean()
            loss.backward()
            optimiser.step()
            total += float(loss.detach()) * len(batch)
        result.losses.append(total / len(train))
        metric = _measure(model, held_metric)
        result.held_out.append(metric)
        if on_epoch is not None:
            on_epoch(epoch, result.losses[-1], metric)
        if metric > best:
            best, waited = metric, 0
            result.state, result.best_epoch = copy.deepcopy(model.state_dict()), epoch
        else:
            waited += 1
            if waited >= settings.patience:
                result.stopped = f"no gain on the held-back slice for {waited} epochs"
                break
    model.load_state_dict(result.state)
    model.eval()
    return result


def _measure(model: nn.Module, metric: Callable[[nn.Module], float]) -> float:
    model.eval()
    with torch.no_grad():
        return float(metric(model))
