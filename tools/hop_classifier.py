"""Does a question look multi-hop? A bag-of-words logistic regression (ours, not in any paper).

The no-harm guard (tools/guard.py) keeps dense retrieval's first chunk first on questions that
one passage answers, and lets a graph method lead on questions that need several. A user's
question does not say which it is; its wording often does ("the X of the Y that Z", "which was
born first"). The model scores a question's words and word pairs (lower-cased) with weights
fitted by ``python -m hopgraph.evals.hop_classifier`` on the train splits' multi-hop questions
against single-hop ones (MuSiQue's stand-alone sub-questions and NQ dev's first half), and ships
as a small JSON table of weights: scoring needs no library and takes microseconds.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

SHIPPED = Path(__file__).parent / "weights_data" / "hop_classifier.json"
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
        z = self.bias + sum(self.weights.get(f, 0.0) for f in features(question))
        return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))

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
