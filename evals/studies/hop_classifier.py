"""Fit the guard's hop classifier (tools/guards/hop_classifier.py) on train splits, NQ dev's half A.

``python -m hopgraph.evals.studies.hop_classifier --data ../shared/data [--out FILE] [--model
NAME]``

Multi-hop class: every question of the MuSiQue, HotpotQA and 2Wiki train splits. Single-hop
class: MuSiQue train's sub-questions that stand alone (no ``#1`` placeholder, no ``a >> b``
relation form) and the odd-numbered half of NQ dev (A: the half the guard study chooses on; the
even half B is left for checking). A logistic regression (scikit-learn's defaults, classes
balanced) over tools.hop_classifier.features; the fitted weights ship as
tools/shared/weights_data/hop_classifier.json. The same questions' vectors under ``--model``
(default all-MiniLM-L6-v2) fit the vector model, shipped as
tools/shared/weights_data/hop_classifier-MODEL.json.

The figures it makes: docs/methods.md, "No harm: the guard" (the classifier it ships).
"""

from __future__ import annotations

import argparse
import sys
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from hopgraph.evals.datasets import load_questions
from hopgraph.tools.guards.hop_classifier import (
    SHIPPED,
    HopClassifier,
    VectorHopClassifier,
    features,
    vector_path,
)

if TYPE_CHECKING:
    from hopgraph.graph_store.embedding.embedders import Embedder

MULTI_HOP_SETS = ("musique-train", "hotpotqa-train", "2wiki-train")


def training_questions(data: Path) -> tuple[list[str], list[str]]:
    """Return (multi-hop questions, single-hop questions) from the folders under ``data``."""
    multi, single = [], []
    for name in MULTI_HOP_SETS:
        for q in load_questions(data / name, "train"):
            multi.append(q.question)
            single += [step for step, _ in q.decomposition if "#" not in step and ">>" not in step]
    single += [q.question for q in load_questions(data / "nq", "dev")[0::2]]
    return multi, single


def fit(multi: list[str], single: list[str]) -> HopClassifier:
    """Fit the logistic regression and return it as a HopClassifier."""
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.linear_model import LogisticRegression

    vectorizer = CountVectorizer(analyzer=features, min_df=2)
    x = vectorizer.fit_transform(multi + single)
    y = [1] * len(multi) + [0] * len(single)
    model = LogisticRegression(max_iter=5000, class_weight="balanced").fit(x, y)
    names = vectorizer.get_feature_names_out()
    weights = dict(zip(names, model.coef_[0].tolist(), strict=True))
    return HopClassifier(weights, float(model.intercept_[0]))


def fit_vectors(multi: np.ndarray, single: np.ndarray, model: str) -> VectorHopClassifier:
    """Fit the same regression on question vectors (rows) under the embedding ``model``."""
    from sklearn.linear_model import LogisticRegression

    x = np.vstack([multi, single])
    y = [1] * len(multi) + [0] * len(single)
    fitted = LogisticRegression(max_iter=5000, class_weight="balanced").fit(x, y)
    return VectorHopClassifier(
        model, fitted.coef_[0].astype(np.float32), float(fitted.intercept_[0])
    )


def question_vectors(texts: list[str], model: str) -> np.ndarray:
    """Embed questions as the index's query embedder does."""
    return np.asarray(_query_embedder(model).embed(texts))


@cache
def _query_embedder(model: str) -> Embedder:
    from hopgraph.core.settings import IndexSettings
    from hopgraph.graph_store.embedding.embedders import embedder_for

    return embedder_for(IndexSettings(model=model), queries=True)


def main(argv: list[str] | None = None) -> int:
    """Fit on ``--data`` and write the models (default: the ones hopgraph ships)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="folder holding the datasets")
    parser.add_argument("--out", type=Path, default=SHIPPED, help="the words model's file")
    parser.add_argument("--model", default="all-MiniLM-L6-v2", help="embedding model to fit for")
    parser.add_argument(
        "--vector-out", type=Path, help="the vector model's file (default: shipped)"
    )
    args = parser.parse_args(argv)
    multi, single = training_questions(args.data)
    model = fit(multi, single)
    about = {"multi_hop": len(multi), "single_hop": len(single), "fitted_by": __name__}
    model.save(args.out, about)
    print(
        f"{args.out}: {len(model.weights)} features from {len(multi)} multi-hop and "
        f"{len(single)} single-hop questions"
    )
    vectors = fit_vectors(
        question_vectors(multi, args.model), question_vectors(single, args.model), args.model
    )
    out = args.vector_out or vector_path(args.model)
    vectors.save(out, about)
    print(f"{out}: {len(vectors.weights)} weights over {args.model}'s question vectors")
    return 0


if __name__ == "__main__":
    sys.exit(main())
