"""RGNN-Ret's loop (spec gnn_ret §4.1), one node per step of the paper's algorithm.

ask_next_step → retrieve (GNN-Ret, blended with earlier steps by Eq. 6) → answer_step →
critique → (enough, or ``max_steps`` reached) answer | ask_next_step.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from hopgraph.agents.answering import answer_line, answer_with_citations
from hopgraph.agents.evidence import chunk_evidence, titled_passages
from hopgraph.core.llm import ask_structured, complete, labelled
from hopgraph.prompts.rgnn_ret import CRITIQUE, NEXT_STEP, STEP_ANSWER
from hopgraph.tools.gnn_ret.channels import recurrent_merge
from hopgraph.tools.gnn_ret.retriever import GNNRetriever
from hopgraph.tools.shared import spans

from .context import Context
from .state import InputState, State, Step, parse_critique, parse_next_step

FINAL_PASSAGES = 10  # the final reader sees at most this many of the gathered passages


def trace_text(question: str, trace: list[Step]) -> str:
    """Render "Question: …" and the "Next step / Intermediate answer" lines (§5.4, §8.1)."""
    lines = [f"Question: {question}"]
    for step in trace:
        lines += [f"Next step: {step['subquestion']}", f"Intermediate answer: {step['answer']}"]
    return "\n".join(lines)


def ask_next_step(state: State, runtime: Runtime[Context]) -> dict:
    """Ask the LLM for the next sub-question from the question and the trace (§5.4)."""
    prompt = NEXT_STEP.format(trace=trace_text(state["question"], state.get("trace", [])))
    subquestion, usage = ask_structured(
        runtime.context.chat, prompt, parse_next_step, lambda _: state["question"]
    )
    n = len(state.get("trace", [])) + 1
    line = labelled(f"next step {n}: {subquestion}", usage, "the question itself is asked")
    return {"subquestion": subquestion, "usage": usage, "steps": [line]}


def retrieve(state: State, runtime: Runtime[Context]) -> dict:
    """Rank chunks by Eq. 6: β · h^t(sub-question) + (1 − β) · the previous blend."""
    ctx = runtime.context
    gnn = ctx.retriever("gnn_ret", **({"weights": ctx.weights} if ctx.weights else {}))
    assert isinstance(gnn, GNNRetriever)
    source, asked = ctx.index.directory.name, state["subquestion"]
    with spans.retrieval("rgnn_ret", source, asked, ctx.step_k) as opened:  # Eq. 6, not retrieve
        h, _, _ = gnn.ranking(asked)
        previous = state.get("h_hat")
        h_hat = h if not previous else recurrent_merge(h, np.asarray(previous), ctx.beta)
        n = len(state.get("trace", [])) + 1
        ids = ctx.index.passage_graph.ids
        order = np.argsort(h_hat)
        if ctx.where:
            order = np.array([row for row in order if ctx.allows(ids[row])], dtype=np.int64)
        evidence = [
            chunk_evidence(ctx.index, ids[row], float(1.0 - h_hat[row]), f"rgnn_ret step {n}")
            for row in order[: ctx.step_k]
        ]
        if opened is not None:
            opened.set_attribute("hopgraph.hits", len(evidence))
    titles = ", ".join(e["title"] for e in evidence)
    return {
        "h_hat": h_hat.tolist(),
        "evidence": evidence,
        "gathered": evidence,
        "steps": [f"retrieve {n} (gnn_ret, β {ctx.beta}): {titles}"],
    }


def answer_step(state: State, runtime: Runtime[Context]) -> dict:
    """Answer the sub-question from this step's passages (§5.5)."""
    prompt = STEP_ANSWER.format(
        subquestion=state["subquestion"], passages=titled_passages(state["evidence"])
    )
    reply, usage = complete(runtime.context.chat, prompt)
    answer = " ".join(reply.split()) or "unknown"
    step = Step(subquestion=state["subquestion"], answer=answer)
    return {"trace": [step], "usage": usage, "steps": [f"intermediate answer: {answer}"]}


def critique(state: State, runtime: Runtime[Context]) -> dict:
    """Ask whether the intermediate answers are enough for the final answer (§5.6)."""
    prompt = CRITIQUE.format(trace=trace_text(state["question"], state["trace"]))
    # An unreadable verdict stops the loop: a model that cannot say yes or no after a repair
    # will not steer the next steps either, and each step costs three calls.
    enough, usage = ask_structured(runtime.context.chat, prompt, parse_critique, lambda _: True)
    line = labelled(f"critique: {'yes' if enough else 'no'}", usage, "taken as yes: stop")
    return {"enough": enough, "usage": usage, "steps": [line]}


def after_critique(state: State, runtime: Runtime[Context]) -> Literal["ask_next_step", "answer"]:
    """Stop when the critique says yes or the step bound is reached; else ask again."""
    if state["enough"] or len(state["trace"]) >= runtime.context.max_steps:
        return "answer"
    return "ask_next_step"


def answer(state: State, runtime: Runtime[Context]) -> dict:
    """Write the final answer from the gathered passages and the trace (§5.7), citing them."""
    passages = state["gathered"][:FINAL_PASSAGES]
    notes = "\n".join(trace_text(state["question"], state["trace"]).splitlines()[1:])
    text, cited, usage = answer_with_citations(
        runtime.context.chat, state["question"], runtime.context.reading(passages), notes
    )
    bound = "" if state["enough"] else f" (step bound {runtime.context.max_steps} reached)"
    return {
        "answer": text,
        "citations": cited,
        "usage": usage,
        "steps": [answer_line(text, usage, bound)],
    }


builder = StateGraph(State, context_schema=Context, input_schema=InputState)
builder.add_node(ask_next_step)
builder.add_node(retrieve)
builder.add_node(answer_step)
builder.add_node(critique)
builder.add_node(answer)
builder.add_edge(START, "ask_next_step")
builder.add_edge("ask_next_step", "retrieve")
builder.add_edge("retrieve", "answer_step")
builder.add_edge("answer_step", "critique")
builder.add_conditional_edges("critique", after_critique)
builder.add_edge("answer", END)
graph = builder.compile(name="RGNN-Ret")
