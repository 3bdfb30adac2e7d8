"""Settings of a single-step run: which retriever feeds the reader."""

from __future__ import annotations

from dataclasses import dataclass, field

from agents.context import AgentContext


@dataclass(kw_only=True)
class Context(AgentContext):
    """The shared context plus the retrieval method."""

    method: str = field(
        default="gnn_ret", metadata={"description": "single-step retriever (tools.RETRIEVERS)"}
    )
