"""Answer evaluation (`hopgraph eval --answers`): EM / F1, LLM cost, recall of what was gathered.

Every method answers through :func:`agents.run.run_agent`: the multi-step agents as they are,
single-step retrievers followed by the citing reader. Per question it records the answer, EM and
F1 (SQuAD normalisation, best over the gold answers), the LLM calls and tokens, and the
documents the run gathered; recall of gathered documents says how much of the evidence an agent
reached, whatever it then made of it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models import BaseChatModel
from tqdm.auto import tqdm

from graph_store import Index
from hopgraph.errors import HopgraphError

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
    gathered_docs: float
    calls: float
    max_calls: int
    prompt_tokens: float
    completion_tokens: float
    seconds_p50: float
    failures: int


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
    cited_ids: list[str]
    usage: dict[str, Any]
    seconds: float
    steps: list[str] = field(default_factory=list)
    error: str | None = None


def answer_question(
    method: str, q: Question, index: Index, chat: BaseChatModel, **settings: Any
) -> AnswerRow:
    """Answer one question; a run the LLM's replies derail is recorded as a failure."""
    from agents.run import run_agent

    started = time.perf_counter()
    try:
        result = run_agent(method, q.question, index, chat, **settings)
    except HopgraphError as err:  # e.g. an unreadable reply after its repair
        return AnswerRow(
            method, q.id, q.question, list(q.answers), "", 0.0, 0.0, list(q.gold_ids), [], [],
            {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "seconds": 0.0},
            time.perf_counter() - started, error=str(err),
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
        cited_ids=list(dict.fromkeys(e["doc_id"] for e in result.citations)),
        usage=dict(result.usage),
        seconds=time.perf_counter() - started,
        steps=result.steps,
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
    """Average one method's rows."""
    n = max(len(rows), 1)

    def mean(values: Sequence[float]) -> float:
        return sum(values) / n

    return AnswerScores(
        method=method,
        questions=len(rows),
        em=100 * mean([r.em for r in rows]),
        f1=100 * mean([r.f1 for r in rows]),
        gathered_recall=100
        * mean([recall_at_k(r.gathered_ids, r.gold_ids, len(r.gathered_ids)) for r in rows]),
        gathered_docs=mean([len(r.gathered_ids) for r in rows]),
        calls=mean([r.usage["calls"] for r in rows]),
        max_calls=max((r.usage["calls"] for r in rows), default=0),
        prompt_tokens=mean([r.usage["prompt_tokens"] for r in rows]),
        completion_tokens=mean([r.usage["completion_tokens"] for r in rows]),
        seconds_p50=percentile([r.seconds for r in rows], 50),
        failures=sum(r.error is not None for r in rows),
    )


def format_answer_table(scores: Sequence[AnswerScores]) -> str:
    """Render one row per method: EM, F1, recall of gathered documents, LLM cost per question."""
    head = "method EM F1 gatheredR docs calls/q max tokens/q p50s failed".split()
    rows = [
        [
            s.method, f"{s.em:.1f}", f"{s.f1:.1f}", f"{s.gathered_recall:.1f}",
            f"{s.gathered_docs:.1f}", f"{s.calls:.1f}", str(s.max_calls),
            f"{s.prompt_tokens + s.completion_tokens:.0f}", f"{s.seconds_p50:.2f}", str(s.failures),
        ]
        for s in scores
    ]  # fmt: skip
    return render_table(head, rows)
