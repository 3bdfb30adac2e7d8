"""`hopgraph ask`: answer a question with any method, citing passages, checkpointed by thread."""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
import uuid
from pathlib import Path
from typing import Any

from hopgraph.cli.options import (
    expand_option,
    index_option,
    llm_option,
    method_option,
    passages,
    positive,
    preset_option,
    wait_option,
    where_option,
)
from hopgraph.core.errors import HopgraphError, InputError, LLMServerError

# Each command imports what it runs on (LangGraph, the index, the LLM client) when it runs:
# building the parser, for any command, must not.


def default_checkpoints() -> Path:
    """Return where runs are checkpointed unless --checkpoints says otherwise."""
    from hopgraph.core.settings import cache_dir

    return cache_dir() / "runs.sqlite"


def ask(args: argparse.Namespace) -> None:
    """Answer a question; print the answer, its citations, the steps and the LLM usage."""
    from hopgraph.agents.run import checkpointer, run_agent
    from hopgraph.cli.options import index_dir
    from hopgraph.core.llm import choose_chat, describe
    from hopgraph.graph_store import Index
    from hopgraph.graph_store.stores.manifest import read_manifest

    from .queries import where_of

    settings: dict[str, Any] = {
        "k": args.k,
        "preset": args.preset,
        "where": where_of(args.where),
        "expand": _checked_expand(args.expand),
    }
    if args.max_steps is not None:
        from hopgraph.agents.registry import step_settings

        bounds = step_settings()  # the loop bound each multi-step agent takes from --max-steps
        if args.method not in bounds:
            raise InputError(
                f"--max-steps applies to the multi-step agents, not {args.method!r}",
                f"use it with --method {' or '.join(bounds)}",
            )
        settings[bounds[args.method]] = args.max_steps
    if not args.question.strip():
        raise InputError("the question is empty", "ask a question in words")
    read_manifest(index_dir(args))  # a missing index is named before any LLM is looked for
    chat = choose_chat(args.llm)
    if chat is None:
        _evidence_only(args)
        return
    thread = args.thread or uuid.uuid4().hex[:12]
    # Steps as they happen: asked for (--stream), or on a terminal unless --quiet; a run of
    # minutes with nothing on the screen looks hung.
    live = args.stream or (sys.stdout.isatty() and not args.quiet)
    on_update = _print_update if live and not args.json else None
    store = args.checkpoints or default_checkpoints()
    with Index.open(index_dir(args)) as index, checkpointer(store) as saver:
        try:
            result = run_agent(
                args.method, args.question, index, chat,
                saver=saver, thread_id=thread, on_update=on_update, **settings,
            )  # fmt: skip
        except LLMServerError as err:  # the server failed mid-run: say how to resume
            raise LLMServerError(
                err.message,
                f"{err.hint}; finished steps are saved: run the same command with --thread "
                f"{thread} to resume from where it stopped",
            ) from err
        except HopgraphError:
            raise
        except Exception as err:  # the LLM server or the network failed mid-run
            raise HopgraphError(
                f"the run stopped: {type(err).__name__}: {err}",
                f"finished steps are saved; run the same command with --thread {thread} "
                "to resume from where it stopped",
            ) from err
    if args.json:
        print(json.dumps(result.__dict__ | {"llm": describe(chat)}, indent=2, ensure_ascii=False))
        return
    _print_result(result, show_steps=on_update is None)
    print(f"answered by {describe(chat)}")


def _checked_expand(expand: str | None) -> str | None:
    """Return ``--expand`` once it parses (a typo is named before any model is loaded)."""
    if expand:
        from hopgraph.tools.shared.expand import Expansion

        Expansion.parse(expand)
    return expand


def _evidence_only(args: argparse.Namespace) -> None:
    """With no LLM: the extractive answer and its passages (agents.evidence.answer_alone)."""
    from hopgraph.agents.evidence import answer_alone
    from hopgraph.cli.options import index_dir
    from hopgraph.graph_store import Index

    from .queries import where_of

    with Index.open(index_dir(args)) as index:
        reply = answer_alone(
            index,
            args.method,
            args.question,
            args.k,
            args.preset,
            where_of(args.where),
            args.expand,
        )
    why = "no LLM is configured (--llm none, or auto with no HOPGRAPH_LLM_* set)"
    if args.json:
        print(json.dumps({"question": args.question, **reply, "llm": why},
                         indent=2, ensure_ascii=False))  # fmt: skip
        return
    print(f"answer (the passages' own sentences; {why}):")
    for sentence in reply["answer"]["sentences"]:
        print(textwrap.fill(f"[{sentence['passage']}] {sentence['text']}", 100,
                            initial_indent="  ", subsequent_indent="      "))  # fmt: skip
    print(f"evidence passages ({reply['method']}), each with its answering sentence:")
    for n, hit in enumerate(reply["evidence"], start=1):
        print(f"  [{n}] {hit['title']} ({hit['id']})")
        print(textwrap.fill(hit["answering"] or hit["text"], 100,
                            initial_indent="      ", subsequent_indent="      "))  # fmt: skip
    print("for a written answer: --llm local (offline, small), or set HOPGRAPH_LLM_* (README)")


