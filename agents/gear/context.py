"""Settings of a GEAR run (spec gear §4 and §6)."""

from __future__ import annotations

from dataclasses import dataclass, field

from agents.context import AgentContext


@dataclass(kw_only=True)
class Context(AgentContext):
    """The shared context plus the loop's settings."""

    max_rounds: int = field(
        default=4,
        metadata={"description": "rounds at most (the paper: 4 on MuSiQue, 2 on the others)"},
    )
    retrieve_k: int = field(
        default=10, metadata={"description": "passages SyncGE returns per round and per link"}
    )
    rrf_k: int = field(default=60, metadata={"description": "reciprocal rank fusion constant"})

    def __post_init__(self) -> None:
        if self.max_rounds < 1 or self.retrieve_k < 1:
            raise ValueError("max_rounds and retrieve_k must be at least 1")
