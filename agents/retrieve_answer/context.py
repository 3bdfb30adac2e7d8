"""Settings of a single-step run: which retriever feeds the reader."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from hopgraph.agents.context import AgentContext


@dataclass(kw_only=True)
class Context(AgentContext):
    """The shared context plus the retrieval method."""

    method: str = field(
        default="gnn_ret", metadata={"description": "single-step retriever (tools.RETRIEVERS)"}
    )
    token_budget: int = field(
        default=0,
        metadata={
            "description": "give the reader passages up to this many tokens instead of k "
            "(GNN-Ret §3.3: 3,500 for every method); 0: k passages"
        },
    )
    presets: ClassVar[Mapping[str, Mapping[str, Any]]] = {"paper": {"token_budget": 3500}}

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.token_budget < 0:
            raise ValueError(f"token_budget must be ≥ 0, got {self.token_budget}")
