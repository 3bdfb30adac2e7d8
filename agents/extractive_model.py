"""Which sentence holds the answer: a small linear model over what a sentence shows.

The answer without an LLM (:mod:`hopgraph.agents.extractive`) picks its sentences one at a time.
Each pick gives every sentence left a logit ``w · features`` (features standardised); a
sentence's softmax share among those left is the model's chance that it is the one that holds
the answer (a conditional logit, as a pick chooses one of a set). The first pick reads the
question alone; each further pick also what the chosen sentences say (the bridge names they
brought in, the pages they name, the question words they left wanting).

The answer uses the hand-set weights below (:func:`default_model`). Weights fitted on the train
sets (``python -m hopgraph.evals.extractive --train --out FILE``,
:mod:`hopgraph.evals.extractive.training`) kept more answers on 2wiki, fewer on the other
dev sets and far fewer on both documentation sets (docs/evaluation.md, "An answer without an
LLM"), so they are a study, read back with :func:`load_model`, not the default.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

FIRST = (
    "cosine", "cosine below the best", "cosine below its passage's best", "question words",
    "question words below the best", "log passage rank", "first of its passage",
    "log place in its passage", "log characters", "names its subject",
    "holds a date, asked when", "holds a number, asked how many", "holds a new name, asked who",
    "new name words", "title in the question", "names another passage's title",
    "names an option the question offers",
)  # fmt: skip
"""The features of a sentence for the first pick (``Sentences.first`` in agents/extractive.py)."""
CITED = "passage already cited, by the share of question words left"
"""A further pick's penalty feature: 1 for a passage already cited, times the (rarity-weighted)
share of the question's words the chosen sentences leave wanted. Once the chosen sentences hold
the question's words, the answer is likeliest beside them in the same passage (a one-hop
question: NQ's answer is the top passage's second or third sentence); while words are wanted,
another passage is the next hop."""
FURTHER = (
    *FIRST, "cosine to question and chosen", "question words left", "bridge words",
    "its page is named by a chosen sentence", CITED,
)  # fmt: skip
"""A further pick's features: the first pick's, then what the chosen sentences change."""


@dataclass(frozen=True)
class Stage:
    """One pick's weights over standardised features (a conditional logit: softmax over a pick)."""

    names: tuple[str, ...]
    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray

    def logits(self, features: np.ndarray) -> np.ndarray:
        """Return each row's logit: its softmax share within a pick is its chance to answer."""
        return ((features - self.mean) / self.scale) @ self.coef

    def to_dict(self) -> dict:
        """Return the weights as JSON-ready lists."""
        return {
            "names": list(self.names),
            "mean": self.mean.round(6).tolist(),
            "scale": self.scale.round(6).tolist(),
            "coef": self.coef.round(6).tolist(),
        }

    @classmethod
    def from_dict(cls, data: dict) -> Stage:
        """Return the stage :meth:`to_dict` wrote."""
        arrays = {key: np.asarray(data[key], float) for key in ("mean", "scale", "coef")}
        return cls(tuple(data["names"]), **arrays)


@dataclass(frozen=True)
class SentenceModel:
    """The two stages' weights and the record of how they were fitted."""

    first: Stage
    further: Stage
    record: dict

    def to_json(self) -> str:
        """Return the model as the JSON file :func:`load_model` reads."""
        body = {"record": self.record, "first": self.first.to_dict()}
        return json.dumps({**body, "further": self.further.to_dict()}, indent=1) + "\n"


_KIND = {
    "holds a date, asked when": 0.2,
    "holds a number, asked how many": 0.2,
    "holds a new name, asked who": 0.2,
}
HAND_SET_FIRST = {
    "cosine": 1.0,
    "question words": 1.0,
    "log passage rank": -0.5,
    "names its subject": 0.2,
    "names an option the question offers": 1.0,
    **_KIND,
}
"""The first pick's weights (raw feature units): the scorer chosen on the train sets' grid
(hotpotqa-train, musique-train: cosine plus question words, less half the log of the passage's
rank, a little for a sentence that names its subject or holds what is asked), and a whole point
for naming an option the question offers, as chosen on the three train sets (0, 0.5, 1, 2 tried:
2wiki-train 59.1 → 63.2 %, hotpotqa-train 79.3 → 80.5 %, musique-train unchanged)."""
HAND_SET_FURTHER = {
    "cosine to question and chosen": 1.0,
    "question words left": 1.0,
    "bridge words": 0.5,
    "its page is named by a chosen sentence": 0.5,
    "log passage rank": -0.5,
    "names its subject": 0.2,
    "names an option the question offers": 1.0,
    CITED: -2.0,
    **_KIND,
}
"""A further pick's weights: against the question and the chosen sentences, half a question
word for a bridge word, half for the page a chosen sentence names; a passage already cited
loses two log-odds times the share of the question's words still wanted (CITED). Until
2026-12-06 a cited passage lost 9 whatever was left (one sentence a hop); the share, with -2
chosen on the train sets and NQ dev (-0.5 to -9 and slopes 1, 2, 4 tried), kept 84.1 / 63.5 /
66.1 % on hotpotqa-, musique-, 2wiki-train (80.5 / 63.5 / 63.2 before) and 83.1 % on NQ dev
(68.1): docs/evaluation.md, "An answer without an LLM"."""


