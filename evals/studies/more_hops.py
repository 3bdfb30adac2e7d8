"""GNN-Ret's options tried for more hops without an LLM (issue 37), scored per hop count.

``python -m hopgraph.evals.studies.more_hops --data ../shared/data/musique-train --split train``

Each variant is the tuned GNN-Ret with one or two constructor options changed, unguarded
(``keep=0``: the guard would hide what the propagation does). Prints R@2, R@5 and R@5 per
number of gold passages (MuSiQue's 2-, 3- and 4-hop questions). Choices are made on the train
splits and confirmed on dev (docs/methods.md, "More hops without an LLM"). ``--out FILE`` writes
the figures as JSON; kept as evals/results/gnn-variants/SET-SPLIT.json, they render
docs/methods.md's table (:func:`table`, evals/rendering/docs.py).

The figures it makes: docs/methods.md, "More hops without an LLM".
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from hopgraph.core.settings import IndexSettings
from hopgraph.evals.datasets import load_questions
from hopgraph.evals.metrics import recall_at_k
from hopgraph.evals.runner import eval_index
from hopgraph.graph_store import Index
from hopgraph.tools import make_retriever
from hopgraph.tools.gnn_ret.channels import Channel


def channels(entity: float, link: float = 0.2) -> tuple[Channel, ...]:
    """Return the tuned two channels with other α's."""
    return (Channel(("structural", "entity"), entity), Channel(("structural", "link"), link))


VARIANTS: dict[str, dict[str, Any]] = {
    "tuned": {},
    "no expansion": {"expand": 0},
    "expand 1": {"expand": 1},
    "expand 3": {"expand": 3},
    "2 layers": {"layers": 2},
    "3 layers": {"layers": 3},
    "top_k 5": {"top_k": 5},
    "top_k 20": {"top_k": 20},
    "entity α 0.5": {"channels": channels(0.5)},
    "entity α 0.8": {"channels": channels(0.8)},
    "link α 0.4": {"channels": channels(0.65, 0.4)},
    "2 layers, entity α 0.5": {"layers": 2, "channels": channels(0.5)},
    "2 layers, entity α 0.6": {"layers": 2, "channels": channels(0.6)},
}


def score(index: Index, questions: list, options: dict[str, Any]) -> dict[str, Any]:
    """Return R@2, R@5 and R@5 by number of gold passages (percent)."""
    retriever = make_retriever("gnn_ret", index, keep=0, **options)
    r2, r5, by = 0.0, 0.0, {}
    for q in questions:
        docs = list(dict.fromkeys(h.doc_id for h in retriever.retrieve(q.question, 15)))
        r2 += recall_at_k(docs, q.gold_ids, 2)
        r5 += recall_at_k(docs, q.gold_ids, 5)
        by.setdefault(len(q.gold_ids), []).append(recall_at_k(docs, q.gold_ids, 5))
    n = len(questions)
    hops = {str(h): 100 * sum(v) / len(v) for h, v in sorted(by.items())}
    return {"r2": 100 * r2 / n, "r5": 100 * r5 / n, "r5_by_gold": hops}


def main(argv: list[str] | None = None) -> int:
    """Print every variant's row on one split (and write them as JSON with --out)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--split", default="dev")
    parser.add_argument("--out", type=Path, help="write the figures here (JSON)")
    args = parser.parse_args(argv)
    index = eval_index(args.data, IndexSettings(), None, False, with_graphs=True)
    questions = load_questions(args.data, args.split)
    print(f"{args.data.name} / {args.split}: {len(questions)} questions")
    found = {}
    for label, options in VARIANTS.items():
        found[label] = row = score(index, questions, options)
        hops = " ".join(f"{h}: {v:.1f}" for h, v in row["r5_by_gold"].items())
        print(f"{label:<24} R@2 {row['r2']:5.1f}  R@5 {row['r5']:5.1f}  by gold passages {hops}")
    if args.out:
        report = {"data": args.data.name, "split": args.split, "variants": found}
        args.out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return 0


KEPT = Path(__file__).resolve().parents[1] / "results" / "gnn-variants"
COLUMNS = ("musique-train", "hotpotqa-train", "2wiki-train", "musique", "hotpotqa", "2wiki")


def table(kept: Path = KEPT) -> str:
    """Render docs/methods.md's table: R@5 per split, musique dev by number of gold passages."""
    runs = {c: json.loads((kept / f"{c}.json").read_text(encoding="utf-8")) for c in COLUMNS}
    heads = [f"{c} dev" if "train" not in c else c for c in COLUMNS]
    heads[3] = "musique dev (2 / 3 / 4)"
    lines = ["| variant | " + " | ".join(heads) + " |", "|---" * (len(COLUMNS) + 1) + "|"]
    for label in VARIANTS:
        cells = []
        for column in COLUMNS:
            row = runs[column]["variants"][label]
            cell = f"{row['r5']:.1f}"
            if column == "musique":
                cell += " (" + " / ".join(f"{v:.1f}" for v in row["r5_by_gold"].values()) + ")"
            cells.append(cell)
        name = f"**{label}**" if label == "tuned" else label
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
