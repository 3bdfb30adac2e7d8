"""The agents as a LangGraph server serves them (``langgraph.json``; ``langgraph dev``).

A server builds a run's context from JSON, so each graph here takes a JSON-friendly
:class:`ServerContext` (the index directory, the method, k) and runs the agent's own graph as a
subgraph with the real context: the newest committed generation of the index (a LiveIndex per
directory: a write committed while the server runs is seen by the next run), the chat model from
``HOPGRAPH_LLM_*``. Stream with ``subgraphs=True`` to see the agent's nodes as they run.
"""

from __future__ import annotations

import atexit
import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage
from langgraph.errors import GraphBubbleUp
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime

from hopgraph.agents.evidence import Evidence, answer_alone
from hopgraph.agents.registry import DEFAULT_METHOD, SERVED, agent_for, agent_methods
from hopgraph.core.errors import InputError, UnknownMethodError, public_text
from hopgraph.core.llm import choose_chat, required_chat
from hopgraph.core.network import checked_k, checked_question
from hopgraph.core.settings import default_index_dir, settings
from hopgraph.graph_store import Index, LiveIndex
from hopgraph.graph_store.documents.filters import JSON_HELP, WhereValue
from hopgraph.tools import DEFAULT_PRESET
from hopgraph.tools.shared.expand import EXPAND_HELP


@dataclass(kw_only=True)
class ServerContext:
    """What a server run may set; everything has a default."""

    index: str = field(
        default_factory=lambda: str(default_index_dir()),
        metadata={"description": "index directory (default $HOPGRAPH_INDEX or ./hopgraph-index)"},
    )
    method: str = field(
        default=DEFAULT_METHOD, metadata={"description": "the method that answers (chat)"}
    )
    k: int = field(default=5, metadata={"description": "passages the reader gets"})
    preset: str = field(
        default=DEFAULT_PRESET,
        metadata={"description": "tuned (our best on dev) or paper (as the papers have it)"},
    )
    where: dict[str, WhereValue] | None = field(
        default=None,
        metadata={"description": JSON_HELP},
    )
    expand: str | None = field(
        default=None,
        metadata={"description": "what the reader is shown of each passage: " + EXPAND_HELP},
    )


def allowed_index(directory: str) -> Path:
    """Return ``directory`` resolved if the server may open it, else raise.

    The allow-list is the ``serve_indexes`` setting, by default the one ``index`` setting the
    server was started with: a client cannot make the server open any folder it names.
    """
    current = settings()
    allowed = {p.resolve() for p in current.serve_indexes or [current.index]}
    path = Path(directory).resolve()
    if path not in allowed:
        raise InputError(
            f"context.index {directory} is not one this server serves (it serves "
            f"{', '.join(sorted(p.name for p in allowed))}: names, not paths)",
            "ask for a served index, or start the server with it in HOPGRAPH_SERVE_INDEXES",
        )
    return path


@cache
def _live(directory: str) -> LiveIndex:
    return LiveIndex(allowed_index(directory), opener=_opener())


@cache
def _opener() -> Callable[[Path, str | None], Index]:
    """Return how the server opens a generation: here, or from shards on a Ray cluster.

    ``HOPGRAPH_CLUSTER`` and ``HOPGRAPH_SHARDS`` (and ``HOPGRAPH_REPLICAS``) serve the
    indexes from shards (graph_store/cluster/serve.py); the server holds its connection to the
    cluster until it exits.
    """
    current = settings()
    if not current.shards:
        if current.cluster:
            raise InputError("HOPGRAPH_CLUSTER serves from shards", "set HOPGRAPH_SHARDS too")
        return Index.open
    if not current.cluster:
        raise InputError("HOPGRAPH_SHARDS serves from a Ray cluster",
                         "set HOPGRAPH_CLUSTER to its head's HOST:PORT (or local)")  # fmt: skip
    from hopgraph.graph_store.cluster.serve import shard_opener

    held = contextlib.ExitStack()
    atexit.register(held.close)
    return held.enter_context(shard_opener(current.cluster, current.shards, current.replicas))


def _index(directory: str) -> Index:
    """Return the newest committed generation of a served index (a run uses it to its end)."""
    return _live(directory).current()


