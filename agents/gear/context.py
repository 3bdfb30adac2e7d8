"""Settings of a GEAR run (spec gear §4 and §6)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from hopgraph.agents.context import AgentContext


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
    read_k: int = field(
        default=10,
        metadata={
            "description": "passages of each round's SyncGE output the gist reader sees (the "
            "paper: all of it, about 30)"
        },
    )
    rrf_k: int = field(default=60, metadata={"description": "reciprocal rank fusion constant"})
    presets: ClassVar[Mapping[str, Mapping[str, Any]]] = {"paper": {"read_k": 30}}

    def __post_init__(self) -> None:
        super().__post_init__()
        if min(self.max_rounds, self.retrieve_k, self.read_k) < 1:
            raise ValueError("max_rounds, retrieve_k and read_k must be at least 1")