def hand_set(names: tuple[str, ...], weights: dict[str, float]) -> Stage:
    """Return a stage of hand-set weights in raw feature units (the others 0)."""
    ones = np.ones(len(names))
    return Stage(names, 0 * ones, ones, np.array([weights.get(name, 0.0) for name in names]))


@cache
def default_model() -> SentenceModel:
    """Return the hand-set model the answer uses."""
    first, further = hand_set(FIRST, HAND_SET_FIRST), hand_set(FURTHER, HAND_SET_FURTHER)
    return SentenceModel(first, further, {"hand-set": True})


def load_model(path: Path) -> SentenceModel:
    """Return a fitted model written by ``--train``, its features checked against this code."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        first, further = Stage.from_dict(data["first"]), Stage.from_dict(data["further"])
        model = SentenceModel(first, further, dict(data["record"]))
    except (KeyError, TypeError, ValueError) as e:
        raise ValueError(f"{path} is not a sentence model written by --train ({e!r})") from e
    if model.first.names != FIRST or model.further.names != FURTHER:
        raise RuntimeError(
            f"{path} was fitted on other features than this code computes; refit it: "
            "`python -m hopgraph.evals.extractive --train`"
        )
    return model


def fit_stage(
    names: Sequence[str],
    x: np.ndarray,
    y: np.ndarray,
    groups: np.ndarray,
    l2: float = 1.0,
    prior: dict[str, float] | None = None,
) -> Stage:
    """Fit weights that give a group's answering sentences most of its softmax.

    A group is one pick of one question; the loss is the conditional logit's (minus the log of
    the positives' softmax share), plus ``l2`` times the squared distance of the standardised
    weights from ``prior`` (the hand-set scorer the model started as, in raw feature units). A
    group with no positive teaches nothing and is left out; a softmax has no bias.
    """
    from scipy.optimize import minimize
    from scipy.special import logsumexp

    keep = np.isin(groups, np.unique(groups[y > 0]))
    x, y, groups = x[keep], y[keep], groups[keep]
    mean = x.mean(0)
    scale = np.where(x.std(0) > 1e-9, x.std(0), 1.0)
    z = (x - mean) / scale
    starts = np.flatnonzero(np.r_[True, groups[1:] != groups[:-1]])
    bounds = list(zip(starts, np.r_[starts[1:], len(groups)], strict=True))

    def loss(w: np.ndarray) -> tuple[float, np.ndarray]:
        logits = z @ w
        total, gradient = 0.5 * l2 * w @ w, l2 * w
        for a, b in bounds:
            part, pos = logits[a:b], y[a:b] > 0
            p_all = np.exp(part - logsumexp(part))
            p_pos = np.exp(part[pos] - logsumexp(part[pos]))
            total -= logsumexp(part[pos]) - logsumexp(part)
            gradient = gradient + p_all @ z[a:b] - p_pos @ z[a:b][pos]
        return total, gradient

    w0 = np.array([(prior or {}).get(name, 0.0) for name in names]) * scale

    def pulled(w: np.ndarray) -> tuple[float, np.ndarray]:
        value, gradient = loss(w)
        return value - 0.5 * l2 * w @ w + 0.5 * l2 * (w - w0) @ (w - w0), gradient - l2 * w0

    w = minimize(pulled, w0, jac=True, method="L-BFGS-B").x
    return Stage(tuple(names), mean, scale, w)


def group_log_loss(stage: Stage, x: np.ndarray, y: np.ndarray, groups: np.ndarray) -> float:
    """Return the mean over groups with a positive of -log(softmax share of the positives)."""
    from scipy.special import logsumexp

    logits, losses = stage.logits(x), []
    for group in np.unique(groups[y > 0]):
        part, pos = logits[groups == group], y[groups == group] > 0
        losses.append(logsumexp(part) - logsumexp(part[pos]))
    return float(np.mean(losses))
