"""`hopgraph train gnn_ret | rgnn_ret`: learn GNN-Ret's α per channel (and RGNN-Ret's β)."""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from .errors import InputError

TOP_O = {"gnn_ret": 25, "rgnn_ret": 10}  # the paper's competitive-set sizes (spec §3.4, §4.2)


def train(args: argparse.Namespace) -> None:
    """Learn the parameters, save them with their provenance, and print where."""
    from evals.datasets import load_questions
    from evals.runner import eval_index
    from graph_store.manifest import package_versions
    from tools.gnn_ret import GNNRetriever

    from .commands import settings_from

    data = Path(args.data)
    questions = load_questions(data, args.split, args.limit)
    named_model = args.model or os.environ.get("HOPGRAPH_MODEL")
    index_path = Path(args.index) if args.index else None
    settings = settings_from(args)
    with eval_index(data, settings, index_path, not args.quiet, named_model, True) as idx:
        retriever = GNNRetriever(idx)
        gold_docs = _gold_rows(idx)
        top_o = args.top_o or TOP_O[args.method]
        fit = _fit_recurrent if args.method == "rgnn_ret" else _fit_single
        learned, used, result = fit(retriever, questions, gold_docs, top_o, args)
        out = args.out or idx.directory / "models" / f"{args.method}.json"
        record = {
            "method": args.method,
            "channels": [
                {"edge_types": list(c.edge_types), "alpha": a}
                for c, a in zip(retriever.channels, learned, strict=False)
            ],
            **({"beta": learned[-1]} if args.method == "rgnn_ret" else {}),
            "model": idx.manifest.settings.model,
            "data": str(data),
            "split": args.split,
            "questions": len(questions),
            "samples": used,
            "settings": {"top_o": top_o, "margin": 0.01, "learning_rate": 1.0},
            "losses": result.losses,
            "stopped": result.stopped,
            "versions": package_versions(),
        }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    shown = ", ".join(f"{'+'.join(c['edge_types'])} α {c['alpha']}" for c in record["channels"])
    beta = f", β {record['beta']}" if "beta" in record else ""
    print(f"learned {shown}{beta} on {used} questions ({result.stopped}); wrote {out}")


def _gold_rows(idx: Any) -> dict[str, list[int]]:
    rows: dict[str, list[int]] = {}
    for row, chunk_id in enumerate(idx.passage_graph.ids):
        rows.setdefault(idx.chunk(chunk_id).doc_id, []).append(row)
    return rows


def _progress(args: argparse.Namespace) -> tuple[Any, Callable[[int, float], None]]:
    bar = tqdm(total=args.max_iterations, desc="training", unit="step", disable=args.quiet)

    def step(_: int, loss: float) -> None:
        bar.update(1)
        bar.set_postfix(loss=f"{loss:.4f}")

    return bar, step


def _fit_single(retriever: Any, questions: Sequence[Any], gold_docs: dict, top_o: int, args: Any):
    from tools.gnn_ret_training import make_sample, train_alphas

    samples = [
        s
        for q in tqdm(questions, desc="preparing", unit="q", disable=args.quiet)
        if (gold := {r for d in q.gold_ids for r in gold_docs.get(d, [])})
        and (s := make_sample(retriever, q.question, gold, top_o)) is not None
    ]
    bar, step = _progress(args)
    initial = [c.alpha for c in retriever.channels]
    result = train_alphas(samples, initial, on_step=step, max_iterations=args.max_iterations)
    bar.close()
    return result.alphas, len(samples), result


def _fit_recurrent(
    retriever: Any, questions: Sequence[Any], gold_docs: dict, top_o: int, args: Any
):
    from agents.rgnn_ret.context import Context
    from tools.gnn_ret_training import make_recurrent_sample, step_question, train_recurrent

    if not any(q.decomposition for q in questions):
        raise InputError(
            f"{args.data}: no question has a gold decomposition",
            "RGNN-Ret trains on gold sub-questions (musique-train has them)",
        )
    samples = []
    for q in tqdm(questions, desc="preparing", unit="q", disable=args.quiet):
        answers = [a for _, a in q.decomposition]
        steps = [step_question(text, answers) for text, _ in q.decomposition]
        docs = [gold_docs[d] for d in q.gold_ids if d in gold_docs]
        if steps and docs:
            sample = make_recurrent_sample(retriever, steps, docs, top_o)
            samples += [sample] if sample is not None else []
    bar, step = _progress(args)
    initial = [c.alpha for c in retriever.channels]
    beta = Context.__dataclass_fields__["beta"].default
    result = train_recurrent(
        samples, initial, beta, on_step=step, max_iterations=args.max_iterations
    )
    bar.close()
    return result.alphas, len(samples), result


def add_parser(
    sub: argparse._SubParsersAction,
    index_option: Callable[[argparse.ArgumentParser], None],
    build_options: Callable[[argparse.ArgumentParser], None],
    positive: Callable[[str], int],
) -> None:
    """Add `hopgraph train` to the CLI."""
    p = sub.add_parser(
        "train",
        help="learn GNN-Ret's α per channel (gnn_ret) or with RGNN-Ret's β (rgnn_ret)",
        description="Learn with the paper's hinge loss (gold chunks closer than their top-O "
        "competitors) by full-batch gradient descent on a dataset folder's split: gnn_ret "
        "learns the α per message channel; rgnn_ret learns them with β on the gold "
        "sub-questions (teacher forcing; MuSiQue has them). Writes the values with their "
        "provenance (data, settings, versions, loss curve) to --out, by default "
        "INDEX/models/METHOD.json; use gnn_ret's with `hopgraph eval --gnn-weights FILE`. "
        "Deterministic: same data, same weights.",
    )
    p.add_argument("method", choices=sorted(TOP_O), help="what to train")
    p.add_argument("--data", required=True, metavar="DIR", help="dataset folder")
    p.add_argument("--split", default="train", help="question file (default train)")
    p.add_argument("--limit", type=positive, metavar="N", help="first N questions only")
    p.add_argument("--top-o", type=positive, help="competitive set size O (25; rgnn_ret 10)")
    p.add_argument("--max-iterations", type=positive, default=100, help="step cap (100)")
    p.add_argument("--out", type=Path, metavar="FILE", help="where to write the weights")
    index_option(p)
    build_options(p)
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=train)