def _print_update(node: str, update: dict[str, Any]) -> None:
    for line in update.get("steps", []):
        print(f"[{node}] {line}", flush=True)


def _print_result(result: Any, show_steps: bool) -> None:
    if show_steps:
        print("steps:")
        for line in result.steps:
            print(f"  {line}")
    print(f"\nanswer: {result.answer}")
    _print_evidence(result.evidence, result.citations)
    usage = result.usage
    print(
        f"LLM: {usage['calls']} calls, {usage['prompt_tokens']} prompt + "
        f"{usage['completion_tokens']} completion tokens, {usage['seconds']:.1f} s; "
        f"{len(result.gathered)} passages gathered; thread {result.thread_id}"
        + (" (resumed)" if result.resumed else "")
    )
    if result.trace_id:
        print(f"trace: hopgraph trace show {result.trace_id}")
    if usage.get("fallbacks"):
        print(
            f"warning: {usage['fallbacks']} of the model's replies could not be read even after "
            "a repair request; the steps marked FALLBACK say what was used instead"
        )


def _print_evidence(evidence: list[Any], citations: list[Any]) -> None:
    """Print every passage the reader was shown, the cited ones starred (cited or not, shown)."""
    cited = {c["id"] for c in citations}
    shown = [*evidence, *(c for c in citations if c["id"] not in {e["id"] for e in evidence})]
    print(f"evidence the reader was shown ({'* cited' if cited else 'none of it cited'}):")
    for n, passage in enumerate(shown, start=1):
        snippet = textwrap.shorten(passage["text"], 160, placeholder=" …")
        mark = "*" if passage["id"] in cited else " "
        print(f"  [{n}]{mark} {passage['title']} ({passage['id']}): {snippet}")


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add `hopgraph ask` to the CLI."""
    from hopgraph.agents.registry import MULTI_STEP

    p = sub.add_parser(
        "ask",
        help="answer a question with citations (without an LLM: the passages' own sentences)",
        description=(
            f"Answer QUESTION with a method: a multi-step agent ({', '.join(MULTI_STEP)}) or any "
            "retriever followed by the citing reader. Prints the answer, the passages it cites, "
            "the steps taken and the LLM calls and tokens. Runs are checkpointed by thread: "
            "if one stops (a server error, Ctrl-C), the same command with --thread resumes it. "
            "With no LLM (--llm none, or none configured) it answers with the sentences of the "
            "method's passages (gnn_ret's for an agent) that answer, at most three (600 "
            "characters), each citing its passage, then each passage with its "
            "answering sentence."
        ),
    )
    p.add_argument("question", metavar="QUESTION")
    index_option(p)
    wait_option(p)
    method_option(p)
    p.add_argument("-k", type=passages, default=5, help="passages the reader gets (default 5)")
    preset_option(p)
    llm_option(p)
    p.add_argument(
        "--max-steps",
        type=positive,
        metavar="N",
        help="loop bound of a multi-step agent (default: rgnn_ret 5 sub-questions, gear 4 "
        "rounds, tog2 depth 3)",
    )
    where_option(p)
    expand_option(p)
    p.add_argument(
        "--stream",
        action="store_true",
        help="print each step as it finishes (the default on a terminal; piped output gets "
        "the steps with the answer)",
    )
    p.add_argument(
        "-q", "--quiet", action="store_true", help="on a terminal, no step lines while it runs"
    )
    p.add_argument("--thread", metavar="ID", help="thread id: resume an unfinished run")
    p.add_argument(
        "--checkpoints",
        type=Path,
        default=None,
        metavar="FILE",
        help="SQLite file of run checkpoints (default $HOPGRAPH_CACHE/runs.sqlite, the cache "
        "being ~/.cache/hopgraph unless set)",
    )
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=ask)
