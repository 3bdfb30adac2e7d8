"""retrieve → answer: any single-step method (bm25 … sync_ge) as a question-answering run."""

from __future__ import annotations

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from agents.answering import answer_with_citations
from agents.evidence import evidence_of

from .context import Context
from .state import InputState, State


def retrieve(state: State, runtime: Runtime[Context]) -> dict:
    """Retrieve the reader's passages with the configured method."""
    ctx = runtime.context
    hits = ctx.retriever(ctx.method).retrieve(state["question"], ctx.k)
    evidence = evidence_of(hits, ctx.method)
    titles = ", ".join(e["title"] for e in evidence)
    return {
        "evidence": evidence,
        "gathered": evidence,
        "steps": [f"retrieve ({ctx.method}): {len(evidence)} passages: {titles}"],
    }


def answer(state: State, runtime: Runtime[Context]) -> dict:
    """Answer from the retrieved passages, citing the ones used."""
    text, cited, usage = answer_with_citations(
        runtime.context.chat, state["question"], state["evidence"]
    )
    return {
        "answer": text,
        "citations": cited,
        "usage": usage,
        "steps": [f"answer: {text} (cites {', '.join(c['title'] for c in cited) or 'nothing'})"],
    }


builder = StateGraph(State, context_schema=Context, input_schema=InputState)
builder.add_node(retrieve)
builder.add_node(answer)
builder.add_edge(START, "retrieve")
builder.add_edge("retrieve", "answer")
builder.add_edge("answer", END)
graph = builder.compile(name="retrieve-and-answer")
