"""Would a hop classifier over the question's embedding guard better than the bag of words?

``python -m hopgraph.evals.studies.guard_question_vectors --data ../shared/data --method iier``

The selective guard (tools/guards/guard.py) stands aside where the hop classifier calls a question
multi-hop and dense retrieval is unsure. The shipped classifier reads lower-cased words and word
pairs (tools/guards/hop_classifier.py). This study fits a logistic regression on the embedding
model's question vectors instead (the vector dense retrieval computes anyway), on the same training
questions (evals/studies/hop_classifier.py: the train splits against single-hop ones, NQ dev's half
A out of fold), and scores the guard's rule offline on the dev cases of evals/studies/guard_when.py
(their ``--store``), for thresholds ``t`` and dense leads ``gap``; ``mean`` averages the two
classifiers' probabilities. Printed per rule: R@2 on the
multi-hop dev sets and on NQ's halves A and B, NQ's MRR, and whether the rule meets issue 37's
point (multi-hop R@2 within a point of the unguarded method, NQ R@2 and MRR within a point of
dense): ``A`` on half A (where a rule may be chosen), ``A+B`` on both. The guard adopted the
mean (docs/methods.md, "Which classifier"); ``--out`` keeps the figures its table shows.

The figures it makes: docs/methods.md, "No harm: the guard".
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from hopgraph.evals.studies.guard_when import Case, cases, scores
from hopgraph.evals.studies.hop_classifier import (
    fit,
    fit_vectors,
    question_vectors,
    training_questions,
)
from hopgraph.tools.guards.hop_classifier import shipped

MULTI_HOP_SETS = ("musique", "hotpotqa", "2wiki")
CLASSIFIERS = ("words", "embedding", "mean")
THRESHOLDS = (0.2, 0.25, 0.3, 0.35, 0.4, 0.5)
GAPS = (0.08, 0.1, 0.15, 1.0)


def embedding_probabilities(
    groups: dict[str, list[Case]], data: Path, model: str
) -> dict[str, np.ndarray]:
    """Fit on the training questions' vectors as the shipped model is fitted.

    evals/studies/hop_classifier.py's data and fit; NQ half A scored out of fold (five refits).
    """
    multi, single = training_questions(data)
    half_a = groups["nq-A"]
    xm = question_vectors(multi, model)
    xs = question_vectors(single[: len(single) - len(half_a)], model)  # A ends the list
    xa = question_vectors([c.question for c in half_a], model)
    out = {"nq-A": np.zeros(len(half_a))}
    for fold in range(5):
        kept = [i for i in range(len(half_a)) if i % 5 != fold]
        refit = fit_vectors(xm, np.vstack([xs, xa[kept]]), model)
        for i in range(fold, len(half_a), 5):
            out["nq-A"][i] = refit.multi_hop(xa[i])
    whole = fit_vectors(xm, np.vstack([xs, xa]), model)  # the shipped model's data
    for name, group in groups.items():
        if name != "nq-A":
            vectors = question_vectors([c.question for c in group], model)
            out[name] = np.array([whole.multi_hop(v) for v in vectors])
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
    parser.add_argument("--out", type=Path, help="keep every rule's figures here (JSON)")
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
    kept: dict[str, object] = {"method": args.method, "unguarded": unguarded, "dense": dense}
    for label, p in (("words", words), ("embedding", embedding), ("mean", both)):
        for t in THRESHOLDS:
            for gap in GAPS:
                r = rule_scores(groups, p, t, gap, margin)
                kept[f"{label} t {t} gap {gap}"] = r
                missed = misses(r, unguarded, dense)
                multi = not missed & set(MULTI_HOP_SETS)
                meets = (
                    "A+B" if multi and not missed else "A" if multi and "nq-A" not in missed else ""
                )
                figures = " ".join(f"{n} {r[n][0]:.2f}" for n in groups)
                mrr = f"MRR A {r['nq-A'][2]:.2f} B {r['nq-B'][2]:.2f}"
                print(f"{label:<9} t {t:<4} gap {gap:<4} {figures}  {mrr}  {meets}", flush=True)
    if args.out:  # docs/methods.md's classifier table is rendered from it (:func:`table`)
        args.out.write_text(json.dumps(kept, indent=1), encoding="utf-8")
    return 0


Figures = dict[str, tuple[float, float, float]]
"""R@2, R@5 and MRR per group (the multi-hop dev sets, NQ's halves)."""


def misses(r: Figures, unguarded: Figures, dense: Figures) -> set[str]:
    """Return the groups outside issue 37's bound.

    A multi-hop set whose R@2 is more than a point below the unguarded method's; an NQ half
    whose R@2 or MRR is more than a point below dense's.
    """
    out = {g for g in MULTI_HOP_SETS if r[g][0] < unguarded[g][0] - 1}
    return out | {
        h for h in ("nq-A", "nq-B") if r[h][0] < dense[h][0] - 1 or r[h][2] < dense[h][2] - 1
    }


KEPT = Path(__file__).resolve().parents[1] / "results" / "guard"
TABLE_METHODS = {"gnn_ret": 0.08, "iier": 0.15, "naive_ge": 0.08, "grag": 0.08}
"""The guarded methods and their sure leads (``confident``): the table's rule is the tuned one."""


def table(kept: Path = KEPT) -> str:
    """Render methods.md's classifier table from the kept studies (classifier-METHOD.json).

    Per method, R@2 (and NQ's MRR) with no guard, dense alone, and the tuned rule (p ≥ 0.3 and
    dense's lead below the method's sure lead) under each classifier; ✗: outside issue 37's
    bound (multi-hop within a point of unguarded, NQ within a point of dense).
    """
    head = "| method | rule | musique | hotpotqa | 2wiki | nq A: R@2 / MRR | nq B: R@2 / MRR |"
    lines = [head, "|---|---|---|---|---|---|---|"]
    for method, gap in TABLE_METHODS.items():
        study = json.loads((kept / f"classifier-{method}.json").read_text(encoding="utf-8"))
        unguarded, dense = study["unguarded"], study["dense"]
        rows = {"no guard": unguarded, "dense alone": dense}
        rows |= {f"{c} classifier": study[f"{c} t 0.3 gap {gap}"] for c in CLASSIFIERS}
        for n, (label, r) in enumerate(rows.items()):
            # the bound is set by the other two rows
            missed = misses(r, unguarded, dense) if "classifier" in label else set()
            cells = [f"{r[g][0]:.1f}{' ✗' * (g in missed)}" for g in MULTI_HOP_SETS]
            cells += [
                f"{r[h][0]:.1f} / {r[h][2]:.1f}{' ✗' * (h in missed)}" for h in ("nq-A", "nq-B")
            ]
            name = method if n == 0 else ""
            lines.append(f"| {name} | {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
