"""`hopgraph train`: GNN-Ret's α per channel (RGNN-Ret's β), G-RAG's reranker, IIER's scorer."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from hopgraph.cli.options import build_options, index_option, output_file, positive
from hopgraph.core.errors import InputError

TOP_O = {"gnn_ret": 25, "rgnn_ret": 10}  # the paper's competitive-set sizes (spec §3.4, §4.2)
NETWORKS = ("grag", "iier")
METHODS = (*TOP_O, *NETWORKS)


def train(args: argparse.Namespace) -> None:
    """Learn the parameters, save them with their provenance, and print where."""
    if args.method in NETWORKS:
        return train_network(args)
    if len(args.data) > 1:
        raise InputError(f"{args.method} trains on one dataset", "give --data once")
    return train_values(args, Path(args.data[0]))


def _open(args: argparse.Namespace, data: Path) -> Any:
    from hopgraph.core.settings import named_setting
    from hopgraph.evals.runner import eval_index

    from .documents import settings_from

    named_model = args.model or named_setting("model")
    index_path = Path(args.index) if args.index else None
    return eval_index(data, settings_from(args), index_path, not args.quiet, named_model, True)


def train_network(args: argparse.Namespace) -> None:
    """Train G-RAG's or IIER's network on one or more datasets; save it with its provenance."""
    from tqdm.auto import tqdm

    from hopgraph.evals.datasets import load_questions
    from hopgraph.graph_store.stores.manifest import package_versions
    from hopgraph.tools.shared.training import FitSettings
    from hopgraph.tools.shared.weights import save_weights

    if len(args.data) > 1 and (args.index or not args.out):
        raise InputError(
            "training on several datasets uses their cached indexes and needs --out",
            "drop --index and name the weights file with --out FILE",
        )
    trainer = NetworkTrainer.for_method(args)
    items: list[Any] = []
    groups: list[int] = []
    sources, vectors = [], set()
    for group, folder in enumerate(map(Path, args.data)):
        questions = load_questions(folder, args.split, args.limit)
        with _open(args, folder) as idx:
            vectors.add((idx.manifest.settings.model, idx.manifest.embedder["dimension"]))
            found = trainer.items(idx, [(q.question, set(q.gold_ids)) for q in questions])
            items += found
            groups += [group] * len(found)
            sources.append({"data": str(folder), "questions": len(questions), "used": len(found)})
            out = args.out or idx.directory / "models" / f"{args.method}.pt"
    if len(vectors) != 1:
        raise InputError(
            f"the datasets' indexes use different embedding models: {sorted(vectors)}",
            "build them all with the same --model",
        )
    if len(items) < 2:
        raise InputError(
            f"only {len(items)} question(s) give {trainer.signal}",
            "give more training questions (drop --limit or add --data)",
        )
    ((model_name, dimension),) = vectors
    fit_settings = FitSettings(
        seed=args.seed,
        epochs=args.epochs,
        patience=args.patience,
        learning_rate=args.learning_rate,
        keep_untrained=not args.always_trained,
    )
    bar = tqdm(total=fit_settings.epochs, desc="training", unit="epoch", disable=args.quiet)

    def on_epoch(_: int, loss: float, held: float) -> None:
        bar.update(1)
        bar.set_postfix({"loss": f"{loss:.4f}", f"held_out_{trainer.metric}": f"{held:.3f}"})

    network, result = trainer.train(items, groups, dimension, fit_settings, on_epoch)
    bar.close()
    record = {
        "method": args.method,
        "model": model_name,
        "dimension": dimension,
        "settings": asdict(trainer.settings),
        "fit": asdict(fit_settings),
        "data": sources,
        "split": args.split,
        "best_epoch": result.best_epoch,
        "stopped": result.stopped,
        "losses": result.losses,
        f"held_out_{trainer.metric}": result.held_out,
        "versions": package_versions(),
    }
    save_weights(Path(out), record, network.state_dict())
    print(
        f"trained {args.method} on {len(items)} questions: held-back {trainer.metric} "
        f"{result.held_out[0]:.3f} untrained → {result.held_out[result.best_epoch]:.3f} at epoch "
        f"{result.best_epoch} ({result.stopped}); wrote {out}"
    )


@dataclass
class NetworkTrainer:
    """What differs between the trained networks: items, settings, the training function."""

    settings: Any
    items: Callable[[Any, list[tuple[str, set[str]]]], list[Any]]
    train: Callable[..., tuple[Any, Any]]
    metric: str
    """The held-back metric early stopping watches."""
    signal: str
    """What a question must give to be a training item (for the error message)."""

    @classmethod
    def for_method(cls, args: argparse.Namespace) -> NetworkTrainer:
        """Return the trainer of ``args.method`` with the settings the options give."""
        progress = not args.quiet
        if args.method == "grag":
            from hopgraph.tools import make_retriever
            from hopgraph.tools.grag.graph import GRAGSettings, GraphBuilder
            from hopgraph.tools.grag.training import make_graphs, train_grag

            grag = GRAGSettings(
                hidden=args.hidden or 64,
                loss=args.loss,
                n=args.candidates,
                concept_paths=args.concept_paths,
            )
            return cls(
                grag,
                lambda idx, qs: make_graphs(
                    GraphBuilder(idx, grag, make_retriever(grag.base, idx)), qs, progress
                ),
                lambda items, groups, d, fit, cb: train_grag(items, groups, d, grag, fit, cb),
                "mrr",
                "a gold passage among the candidates",
            )
        from hopgraph.tools.iier.scorer import ScorerSettings
        from hopgraph.tools.iier.training import make_items, train_iier

        iier = ScorerSettings(hidden=args.hidden or 128)
        return cls(
            iier,
            lambda idx, qs: make_items(idx, qs, progress),
            lambda items, groups, d, fit, cb: train_iier(items, groups, d, iier, fit, cb),
            "hop_accuracy",
            "gold chunks that the chunk-interaction graph connects",
        )


def train_values(args: argparse.Namespace, data: Path) -> None:
    """Learn GNN-Ret's α (and RGNN-Ret's β) by the paper's hinge loss."""
    from hopgraph.evals.datasets import load_questions
    from hopgraph.graph_store.stores.manifest import package_versions
    from hopgraph.tools.gnn_ret.retriever import GNNRetriever

    questions = load_questions(data, args.split, args.limit)
    with _open(args, data) as idx:
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
    from tqdm.auto import tqdm  # with asyncio: for training, not for the CLI's parser

    bar = tqdm(total=args.max_iterations, desc="training", unit="step", disable=args.quiet)

    def step(_: int, loss: float) -> None:
        bar.update(1)
        bar.set_postfix(loss=f"{loss:.4f}")

    return bar, step


