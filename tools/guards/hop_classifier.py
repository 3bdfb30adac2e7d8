"""Does a question look multi-hop? A bag-of-words logistic regression (ours, not in any paper).

The no-harm guard (tools/guards/guard.py) keeps dense retrieval's first chunk first on questions
that one passage answers, and lets a graph method lead on questions that need several. A user's
question does not say which it is; its wording often does ("the X of the Y that Z", "which was
born first"). The model scores a question's words and word pairs (lower-cased) with weights
fitted by ``python -m hopgraph.evals.studies.hop_classifier`` on the train splits' multi-hop
questions against single-hop ones (MuSiQue's stand-alone sub-questions and NQ dev's first half), and
ships as a small JSON table of weights: scoring needs no library and takes microseconds.

A second model reads the question's vector under the index's embedding model (the one dense
retrieval computes anyway): a logistic regression fitted on the same questions, shipped per
model (``hop_classifier-MODEL.json``; all-MiniLM-L6-v2's). Where one ships for the index's model
the guard takes the mean of the two probabilities (:func:`multi_hop`), elsewhere the words'
alone: on the dev sets the mean kept IIER's R@2 within a point of unguarded on hotpotqa, which
neither model did alone within NQ's bound (docs/methods.md, "When to guard").
"""

from __future__ import annotations

import itertools
import json
import math
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

from hopgraph.tools.shared.weights import SHIPPED as SHIPPED_WEIGHTS

WEIGHTS = SHIPPED_WEIGHTS  # tools/shared/weights_data
SHIPPED = WEIGHTS / "hop_classifier.json"
_WORD = re.compile(r"\w+")


def features(question: str) -> list[str]:
    """Return the question's lower-cased words and adjacent word pairs (the model's inputs)."""
    words = _WORD.findall(question.lower())
    return words + [f"{a} {b}" for a, b in itertools.pairwise(words)]


@dataclass(frozen=True)
class HopClassifier:
    """Weights per feature and an intercept: p(multi-hop) = σ(bias + Σ weight × count)."""

    weights: dict[str, float]
    bias: float

    def multi_hop(self, question: str) -> float:
        """Return the probability that ``question`` needs more than one passage."""
        return _sigmoid(self.bias + sum(self.weights.get(f, 0.0) for f in features(question)))

    def save(self, path: Path, about: dict[str, object]) -> None:
        """Write the model (only its non-zero weights) with ``about`` (how it was fitted)."""
        kept = {f: round(w, 6) for f, w in sorted(self.weights.items()) if w}
        body = {"about": about, "bias": self.bias, "weights": kept}
        path.write_text(json.dumps(body, indent=0, ensure_ascii=False) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, path: Path) -> HopClassifier:
        """Read a model written by :meth:`save`."""
        body = json.loads(path.read_text(encoding="utf-8"))
        return cls({f: float(w) for f, w in body["weights"].items()}, float(body["bias"]))


@cache
def shipped() -> HopClassifier:
    """Return the model that ships with hopgraph (read once per process)."""
    return HopClassifier.load(SHIPPED)


def _sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))


@dataclass(frozen=True)
class VectorHopClassifier:
    """p(multi-hop) = σ(bias + w · v) over a question's vector v under one embedding model."""

    model: str
    weights: np.ndarray
    bias: float

    def multi_hop(self, vector: np.ndarray) -> float:
        """Return the probability that the question with this vector needs several passages."""
        return _sigmoid(self.bias + float(np.dot(self.weights, vector)))

    def save(self, path: Path, about: dict[str, object]) -> None:
        """Write the model with ``about`` (how it was fitted)."""
        body = {"about": about, "model": self.model, "bias": self.bias,
                "weights": [round(float(w), 6) for w in self.weights]}  # fmt: skip
        path.write_text(json.dumps(body) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, path: Path) -> VectorHopClassifier:
        """Read a model written by :meth:`save`."""
        body = json.loads(path.read_text(encoding="utf-8"))
        weights = np.asarray(body["weights"], dtype=np.float32)
        return cls(str(body["model"]), weights, float(body["bias"]))


def vector_path(model: str) -> Path:
    """Where the vector model for an embedding model ships (its name made a file name)."""
    return WEIGHTS / f"hop_classifier-{re.sub(r'[^A-Za-z0-9._-]', '_', model)}.json"


@cache
def shipped_vector(model: str) -> VectorHopClassifier | None:
    """Return the vector model shipped for ``model``, or None (read once per process)."""
    path = vector_path(model)
    found = VectorHopClassifier.load(path) if path.is_file() else None
    return found if found is not None and found.model == model else None


def multi_hop(question: str, vector: np.ndarray | None = None, model: str | None = None) -> float:
    """Return the probability that ``question`` needs more than one passage.

    The mean of the words' and the vector's models where one ships for ``model`` (``vector``:
    the question's under it), else the words' alone.
    """
    words = shipped().multi_hop(question)
    found = shipped_vector(model) if vector is not None and model else None
    if found is None or len(found.weights) != len(vector):
        return words
    return (words + found.multi_hop(vector)) / 2
