"""Fit GNN-Ret's list reranker (tools/gnn_ret/list_rerank.py) on train splits; cross-validate first.

``python -m hopgraph.evals.studies.list_rerank --data ../shared/data [--out FILE] [--report FILE]``
``python -m hopgraph.evals.studies.list_rerank --compare DATA [DATA ...] [--report FILE]``

For every question of the MuSiQue, HotpotQA and 2Wiki train splits, the propagation's first
:data:`~hopgraph.tools.gnn_ret.list_rerank.DEPTH` passages (GNN-Ret's tuned settings, no reranker,
no guard) and their features; a passage is positive when its document is gold. A logistic
regression (scikit-learn, features standardised, L2 with ``--c``) weighs each set equally: 2Wiki
has four times the questions of the others. ``--folds``-fold cross-validation over questions
(seeded) first gives R@2, R@5 and All@5 of the list's order and of the reranked order per set;
then the model is fitted on every question and written (default: the file hopgraph ships for
all-MiniLM-L6-v2). The eval indexes are cached as `hopgraph eval`'s.

``--compare`` fits nothing: on each dataset's dev split it scores dense, GNN-Ret (tuned) without
the reranker and with it (``--out`` or the shipped one) as `hopgraph eval` does (guard on,
latency with the query embedded).

The figures it makes: docs/methods.md, "Reranking the list".
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from tqdm.auto import tqdm

from hopgraph.core.settings import IndexSettings
from hopgraph.evals.datasets import Question, load_questions
from hopgraph.evals.metrics import all_at_k, recall_at_k
from hopgraph.evals.runner import eval_index, evaluate
from hopgraph.tools import make_retriever
from hopgraph.tools.gnn_ret.list_rerank import DEPTH, ListReranker, list_features, shipped_path

if TYPE_CHECKING:
    from sklearn.preprocessing import StandardScaler

SETS = ("musique-train", "hotpotqa-train", "2wiki-train")
MODEL = "all-MiniLM-L6-v2"


@dataclass(frozen=True)
class Listing:
    """One question's list: its features, which passages are gold, and their documents."""

    set: str
    question: Question
    features: np.ndarray
    gold: np.ndarray
    docs: list[str]


def listings(data: Path, name: str, model: str) -> list[Listing]:
    """Return every train question of ``data / name`` with its list's features under ``model``."""
    settings = IndexSettings(model=model)
    index = eval_index(data / name, settings, None, False, with_graphs=True)
    retriever = make_retriever("gnn_ret", index, rerank=False)
    out = []
    for q in tqdm(load_questions(data / name, "train"), desc=name, leave=False):
        listed = retriever.listed(q.question, DEPTH)
        docs = [index.chunks[index.ids[r]].doc_id for r in listed.rows.tolist()]
        gold = np.array([d in q.gold_ids for d in docs])
        out.append(Listing(name, q, list_features(index, q.question, listed), gold, docs))
    return out


def fit(items: Sequence[Listing], c: float) -> tuple[StandardScaler, np.ndarray, float]:
    """Fit the weighted logistic regression; return the scaler, weights and bias."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    per_set = {s: sum(1 for it in items if it.set == s) for s in {it.set for it in items}}
    x = np.vstack([it.features for it in items])
    y = np.concatenate([it.gold for it in items])
    w = np.concatenate([np.full(len(it.gold), 1.0 / per_set[it.set]) for it in items])
    scaler = StandardScaler().fit(x)
    model = LogisticRegression(C=c, max_iter=5000)
    model.fit(scaler.transform(x), y, sample_weight=w * len(w) / w.sum())
    return scaler, model.coef_[0], float(model.intercept_[0])


def reranker(model: str, scaler: StandardScaler, weights: np.ndarray, bias: float) -> ListReranker:
    """Return the shippable model (the scaler folded in as mean and scale)."""
    return ListReranker(model, scaler.mean_, scaler.scale_, weights, bias)


def figures(scored: Sequence[tuple[Listing, ListReranker | None]]) -> dict[str, float]:
    """Return R@2, R@5 and All@5 (percent): each list in its order, or reranked by its model."""
    r2 = r5 = a5 = 0.0
    for it, model in scored:
        order = np.arange(len(it.docs))
        if model is not None:
            order = np.argsort(-model.scores(it.features), kind="stable")
        docs = list(dict.fromkeys(it.docs[i] for i in order))
        gold = it.question.gold_ids
        r2 += recall_at_k(docs, gold, 2)
        r5 += recall_at_k(docs, gold, 5)
        a5 += all_at_k(docs, gold, 5)
    n = max(len(scored), 1)
    return {"R@2": 100 * r2 / n, "R@5": 100 * r5 / n, "All@5": 100 * a5 / n}


def cross_validate(
    items: list[Listing], folds: int, c: float, seed: int, model_name: str = MODEL
) -> dict[str, dict]:
    """Return each set's figures, list order against reranked, over ``folds`` held-out folds."""
    fold = np.random.default_rng(seed).integers(0, folds, len(items))
    scored: list[tuple[Listing, ListReranker | None]] = []
    for f in range(folds):
        kept = [it for it, k in zip(items, fold, strict=True) if k != f]
        model = reranker(model_name, *fit(kept, c))
        scored += [(it, model) for it, k in zip(items, fold, strict=True) if k == f]
    out = {}
    for name in dict.fromkeys(it.set for it in items):
        mine = [(it, m) for it, m in scored if it.set == name]
        before = figures([(it, None) for it, _ in mine])
        out[name] = {"questions": len(mine), "list": before, "reranked": figures(mine)}
    return out


