"""The evaluation commands: eval and demo, and the options they turn into retriever settings."""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hopgraph.core.errors import InputError
from hopgraph.tools import RETRIEVERS, parse_methods
from hopgraph.tools.shared.registry import parse_weights

from .documents import settings_from

if TYPE_CHECKING:  # the write path (loaders, parsers, graph building) is imported by writes
    from hopgraph.evals.datasets import Question


def evaluate(args: argparse.Namespace) -> None:
    """Evaluate methods on a benchmark split and write the report."""
    from hopgraph.agents.registry import MULTI_STEP, agent_methods, needs_triple_vectors
    from hopgraph.core.settings import named_setting
    from hopgraph.evals.answers import evaluate_answers, format_answer_table
    from hopgraph.evals.datasets import load_questions
    from hopgraph.evals.report import format_table, write_report
    from hopgraph.evals.runner import check_gold_coverage, eval_index, run_methods

    agents = [m.strip() for m in args.methods.split(",") if m.strip() in MULTI_STEP]
    if agents and not args.answers:
        raise InputError(
            f"{', '.join(agents)} answer questions rather than rank passages",
            "add --answers to score their answers (EM / F1) and the passages they gathered",
        )
    choices = agent_methods() if args.answers else None  # with --answers, agents too
    methods = parse_methods(args.methods, choices)
    options = weights_options(args)  # checked before an index is built
    if (options or args.guard) and args.answers:
        raise InputError(
            "--weights and --guard apply to ranking passages, not to --answers runs",
            "drop --answers to score the methods' rankings",
        )
    for method, chosen in guard_options(args.guard, methods).items():
        options.setdefault(method, {}).update(chosen)
    if args.answerer != "endpoint" and not args.answers:
        raise InputError(f"--llm {args.answerer} answers questions", "add --answers")
    data = Path(args.data)
    questions = load_questions(data, args.split, args.limit)
    chat = answer_model(args.answerer, questions) if args.answers else None
    settings = settings_from(args)
    named_model = args.model or named_setting("model")
    index_path = Path(args.index) if args.index else None
    graphs = any(m not in RETRIEVERS or RETRIEVERS[m].needs_graphs for m in methods)
    triples = needs_triple_vectors(methods)
    opened = eval_index(
        data, settings, index_path, not args.quiet, named_model, graphs, triples, args.search
    )
    with opened as idx:
        missing = check_gold_coverage(idx, questions)
        if missing:
            print(f"warning: {missing} gold passage ids are not in the index", flush=True)
        if chat is not None:
            scores, rows = evaluate_answers(
                idx, questions, methods, chat, not args.quiet, preset=args.preset
            )
        else:
            scores, rows = run_methods(
                idx,
                questions,
                methods,
                show_progress=not args.quiet,
                options=options,
                preset=args.preset,
            )
        stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
        out = (
            Path(args.out) if args.out else Path("runs") / f"eval-{data.name}-{args.split}-{stamp}"
        )
        config = {
            "data": str(data),
            "split": args.split,
            "questions": len(questions),
            "methods": methods,
            "preset": args.preset,
            "guard": args.guard or "preset",
            "search": args.search,
            "index": str(idx.directory),
            "settings": idx.manifest.settings.model_dump(),
            "versions": idx.manifest.versions,
        }
    report, per_question = write_report(out, config, scores, rows)
    chunks = idx.manifest.counts["chunks"]
    print(
        f"\n{data.name} / {args.split}: {len(questions)} questions, {chunks} chunks, "
        f"preset {args.preset}\n"
    )
    print(format_answer_table(scores) if chat is not None else format_table(scores))
    print(f"\nreport: {report}\nper question: {per_question}")


def guard_options(guard: str | None, methods: list[str]) -> dict[str, dict[str, Any]]:
    """Turn --guard into options of the methods that have the guard (tools/guards/guard.py)."""
    if guard is None:
        return {}
    from hopgraph.tools.guards.guard import KEEP, Guarded

    chosen: dict[str, Any] = {"off": {"keep": 0}, "always": {"keep": KEEP, "selective": False}}.get(
        guard, {"keep": KEEP, "selective": True}
    )
    guarded = [m for m in methods if m in RETRIEVERS and issubclass(RETRIEVERS[m], Guarded)]
    return {m: dict(chosen) for m in guarded}


def weights_options(args: argparse.Namespace) -> dict[str, dict[str, Path | bool]]:
    """Turn --weights METHOD=FILE (and --gnn-weights FILE) into retriever options."""
    given = list(args.weights) + ([f"gnn_ret={args.gnn_weights}"] if args.gnn_weights else [])
    return parse_weights(given)


def demo(args: argparse.Namespace) -> None:
    """Index the bundled sample and answer its questions by retrieval."""
    from hopgraph.cli.commands.demo import run_demo

    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the demo is offline: its model ships here

    run_demo(Path(args.index) if args.index else None, args.method, args.k, not args.quiet)


def answer_model(llm: str, questions: Sequence[Question]) -> Any:
    """Return the chat model of ``--llm``: the endpoint, the local model, or an oracle each."""
    from hopgraph.core.llm import choose_chat

    if llm != "oracle":
        return choose_chat(llm)
    from hopgraph.evals.oracle import OracleChatModel

    missing = [q.id for q in questions if not q.decomposition]
    if missing:
        raise InputError(
            f"--llm oracle needs each question's gold decomposition; {len(missing)} have none "
            f"(first: {missing[0]})",
            "use MuSiQue (../shared/data/musique), whose questions carry a decomposition",
        )
    return lambda q: OracleChatModel(question=q.question, decomposition=list(q.decomposition))
