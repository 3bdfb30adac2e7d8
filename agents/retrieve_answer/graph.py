"""retrieve → answer: any single-step method (bm25 … sync_ge) as a question-answering run."""

from __future__ import annotations

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from hopgraph.agents.answering import answer_line, answer_with_citations
from hopgraph.agents.evidence import evidence_of
from hopgraph.graph_store import Index
from hopgraph.tools import RETRIEVERS, Hit

from .context import Context
from .state import InputState, State

BUDGET_POOL = 60
"""Passages asked for when a token budget decides how many the reader gets (200-token chunks
fill 3,500 tokens with about 20)."""


def within_budget(hits: list[Hit], budget: int, index: Index) -> list[Hit]:
    """Keep hits in rank order until the next would pass ``budget`` tokens (GNN-Ret §3.3)."""
    kept, used = [], 0
    for hit in hits:
        tokens = index.embedder.count_tokens(f"{hit.title}\n{hit.text}")
        if kept and used + tokens > budget:
            break
        kept.append(hit)
        used += tokens
    return kept


def retrieve(state: State, runtime: Runtime[Context]) -> dict:
    """Retrieve the reader's passages with the configured method."""
    ctx = runtime.context
    # A retriever that calls an LLM (sync_ge) calls the run's, and its calls count in the run.
    llm = RETRIEVERS[ctx.method].needs_llm
    retriever = ctx.retriever(ctx.method, chat=ctx.chat) if llm else ctx.retriever(ctx.method)
    if ctx.token_budget:
        hits = within_budget(
            retriever.retrieve(state["question"], BUDGET_POOL), ctx.token_budget, ctx.index
        )
    else:
        hits = retriever.retrieve(state["question"], ctx.k)
    evidence = evidence_of(hits, ctx.method)
    titles = ", ".join(e["title"] for e in evidence)
    line = f"retrieve ({ctx.method}): {len(evidence)} passages: {titles}"
    update = {"evidence": evidence, "gathered": evidence}
    take_usage = getattr(retriever, "take_usage", None)
    if take_usage is not None:
        usage = take_usage()
        return update | {"usage": usage, "steps": [f"{line} ({usage['calls']} LLM calls)"]}
    return update | {"steps": [line]}


def answer(state: State, runtime: Runtime[Context]) -> dict:
    """Answer from the retrieved passages, citing the ones used."""
    text, cited, usage = answer_with_citations(
        runtime.context.chat, state["question"], runtime.context.reading(state["evidence"])
    )
    cites = ", ".join(c["title"] for c in cited) or "nothing"
    return {
        "answer": text,
        "citations": cited,
        "usage": usage,
        "steps": [answer_line(f"{text} (cites {cites})", usage)],
    }


builder = StateGraph(State, context_schema=Context, input_schema=InputState)
builder.add_node(retrieve)
builder.add_node(answer)
builder.add_edge(START, "retrieve")
builder.add_edge("retrieve", "answer")
builder.add_edge("answer", END)
graph = builder.compile(name="retrieve-and-answer")
