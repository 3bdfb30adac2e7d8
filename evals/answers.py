"""Answer evaluation (`hopgraph eval --answers`): EM / F1, LLM cost, recall of what was gathered.

Every method answers through :func:`hopgraph.agents.run.run_agent`: the multi-step agents as they
are, single-step retrievers followed by the citing reader. Per question it records the answer, EM
and F1 (SQuAD normalisation, best over the gold answers), the LLM calls and tokens, and the
documents the run gathered; recall of gathered documents says how much of the evidence an agent
reached, whatever it then made of it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from langchain_core.language_models import BaseChatModel
from tqdm.auto import tqdm

from hopgraph.core.errors import HopgraphError
from hopgraph.core.llm import no_usage
from hopgraph.graph_store import Index

from .datasets import Question
from .metrics import exact_match, f1_score, percentile, recall_at_k
from .tables import render_table


@dataclass
class AnswerScores:
    """Aggregate answer scores of one method (EM, F1 and recall in percent; costs per question)."""

    method: str
    questions: int
    em: float
    f1: float
    gathered_recall: float
    """Gold documents among everything the run retrieved or read, over the whole run."""
    evidence_recall_5: float
    """R@5 of the ranked passages the run ended with."""
    gathered_docs: float
    calls: float
    calls_p95: float
    max_calls: int
    prompt_tokens: float
    completion_tokens: float
    tokens_p95: float
    steps: float
    """Nodes run per question (one line each in the run's steps)."""
    seconds_mean: float
    seconds_p50: float
    failures: int
    parse_failure_rate: float = 0.0
    """% of the replies that had to follow a format whose first reply the parser refused."""
    repair_rate: float = 0.0
    """% of those parse failures that the one repair request fixed (the rest fell back)."""
    title_f1: float = 0.0
    """F1 of an answer with no model: the title of the first passage of the evidence."""
    by_hops: dict[str, dict[str, float]] = field(default_factory=dict)
    """The same figures for the questions of each hop count (where the dataset says)."""


@dataclass
class AnswerRow:
    """One question's answer under one method."""

    method: str
    id: str
    question: str
    answers: list[str]
    prediction: str
    em: float
    f1: float
    gold_ids: list[str]
    gathered_ids: list[str]
    evidence_ids: list[str]
    cited_ids: list[str]
    usage: dict[str, Any]
    seconds: float
    hops: int | None = None
    steps: list[str] = field(default_factory=list)
    evidence_title: str = ""
    error: str | None = None


def answer_question(
    method: str, q: Question, index: Index, chat: BaseChatModel, **settings: Any
) -> AnswerRow:
    """Answer one question; a run the LLM's replies derail is recorded as a failure."""
    from hopgraph.agents.run import run_agent

    started = time.perf_counter()
    try:
        result = run_agent(method, q.question, index, chat, **settings)
    except HopgraphError as err:  # e.g. an unreadable reply after its repair
        return AnswerRow(
            method, q.id, q.question, list(q.answers), "", 0.0, 0.0, list(q.gold_ids), [], [], [],
            dict(no_usage()), time.perf_counter() - started, hops=q.hops, error=str(err),
        )  # fmt: skip
    gathered = list(dict.fromkeys(e["doc_id"] for e in result.gathered))
    return AnswerRow(
        method=method,
        id=q.id,
        question=q.question,
        answers=list(q.answers),
        prediction=result.answer,
        em=exact_match(result.answer, q.answers),
        f1=f1_score(result.answer, q.answers),
        gold_ids=list(q.gold_ids),
        gathered_ids=gathered,
        evidence_ids=list(dict.fromkeys(e["doc_id"] for e in result.evidence)),
        cited_ids=list(dict.fromkeys(e["doc_id"] for e in result.citations)),
        usage=dict(result.usage),
        seconds=time.perf_counter() - started,
        hops=q.hops,
        steps=result.steps,
        evidence_title=result.evidence[0]["title"] if result.evidence else "",
    )


def evaluate_answers(
    index: Index,
    questions: Sequence[Question],
    methods: Sequence[str],
    chat: BaseChatModel | Callable[[Question], BaseChatModel],
    show_progress: bool = True,
    **settings: Any,
) -> tuple[list[AnswerScores], list[AnswerRow]]:
    """Answer every question with every method; return scores per method and all rows.

    ``chat`` is one model for every run, or a function that makes a fresh one per question and
    method (the oracle, which knows one question and keeps what each run has shown it).
    """
    fresh = chat if not isinstance(chat, BaseChatModel) else (lambda q: chat)
    scores, rows = [], []
    for method in methods:
        mine = [
            answer_question(method, q, index, fresh(q), **settings)
            for q in tqdm(questions, desc=f"answer {method}", unit="q", disable=not show_progress)
        ]
        scores.append(summarise(method, mine))
        rows.extend(mine)
    return scores, rows


def summarise(method: str, rows: Sequence[AnswerRow]) -> AnswerScores:
    """Average one method's rows, overall and per hop count."""
    core = _figures(rows)
    hop_counts = sorted({r.hops for r in rows if r.hops is not None})
    by_hops = {str(h): _figures([r for r in rows if r.hops == h]) for h in hop_counts}
    return AnswerScores(
        method=method,
        questions=len(rows),
        em=core["em"],
        f1=core["f1"],
        gathered_recall=core["gathered_recall"],
        evidence_recall_5=core["evidence_recall_5"],
        gathered_docs=core["gathered_docs"],
        calls=core["calls"],
        calls_p95=core["calls_p95"],
        max_calls=max((r.usage["calls"] for r in rows), default=0),
        prompt_tokens=_mean([r.usage["prompt_tokens"] for r in rows]),
        completion_tokens=_mean([r.usage["completion_tokens"] for r in rows]),
        tokens_p95=core["tokens_p95"],
        steps=core["steps"],
        seconds_mean=core["seconds_mean"],
        seconds_p50=percentile([r.seconds for r in rows], 50),
        failures=sum(r.error is not None for r in rows),
        parse_failure_rate=_rate(rows, "parse_failures", "structured"),
        repair_rate=_rate(rows, "repaired", "parse_failures"),
        title_f1=100 * _mean([f1_score(r.evidence_title, r.answers) for r in rows]),
        by_hops=by_hops,
    )


def _rate(rows: Sequence[AnswerRow], part: str, whole: str) -> float:
    """Return 100 × the sum of usage ``part`` over the sum of usage ``whole`` (0 if none)."""
    total = sum(r.usage.get(whole, 0) for r in rows)
    return 100 * sum(r.usage.get(part, 0) for r in rows) / total if total else 0.0


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def _figures(rows: Sequence[AnswerRow]) -> dict[str, float]:
    """Return the per-question means (and 95th percentiles) of one group of rows."""
    tokens = [r.usage["prompt_tokens"] + r.usage["completion_tokens"] for r in rows]
    return {
        "questions": len(rows),
        "em": 100 * _mean([r.em for r in rows]),
        "f1": 100 * _mean([r.f1 for r in rows]),
        "gathered_recall": 100
        * _mean([recall_at_k(r.gathered_ids, r.gold_ids, len(r.gathered_ids)) for r in rows]),
        "evidence_recall_5": 100
        * _mean([recall_at_k(r.evidence_ids, r.gold_ids, 5) for r in rows]),
        "gathered_docs": _mean([len(r.gathered_ids) for r in rows]),
        "calls": _mean([r.usage["calls"] for r in rows]),
        "calls_p95": percentile([r.usage["calls"] for r in rows], 95) if rows else 0.0,
        "tokens": _mean(tokens),
        "tokens_p95": percentile(tokens, 95) if rows else 0.0,
        "steps": _mean([len(r.steps) for r in rows]),
        "seconds_mean": _mean([r.seconds for r in rows]),
    }


def format_answer_table(scores: Sequence[AnswerScores]) -> str:
    """Render one row per method (and per method and hop count where the data has hops)."""
    head = (
        "method hops EM F1 gatheredR R@5 docs calls/q p95 tokens/q p95 steps s/q failed "
        "parse✗% repaired%"
    )
    rows = []
    for s in scores:
        groups = [("all", asdict(s) | {"tokens": s.prompt_tokens + s.completion_tokens})]
        groups += list(s.by_hops.items()) if len(s.by_hops) > 1 else []
        for hops, f in groups:
            rows.append(
                [
                    s.method, hops, f"{f['em']:.1f}", f"{f['f1']:.1f}",
                    f"{f['gathered_recall']:.1f}", f"{f['evidence_recall_5']:.1f}",
                    f"{f['gathered_docs']:.1f}", f"{f['calls']:.1f}", f"{f['calls_p95']:.0f}",
                    f"{f['tokens']:.0f}", f"{f['tokens_p95']:.0f}", f"{f['steps']:.1f}",
                    f"{f['seconds_mean']:.2f}", *(
                        [str(s.failures), f"{s.parse_failure_rate:.1f}", f"{s.repair_rate:.1f}"]
                        if hops == "all" else ["", "", ""]
                    ),
                ]
            )  # fmt: skip
    return render_table(head.split(), rows)