@cache
def _chat() -> Any:
    return required_chat()


def checked_context(state: dict, ctx: ServerContext) -> None:
    """Check what a client sent as the CLI and the page check it: k, index, method, question.

    The question as text of a bounded length (core.network.checked_question).

    A JSON context is not validated by the server: ``"k": "²"`` would fail deep in a retriever.
    """
    ctx.k = checked_k(ctx.k, "context.k")
    if not isinstance(ctx.index, str) or not ctx.index.strip():
        raise InputError(
            f"context.index must name a served index folder, got {ctx.index!r}",
            "leave it out for the server's own index, or give one of its serve_indexes",
        )
    if ctx.method not in agent_methods():
        raise UnknownMethodError(
            f"unknown method {ctx.method!r}", f"choose one of: {', '.join(agent_methods())}"
        )
    for message in state.get("messages", [])[-1:]:
        content = message.content  # content blocks (a list) are read as their text
        checked_question(content if isinstance(content, str) else str(content))


def _evidence_turn(state: dict, index: Index, ctx: ServerContext) -> dict:
    """Answer a chat turn with no LLM as the CLI does: the extractive answer, its passages."""
    question = str(state["messages"][-1].content).strip()
    reply = answer_alone(index, ctx.method, question, ctx.k, ctx.preset, ctx.where, ctx.expand)
    method, hits = reply["method"], reply["evidence"]
    lines = ["answer (the passages' own sentences; no LLM is configured):"]
    lines += [f"[{s['passage']}] {s['text']}" for s in reply["answer"]["sentences"]]
    lines += [f"evidence passages ({method}), each with its answering sentence:"]
    lines += [
        f"[{n}] {h['title']} ({h['id']}): {h['answering'] or h['text']}"
        for n, h in enumerate(hits, start=1)
    ]
    sources = [
        Evidence(id=h["id"], doc_id=h["doc_id"], title=h["title"], text=h["text"],
                 score=h["score"], found_by=method, metadata=h["metadata"])
        for h in hits
    ]  # fmt: skip
    steps = [f"retrieve ({method}): {len(hits)} passages; no LLM is configured"]
    return {"messages": [AIMessage("\n".join(lines))], "sources": sources, "steps": steps}


def serve(method: str) -> CompiledStateGraph:
    """Wrap an agent (or the chat graph) in a graph whose context is :class:`ServerContext`."""
    if method == "chat":
        from hopgraph.agents.chat import graph as chat_graph
        from hopgraph.agents.chat.context import Context as ChatContext

        builder, context_type, fixed = chat_graph.builder, ChatContext, {}
    else:
        builder, context_type, fixed = agent_for(method)
    inner = builder.compile(name=method)

    def run(state: dict, runtime: Runtime[ServerContext]) -> dict:
        ctx = runtime.context or ServerContext()
        extra = {"method": ctx.method} if method == "chat" else fixed
        try:
            checked_context(state, ctx)
            if method == "chat" and choose_chat() is None:
                return _evidence_turn(state, _index(ctx.index), ctx)
            context = context_type.in_preset(
                ctx.preset,
                index=_index(ctx.index),
                chat=_chat(),
                k=ctx.k,
                where=ctx.where,
                expand=ctx.expand,
                **extra,
            )
            return inner.invoke(state, context=context)
        except GraphBubbleUp:
            raise  # LangGraph's own control flow (an interrupt), not a failure
        except Exception as err:
            # The server shows the message of builtin errors only, "An internal error occurred"
            # for any other: a user must read what to fix (no LLM, no index, a bad filter), and
            # no builtin error may carry a server path to the client (core.errors.public_reply).
            raise ValueError(public_text(err, Path(ctx.index))) from err

    outer = StateGraph(
        builder.state_schema, context_schema=ServerContext, input_schema=builder.input_schema
    )
    outer.add_node(method, run)
    outer.add_edge(START, method)
    outer.add_edge(method, END)
    return outer.compile(name=f"hopgraph-{method}")


# One module attribute per served graph (langgraph.json names them), from the registry.
globals().update({name: serve(name) for name in SERVED})
