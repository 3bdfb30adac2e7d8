"""Run any method as a question-answering agent: checkpointed, streamable, accounted.

Every run goes through a checkpointer (SQLite when given a path, memory otherwise) under a
thread id, so a run that fails part-way (a dropped connection, a crash) resumes from its last
finished node when the same thread is run again.
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver

from hopgraph.core.errors import InputError
from hopgraph.core.llm import Usage, no_usage
from hopgraph.core.traces import TraceRecorder
from hopgraph.graph_store import Index

from .evidence import Evidence
from .registry import agent_for

OnUpdate = Callable[[str, dict[str, Any]], None]
"""Called with (node name, what the node returned) as each node finishes."""


@dataclass(frozen=True)
class RunResult:
    """A finished run: the answer, its citations, what was gathered, and what it cost."""

    method: str
    thread_id: str
    question: str
    answer: str
    citations: list[Evidence]
    gathered: list[Evidence]
    evidence: list[Evidence]
    """The ranked passages the run ended with (what its reader was given, best first)."""
    steps: list[str]
    usage: Usage
    resumed: bool
    trace_id: str | None = None
    """The run's trace in the local store (`hopgraph trace show ID`)."""


@contextmanager
def checkpointer(path: Path | None) -> Iterator[BaseCheckpointSaver]:
    """Open a SQLite checkpointer at ``path`` (created if new), or an in-memory one."""
    if path is None:
        yield InMemorySaver()
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    connection = sqlite3.connect(str(path), check_same_thread=False)
    try:
        yield SqliteSaver(connection)
    finally:
        connection.close()


def run_agent(
    method: str,
    question: str,
    index: Index,
    chat: BaseChatModel,
    *,
    saver: BaseCheckpointSaver | None = None,
    thread_id: str | None = None,
    on_update: OnUpdate | None = None,
    recorder: TraceRecorder | None = None,
    **settings: Any,
) -> RunResult:
    """Answer ``question`` with ``method``; resume the thread's unfinished run if it has one.

    ``settings`` go to the method's context (``k``, ``max_steps``, ``preset``, …); the preset's
    settings for the method fill those not given. A thread holds one
    question: a finished thread, or an unfinished one asked a different question, is an error.
    Every run is recorded in the local trace store (``recorder``, default
    ``$HOPGRAPH_CACHE/traces.sqlite``).
    """
    builder, context_type, fixed = agent_for(method)
    graph = builder.compile(checkpointer=saver or InMemorySaver(), name=method)
    context = context_type.in_preset(index=index, chat=chat, **fixed, **settings)
    thread_id = thread_id or uuid.uuid4().hex[:12]
    own_recorder = recorder is None
    recorder = recorder or TraceRecorder()
    config = {"configurable": {"thread_id": thread_id}, "callbacks": [recorder]}
    earlier = graph.get_state(config)
    resumed = bool(earlier.values)
    if resumed:
        _check_resumable(thread_id, question, earlier.values, earlier.next)
    try:
        for update in graph.stream(
            None if resumed else {"question": question},
            config,
            context=context,
            stream_mode="updates",
        ):
            for node, values in update.items():
                if on_update is not None and isinstance(values, dict):
                    on_update(node, values)
    finally:
        if own_recorder:
            recorder.close()
    final = graph.get_state(config).values
    return RunResult(
        method=method,
        thread_id=thread_id,
        question=final["question"],
        answer=final.get("answer", ""),
        citations=final.get("citations", []),
        gathered=final.get("gathered", []),
        evidence=final.get("evidence", []),
        steps=final.get("steps", []),
        usage=final.get("usage") or no_usage(),
        resumed=resumed,
        trace_id=recorder.trace_id,
    )


def _check_resumable(thread_id: str, question: str, values: dict, pending: tuple) -> None:
    """Refuse to run a thread that is finished or belongs to another question."""
    if not pending:
        raise InputError(
            f"thread {thread_id!r} has already answered {values.get('question')!r}",
            "start a new thread (leave out --thread) for a new question",
        )
    if values.get("question") != question:
        raise InputError(
            f"thread {thread_id!r} is an unfinished run of another question: "
            f"{values.get('question')!r}",
            "ask that question again to resume it, or leave out --thread",
        )
