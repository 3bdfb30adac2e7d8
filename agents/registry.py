"""The one table of agents: method name → the agent that answers with it.

Every surface takes its list from here: the CLI's ``ask`` / ``chat`` choices, the MCP ``ask``
tool, the LangChain ``ask`` tool, the LangGraph server's graphs (agents/server.py) and
``langgraph.json`` (tests/unit/agents/test_agent_registry.py checks it matches). Adding an agent is
one :class:`AgentSpec` here plus its package (graph.py with ``builder`` and ``graph``,
context.py with ``Context``).
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hopgraph.core.errors import UnknownMethodError
from hopgraph.tools import RETRIEVERS

if TYPE_CHECKING:  # the graphs import LangGraph: only when a run needs them, not for --help
    from langgraph.graph import StateGraph

    from .context import AgentContext


@dataclass(frozen=True)
class AgentSpec:
    """A multi-step agent: its method name (also its package under agents/) and loop bound."""

    name: str
    step_setting: str
    """The context field that bounds its loop (what ``ask --max-steps`` sets)."""
    needs_triple_vectors: bool = False
    """Whether it searches the triples by embedding (GEAR's gist memory → passages)."""


AGENTS: tuple[AgentSpec, ...] = (
    AgentSpec("rgnn_ret", "max_steps"),
    AgentSpec("gear", "max_rounds", needs_triple_vectors=True),
    AgentSpec("tog2", "depth"),
)
MULTI_STEP = tuple(a.name for a in AGENTS)
SINGLE_STEP = "retrieve_answer"
"""The package that answers with any single-step retriever: retrieve once, then read."""
DEFAULT_METHOD = "gear"
SERVED = ("chat", *MULTI_STEP)
"""The LangGraph server's graphs: the chat agent and each multi-step agent."""


def step_settings() -> dict[str, str]:
    """Return each multi-step agent's loop-bound field."""
    return {a.name: a.step_setting for a in AGENTS}


def needs_triple_vectors(methods: Sequence[str]) -> bool:
    """Tell whether any of ``methods`` (agents or retrievers) searches triples by embedding."""
    agents = {a.name: a.needs_triple_vectors for a in AGENTS}
    return any(
        agents[m] if m in agents else RETRIEVERS[m].needs_triple_vectors
        for m in methods
        if m in agents or m in RETRIEVERS
    )


def agent_methods() -> list[str]:
    """Return every method ``ask`` accepts: the multi-step agents, then the retrievers."""
    return [*MULTI_STEP, *RETRIEVERS]


def agent_for(method: str) -> tuple[StateGraph, type[AgentContext], dict[str, Any]]:
    """Return (graph builder, context type, fixed context settings) for a method name."""
    if method not in MULTI_STEP and method not in RETRIEVERS:
        raise UnknownMethodError(
            f"unknown method {method!r}", f"choose one of: {', '.join(agent_methods())}"
        )
    package = method if method in MULTI_STEP else SINGLE_STEP
    graph = importlib.import_module(f"hopgraph.agents.{package}.graph")
    context = importlib.import_module(f"hopgraph.agents.{package}.context")
    fixed = {} if method in MULTI_STEP else {"method": method}
    return graph.builder, context.Context, fixed


def compiled_graphs() -> dict[str, Any]:
    """Return every agent's compiled graph by package name (one place for the surfaces to use).

    These are compiled without a checkpointer, as a LangGraph server wants them; a run that
    should resume compiles its builder with one (see :func:`hopgraph.agents.run.run_agent`).
    """
    packages = [*MULTI_STEP, SINGLE_STEP]
    return {p: importlib.import_module(f"hopgraph.agents.{p}.graph").graph for p in packages}
