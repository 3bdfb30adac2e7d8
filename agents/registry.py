"""Method name → the agent that answers with it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hopgraph.core.errors import UnknownMethodError
from tools import RETRIEVERS

if TYPE_CHECKING:  # the graphs import LangGraph: only when a run needs them, not for --help
    from langgraph.graph import StateGraph

    from .context import AgentContext


def _agents() -> dict[str, tuple[StateGraph, type[AgentContext]]]:
    from .gear import context as gear_context
    from .gear import graph as gear
    from .retrieve_answer import context as single_context
    from .retrieve_answer import graph as single
    from .rgnn_ret import context as rgnn_context
    from .rgnn_ret import graph as rgnn
    from .tog2 import context as tog2_context
    from .tog2 import graph as tog2

    return {
        "retrieve_answer": (single.builder, single_context.Context),
        "rgnn_ret": (rgnn.builder, rgnn_context.Context),
        "gear": (gear.builder, gear_context.Context),
        "tog2": (tog2.builder, tog2_context.Context),
    }


MULTI_STEP = ("rgnn_ret", "gear", "tog2")


def agent_methods() -> list[str]:
    """Return every method ``ask`` accepts: the multi-step agents, then the retrievers."""
    return [*MULTI_STEP, *RETRIEVERS]


def agent_for(method: str) -> tuple[StateGraph, type[AgentContext], dict[str, Any]]:
    """Return (graph builder, context type, fixed context settings) for a method name."""
    agents = _agents()
    if method in agents and method != "retrieve_answer":
        builder, context = agents[method]
        return builder, context, {}
    if method in RETRIEVERS:
        builder, context = agents["retrieve_answer"]
        return builder, context, {"method": method}
    raise UnknownMethodError(
        f"unknown method {method!r}", f"choose one of: {', '.join(agent_methods())}"
    )


def compiled_graphs() -> dict[str, Any]:
    """Return every agent's compiled graph by method name (one place for the surfaces to use).

    These are compiled without a checkpointer, as a LangGraph server wants them; a run that
    should resume compiles its builder with one (see :func:`agents.run.run_agent`).
    """
    from .gear.graph import graph as gear
    from .retrieve_answer.graph import graph as retrieve_answer
    from .rgnn_ret.graph import graph as rgnn_ret
    from .tog2.graph import graph as tog2

    return {"rgnn_ret": rgnn_ret, "gear": gear, "tog2": tog2, "retrieve_answer": retrieve_answer}
