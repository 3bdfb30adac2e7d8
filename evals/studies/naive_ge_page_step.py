"""NaiveGE's fusion: the page step (tuned) against GEAR's RRF (Eq. 3) and the hybrid base.

    python -m hopgraph.evals.studies.naive_ge_page_step --data ../shared/data
        --nq-dev runs/folds/nq-dev --out evals/results/naive-ge-fusion.json

Each row is a retriever of the tuned preset with one option changed (``fusion``), run over the
dev splits of musique, hotpotqa and 2wiki, NQ's half that G-RAG never trained on
(``python -m hopgraph.evals.split_dataset --data ../shared/data/nq --into runs/folds``), and the
hotpotqa and musique train splits, which were never used to choose the rule. The JSON it writes
renders docs/methods.md's table (:func:`table`, evals/rendering/docs.py).

The figures it makes: docs/methods.md, "NaiveGE: page step against RRF".
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from hopgraph.core.settings import IndexSettings
from hopgraph.evals.datasets import load_questions
from hopgraph.evals.runner import eval_index, evaluate
from hopgraph.tools import make_retriever

ROWS: dict[str, tuple[str, dict[str, Any]]] = {
    "hybrid (the base)": ("hybrid", {}),
    "`rrf` (Eq. 3)": ("naive_ge", {"fusion": "rrf"}),
    "**`page_step`** (tuned)": ("naive_ge", {}),
}
DEV = ("musique", "hotpotqa", "2wiki")
TRAIN = ("hotpotqa-train", "musique-train")
KEPT = Path(__file__).resolve().parents[1] / "results" / "naive-ge-fusion.json"


def run(data: Path, split: str) -> dict[str, dict[str, float]]:
    """Return each row's R@2, R@5, R@15 and MRR (percent) on one split."""
    index = eval_index(data, IndexSettings(), None, False, with_graphs=True,
                       with_triple_vectors=True)  # fmt: skip
    questions = load_questions(data, split)
    found = {}
    for label, (method, options) in ROWS.items():
        scores, _ = evaluate(make_retriever(method, index, **options), questions, (2, 5, 15))
        found[label] = {
            "r2": scores.recall[2], "r5": scores.recall[5], "r15": scores.recall[15],
            "mrr": scores.mrr,
        }  # fmt: skip
    return found


def table(kept: Path = KEPT) -> str:
    """Render docs/methods.md's table: R@2 / R@5 / R@15 on dev, NQ R@2 / MRR, train R@5."""
    runs = json.loads(kept.read_text(encoding="utf-8"))
    head = [*DEV, "nq-dev", *(f"{name} R@5" for name in TRAIN)]
    lines = ["| fusion | " + " | ".join(head) + " |", "|---" * (len(head) + 1) + "|"]
    for label in ROWS:
        cells = [" / ".join(f"{runs[s][label][k]:.1f}" for k in ("r2", "r5", "r15")) for s in DEV]
        cells.append(f"{runs['nq-dev'][label]['r2']:.1f} / {runs['nq-dev'][label]['mrr']:.1f}")
        cells += [f"{runs[s][label]['r5']:.1f}" for s in TRAIN]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run every row on every split and write the figures."""
    parser = argparse.ArgumentParser(
        prog="python -m hopgraph.evals.studies.naive_ge_page_step",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--data", type=Path, required=True, help="the datasets folder")
    parser.add_argument("--nq-dev", type=Path, required=True, help="NQ's held-out half")
    parser.add_argument("--out", type=Path, required=True, help="where to write the figures")
    args = parser.parse_args(argv)
    splits = [(args.data / s, "dev", s) for s in DEV] + [(args.nq_dev, "dev", "nq-dev")]
    splits += [(args.data / s, "train", s) for s in TRAIN]
    runs = {name: run(folder, split) for folder, split, name in splits}
    args.out.write_text(json.dumps(runs, indent=1) + "\n", encoding="utf-8")
    print(table(args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
