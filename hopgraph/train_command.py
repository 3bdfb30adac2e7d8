"""`hopgraph train gnn_ret`: learn GNN-Ret's α per channel on a training split."""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Callable
from pathlib import Path

from tqdm.auto import tqdm

from .errors import InputError


def train(args: argparse.Namespace) -> None:
    """Learn the α's, save them with their provenance, and print where."""
    from evals.datasets import load_questions
    from evals.runner import eval_index
    from graph_store.manifest import package_versions
    from tools.gnn_ret import GNNRetriever
    from tools.gnn_ret_training import make_sample, train_alphas

    from .commands import settings_from

    if args.method != "gnn_ret":
        raise InputError(f"no trainer for {args.method!r} yet", "train gnn_ret")
    data = Path(args.data)
    questions = load_questions(data, args.split, args.limit)
    named_model = args.model or os.environ.get("HOPGRAPH_MODEL")
    index_path = Path(args.index) if args.index else None
    with eval_index(
        data, settings_from(args), index_path, not args.quiet, named_model, True
    ) as idx:
        retriever = GNNRetriever(idx)
        rows_of_doc: dict[str, list[int]] = {}
        for row, chunk_id in enumerate(idx.passage_graph.ids):
            rows_of_doc.setdefault(idx.chunk(chunk_id).doc_id, []).append(row)
        samples = [
            s
            for q in tqdm(questions, desc="preparing", unit="q", disable=args.quiet)
            if (gold := {r for d in q.gold_ids for r in rows_of_doc.get(d, [])})
            and (s := make_sample(retriever, q.question, gold, args.top_o)) is not None
        ]
        bar = tqdm(total=args.max_iterations, desc="training α", unit="step", disable=args.quiet)
        result = train_alphas(
            samples,
            [c.alpha for c in retriever.channels],
            on_step=lambda step, loss: (bar.update(1), bar.set_postfix(loss=f"{loss:.4f}")),
            max_iterations=args.max_iterations,
        )
        bar.close()
        out = args.out or idx.directory / "models" / "gnn_ret.json"
        record = {
            "method": "gnn_ret",
            "channels": [
                {"edge_types": list(c.edge_types), "alpha": a}
                for c, a in zip(retriever.channels, result.alphas, strict=True)
            ],
            "model": idx.manifest.settings.model,
            "data": str(data),
            "split": args.split,
            "questions": len(questions),
            "samples": len(samples),
            "settings": {"top_o": args.top_o, "margin": 0.01, "learning_rate": 1.0},
            "losses": result.losses,
            "stopped": result.stopped,
            "versions": package_versions(),
        }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    alphas = ", ".join(f"{'+'.join(c['edge_types'])} α {c['alpha']}" for c in record["channels"])
    print(f"learned {alphas} on {len(samples)} questions ({result.stopped}); wrote {out}")


def add_parser(
    sub: argparse._SubParsersAction,
    index_option: Callable[[argparse.ArgumentParser], None],
    build_options: Callable[[argparse.ArgumentParser], None],
    positive: Callable[[str], int],
) -> None:
    """Add `hopgraph train` to the CLI."""
    p = sub.add_parser(
        "train",
        help="learn a method's parameters on a training split (gnn_ret: α per channel)",
        description="Learn GNN-Ret's α per channel with the paper's hinge loss (gold chunks "
        "closer than their top-O competitors) by full-batch gradient descent, on a dataset "
        "folder's split. Writes the α's with their provenance (data, settings, versions, "
        "loss curve) to --out, by default INDEX/models/gnn_ret.json; use them with "
        "`hopgraph eval --gnn-weights FILE`. Deterministic: same data, same weights.",
    )
    p.add_argument("method", choices=["gnn_ret"], help="what to train")
    p.add_argument("--data", required=True, metavar="DIR", help="dataset folder")
    p.add_argument("--split", default="train", help="question file (default train)")
    p.add_argument("--limit", type=positive, metavar="N", help="first N questions only")
    p.add_argument("--top-o", type=positive, default=25, help="competitive set size O (25)")
    p.add_argument("--max-iterations", type=positive, default=100, help="step cap (100)")
    p.add_argument("--out", type=Path, metavar="FILE", help="where to write the weights")
    index_option(p)
    build_options(p)
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=train)
