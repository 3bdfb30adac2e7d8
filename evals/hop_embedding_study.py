"""Would a hop classifier over the question's embedding guard better than the bag of words?

``python -m hopgraph.evals.hop_embedding_study --data ../shared/data --method iier``

The selective guard (tools/guard.py) stands aside where the hop classifier calls a question
multi-hop and dense retrieval is unsure. The shipped classifier reads lower-cased words and word
pairs (tools/hop_classifier.py). This study fits a logistic regression on the embedding model's
question vectors instead (the vector dense retrieval computes anyway), on the same training
questions (evals/hop_classifier.py: the train splits against single-hop ones, NQ dev's half A
out of fold), and scores the guard's rule offline on the dev cases of evals/guard_study.py
(their ``--store``), for thresholds ``t`` and dense leads ``gap``; ``mean`` averages the two
classifiers' probabilities. Printed per rule: R@2 on the
multi-hop dev sets and on NQ's halves A and B, NQ's MRR, and whether the rule meets issue 37's
point (multi-hop R@2 within a point of the unguarded method, NQ R@2 and MRR within a point of
dense): ``A`` on half A (where a rule may be chosen), ``A+B`` on both. Not adopted yet
(docs/methods.md, "When to guard").
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from hopgraph.evals.guard_study import Case, cases, scores
from hopgraph.evals.hop_classifier import fit, training_questions
from hopgraph.tools.hop_classifier import shipped

MULTI_HOP_SETS = ("musique", "hotpotqa", "2wiki")
THRESHOLDS = (0.2, 0.25, 0.3, 0.35, 0.4, 0.5)
GAPS = (0.08, 0.1, 0.15, 1.0)


def embedding_probabilities(
    groups: dict[str, list[Case]], data: Path, model: str
) -> dict[str, np.ndarray]:
    """Fit on the training questions' vectors; NQ half A scored out of fold (five refits)."""
    from sklearn.linear_model import LogisticRegression

    from hopgraph.graph_store.embedding import load_embedder

    embedder = load_embedder(model, 64)

    def vectors(texts: list[str]) -> np.ndarray:
        return np.asarray(embedder.embed(texts), dtype=np.float32)

    def fitted(x: np.ndarray, y: list[int]) -> LogisticRegression:
        return LogisticRegression(max_iter=5000, class_weight="balanced").fit(x, y)

    multi, single = training_questions(data)
    half_a = groups["nq-A"]
    xm, xs = vectors(multi), vectors(single[: len(single) - len(half_a)])  # A ends the list
    xa = vectors([c.question for c in half_a])
    out = {"nq-A": np.zeros(len(half_a))}
    for fold in range(5):
        kept = [i for i in range(len(half_a)) if i % 5 != fold]
        model_ = fitted(np.vstack([xm, xs, xa[kept]]), [1] * len(xm) + [0] * (len(xs) + len(kept)))
        held = [i for i in range(len(half_a)) if i % 5 == fold]
        out["nq-A"][held] = model_.predict_proba(xa[held])[:, 1]
    whole = fitted(np.vstack([xm, xs, xa]), [1] * len(xm) + [0] * (len(xs) + len(xa)))
    for name, group in groups.items():
        if name != "nq-A":
            out[name] = whole.predict_proba(vectors([c.question for c in group]))[:, 1]
    return out


def word_probabilities(groups: dict[str, list[Case]], data: Path) -> dict[str, np.ndarray]:
    """Return the shipped classifier's probabilities (NQ half A out of fold, as guard_study)."""
    out = {n: np.array([shipped().multi_hop(c.question) for c in g]) for n, g in groups.items()}
    multi, single = training_questions(data)
    half_a = groups["nq-A"]
    others = single[: len(single) - len(half_a)]
    for fold in range(5):
        model = fit(multi, others + [c.question for i, c in enumerate(half_a) if i % 5 != fold])
        for i, case in enumerate(half_a):
            if i % 5 == fold:
                out["nq-A"][i] = model.multi_hop(case.question)
    return out


def rule_scores(
    groups: dict[str, list[Case]], p: dict[str, np.ndarray], t: float, gap: float, margin: float
) -> dict[str, tuple[float, float, float]]:
    """R@2, R@5, MRR per group with the selective guard at threshold ``t`` and lead ``gap``."""
    out = {}
    for name, group in groups.items():
        for case, probability in zip(group, p[name], strict=True):
            case.multi_hop = float(probability)
        out[name] = scores(group, lambda c: (0, 3) if c.multi_hop >= t and c.lead < gap else 2,
                           margin)  # fmt: skip
    return out


def main(argv: list[str] | None = None) -> int:
    """Print the rules' figures for both classifiers."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="folder holding the datasets")
    parser.add_argument("--method", default="iier", help="a guarded retriever")
    parser.add_argument("--store", type=Path, default=Path("runs/guard-cases"),
                        help="guard_study's stored cases (made on first use)")  # fmt: skip
    parser.add_argument("--model", default="all-MiniLM-L6-v2", help="the indexes' embedder")
    args = parser.parse_args(argv)
    margin = 0.15 if args.method == "iier" else 0.05  # the presets' margins
    groups = {n: cases(args.data / n, args.method, None, args.store) for n in MULTI_HOP_SETS}
    nq = cases(args.data / "nq", args.method, None, args.store)
    groups["nq-A"], groups["nq-B"] = nq[0::2], nq[1::2]
    unguarded = {n: scores(g, None, margin) for n, g in groups.items()}
    dense = {n: scores(g, "dense", margin) for n, g in groups.items()}
    print("unguarded R@2", {n: round(unguarded[n][0], 2) for n in groups})
    print("dense R@2, MRR", {n: (round(dense[n][0], 2), round(dense[n][2], 2)) for n in groups})
    words = word_probabilities(groups, args.data)
    embedding = embedding_probabilities(groups, args.data, args.model)
    both = {n: (words[n] + embedding[n]) / 2 for n in groups}
    for label, p in (("words", words), ("embedding", embedding), ("mean", both)):
        for t in THRESHOLDS:
            for gap in GAPS:
                r = rule_scores(groups, p, t, gap, margin)
                multi = all(r[n][0] >= unguarded[n][0] - 1 for n in MULTI_HOP_SETS)
                near = {h: r[h][0] >= dense[h][0] - 1 and r[h][2] >= dense[h][2] - 1
                        for h in ("nq-A", "nq-B")}  # fmt: skip
                meets = (
                    "A+B" if multi and all(near.values()) else "A" if multi and near["nq-A"] else ""
                )
                figures = " ".join(f"{n} {r[n][0]:.2f}" for n in groups)
                mrr = f"MRR A {r['nq-A'][2]:.2f} B {r['nq-B'][2]:.2f}"
                print(f"{label:<9} t {t:<4} gap {gap:<4} {figures}  {mrr}  {meets}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