def _fit_single(retriever: Any, questions: Sequence[Any], gold_docs: dict, top_o: int, args: Any):
    from tqdm.auto import tqdm

    from hopgraph.tools.gnn_ret.training import make_sample, train_alphas

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
    from tqdm.auto import tqdm

    from hopgraph.agents.rgnn_ret.context import Context
    from hopgraph.tools.gnn_ret.training import (
        make_recurrent_sample,
        step_question,
        train_recurrent,
    )

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


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add `hopgraph train` to the CLI."""
    p = sub.add_parser(
        "train",
        help="learn GNN-Ret's α (gnn_ret), with RGNN-Ret's β (rgnn_ret), G-RAG's reranker (grag) "
        "or IIER's chain scorer (iier)",
        description="gnn_ret / rgnn_ret: learn with the paper's hinge loss (gold chunks "
        "closer than their top-O competitors) by full-batch gradient descent; rgnn_ret learns "
        "the α's with β on the gold sub-questions (teacher forcing; MuSiQue has them); writes "
        "INDEX/models/METHOD.json (use gnn_ret's with `hopgraph eval --gnn-weights FILE`). "
        "grag: train G-RAG's graph network on the base retriever's top-n of every question "
        "(--data may be repeated to train on several datasets, then --out is needed), "
        "early-stopped on a held-back tenth of the questions (their MRR); writes "
        "INDEX/models/grag.pt, where the grag retriever looks first. iier: train IIER's chain "
        "scorer on the shortest paths between each question's gold chunks, early-stopped on "
        "the held-back questions' hop accuracy; writes INDEX/models/iier.pt, which the iier "
        "retriever then uses instead of its untrained scorer. Every file records its data, "
        "settings, seed, curves and package versions. Deterministic: same data and seed, "
        "same weights.",
    )
    p.add_argument("method", choices=METHODS, help="what to train")
    p.add_argument("--data", required=True, action="append", metavar="DIR", help="dataset folder")
    p.add_argument("--split", default="train", help="question file (default train)")
    p.add_argument("--limit", type=positive, metavar="N", help="first N questions only")
    p.add_argument("--out", type=output_file, metavar="FILE", help="where to write the weights")
    values = p.add_argument_group("gnn_ret and rgnn_ret")
    values.add_argument("--top-o", type=positive, help="competitive set size O (25; rgnn_ret 10)")
    values.add_argument("--max-iterations", type=positive, default=100, help="step cap (100)")
    net = p.add_argument_group("grag and iier")
    net.add_argument(
        "--loss",
        choices=("pairwise", "cross_entropy"),
        default="pairwise",
        help="grag: G-RAG-RL's pairwise hinge (default) or listwise cross-entropy",
    )
    net.add_argument("--hidden", type=positive, help="hidden size (grag 64, iier 128)")
    net.add_argument(
        "--candidates",
        type=positive,
        default=100,
        help="grag: base retriever's top-n to rerank (100)",
    )
    net.add_argument(
        "--concept-paths",
        # tools.grag.graph.CONCEPT_PATHS, not imported: --help stays fast
        choices=("encoded", "concepts", "none"),
        default="concepts",
        help="grag: how each candidate's concept path (the question's concepts it holds and "
        "what its facts relate them to) enters its features: concepts (the default) sums "
        "the concepts' vectors, embedded once per index; encoded embeds each path string at "
        "query time (several embeddings a question, no more accurate); none leaves the path "
        "out (a little less accurate); docs/methods.md, G-RAG",
    )
    net.add_argument("--epochs", type=positive, default=60, help="epoch cap (60)")
    net.add_argument(
        "--patience",
        type=positive,
        default=10,
        help="stop after this many epochs without a held-back gain (10)",
    )
    net.add_argument("--learning-rate", type=float, default=1e-3, help="AdamW's (0.001)")
    net.add_argument("--seed", type=int, default=0, help="fixes weights and order (0)")
    net.add_argument(
        "--always-trained",
        action="store_true",
        help="keep the best trained epoch even when the untrained network does better on the "
        "held-back slice (by default that one is kept): to measure what training does",
    )
    index_option(p)
    build_options(p)
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=train)