def compare(data: Path, model: str, rerank: Path) -> dict[str, dict]:
    """Return dense's, GNN-Ret's and reranked GNN-Ret's scores on ``data``'s dev split."""
    index = eval_index(data, IndexSettings(model=model), None, False, with_graphs=True)
    questions = load_questions(data, "dev")
    runs = {
        "dense": make_retriever("dense", index),
        "gnn_ret": make_retriever("gnn_ret", index, rerank=False),
        "gnn_ret reranked": make_retriever("gnn_ret", index, rerank=rerank),
    }
    out = {}
    for label, retriever in runs.items():
        scores = evaluate(retriever, questions, show_progress=False)[0]
        out[label] = {"R@2": scores.recall[2], "R@5": scores.recall[5], "All@5": scores.all[5],
                      "MRR": scores.mrr, "p50_ms": scores.latency_p50_ms,
                      "p95_ms": scores.latency_p95_ms}  # fmt: skip
        row = out[label]
        print(f"{data.name:<12} {label:<17} " + "  ".join(f"{k} {v:6.1f}" for k, v in row.items()))
    return out


def main(argv: list[str] | None = None) -> int:
    """Cross-validate, print the figures, fit on every question and write the model."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data"),
                        help="folder holding the train splits (../shared/data)")  # fmt: skip
    parser.add_argument("--model", default=MODEL, help=f"embedding model to fit for ({MODEL})")
    parser.add_argument("--out", type=Path, help="model file (default: the one shipped for it)")
    parser.add_argument("--report", type=Path, help="write the cross-validation here (JSON)")
    parser.add_argument("--folds", type=int, default=5, help="cross-validation folds (5)")
    parser.add_argument("--c", type=float, default=1.0, help="inverse L2 strength (1.0)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the folds (0)")
    parser.add_argument("--compare", type=Path, nargs="+", metavar="DATA",
                        help="fit nothing: score the reranker on these dev splits")  # fmt: skip
    args = parser.parse_args(argv)
    out = args.out or shipped_path(args.model)
    if args.compare:
        found = {str(data): compare(data, args.model, out) for data in args.compare}
        if args.report:
            args.report.parent.mkdir(parents=True, exist_ok=True)
            args.report.write_text(json.dumps(found, indent=1) + "\n", encoding="utf-8")
        return 0
    items = [it for name in SETS for it in listings(args.data, name, args.model)]
    cv = cross_validate(items, args.folds, args.c, args.seed, args.model)
    for name, row in cv.items():
        before, after = row["list"], row["reranked"]
        print(f"{name:<16} " + "  ".join(
            f"{k} {before[k]:5.1f} → {after[k]:5.1f}" for k in before))  # fmt: skip
    model = reranker(args.model, *fit(items, args.c))
    about = {"sets": list(SETS), "questions": len(items), "c": args.c, "depth": DEPTH,
             "cross_validation": cv, "fitted_by": __name__}  # fmt: skip
    model.save(out, about)
    print(f"{out}: fitted on {len(items)} questions")
    if args.report:
        args.report.parent.mkdir(parents=True, exist_ok=True)
        report = {"folds": args.folds, "seed": args.seed, "c": args.c, "sets": cv}
        args.report.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return 0


KEPT = Path(__file__).resolve().parents[1] / "results" / "list-rerank"


def table(kept: Path = KEPT) -> str:
    """Render docs/methods.md's table: train cross-validation, then every dev set compared."""
    cv = json.loads((kept / "train-cv.json").read_text(encoding="utf-8"))["sets"]
    dev = json.loads((kept / "dev.json").read_text(encoding="utf-8"))
    lines = [
        "| set | R@2 | R@5 | All@5 | MRR | p50 / p95 ms |",
        "|---|---|---|---|---|---|",
    ]
    for name, row in cv.items():
        cells = [
            f"{row['list'][k]:.1f} → **{row['reranked'][k]:.1f}**" for k in ("R@2", "R@5", "All@5")
        ]
        lines.append(f"| {name} ({row['questions']} q, held-out folds) | " + " | ".join(cells)
                     + " | – | – |")  # fmt: skip
    for data, runs in dev.items():
        before, after = runs["gnn_ret"], runs["gnn_ret reranked"]
        cells = [f"{before[k]:.1f} → **{after[k]:.1f}**" for k in ("R@2", "R@5", "All@5", "MRR")]
        ms = " → ".join(f"{run['p50_ms']:.0f} / {run['p95_ms']:.0f}" for run in (before, after))
        lines.append(f"| {Path(data).name} dev | " + " | ".join(cells) + f" | {ms} |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
