"""A chat turn: make the question standalone, then answer it with the chosen method.

condense → respond. The thread's messages are the history (checkpointed by thread id), so a
follow-up ("and when was it founded?") is rewritten with the names it refers to before any
retrieval, and the answer is written back with its citations.
"""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from hopgraph.agents.run import run_agent
from hopgraph.core.llm import complete
from hopgraph.prompts.chat import STANDALONE

from .context import Context
from .state import InputState, State

HISTORY_TURNS = 6  # messages of history the rewrite sees


def condense(state: State, runtime: Runtime[Context]) -> dict:
    """Rewrite the last message as a standalone question; the first turn needs no rewrite."""
    *earlier, last = state["messages"]
    question = str(last.content).strip()
    if not earlier:
        return {"standalone": question}
    history = "\n".join(
        f"{'User' if isinstance(m, HumanMessage) else 'Assistant'}: {m.content}"
        for m in earlier[-HISTORY_TURNS:]
    )
    reply, _ = complete(runtime.context.chat, STANDALONE.format(history=history, question=question))
    return {"standalone": " ".join(reply.split()) or question}


def respond(state: State, runtime: Runtime[Context]) -> dict:
    """Answer the standalone question with the chosen method; cite the passages in the reply."""
    ctx = runtime.context
    result = run_agent(
        ctx.method,
        state["standalone"],
        ctx.index,
        ctx.chat,
        on_update=ctx.on_update,
        k=ctx.k,
        preset=ctx.preset,
        where=ctx.where,
    )
    cited = "".join(f" [{n}] {c['title']}" for n, c in enumerate(result.citations, start=1))
    return {
        "messages": [AIMessage(f"{result.answer}{' —' + cited if cited else ''}")],
        "sources": result.citations or result.gathered[: ctx.k],
        "trace_id": result.trace_id,
        "steps": result.steps,
    }


builder = StateGraph(State, context_schema=Context, input_schema=InputState)
builder.add_node(condense)
builder.add_node(respond)
builder.add_edge(START, "condense")
builder.add_edge("condense", "respond")
builder.add_edge("respond", END)
graph = builder.compile(name="hopgraph-chat")
