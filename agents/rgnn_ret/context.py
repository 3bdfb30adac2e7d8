"""Settings of an RGNN-Ret run (spec gnn_ret §4.1 and §6)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from hopgraph.agents.context import AgentContext
from hopgraph.core.errors import InputError


@dataclass(kw_only=True)
class Context(AgentContext):
    """The shared context plus the loop's settings."""

    beta: float = field(
        default=0.9,
        metadata={"description": "Eq. 6: weight of this step's distances against earlier ones"},
    )
    max_steps: int = field(
        default=5, metadata={"description": "sub-questions at most, then the answer is forced"}
    )
    step_k: int = field(default=5, metadata={"description": "passages read per sub-answer"})
    weights: str | None = field(
        default=None,
        metadata={"description": "learned α's and β (`hopgraph train rgnn_ret`); β overrides"},
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.weights is not None:
            try:
                self.beta = float(json.loads(Path(self.weights).read_text())["beta"])
            except (OSError, ValueError, KeyError, TypeError) as err:
                raise InputError(
                    f"{self.weights}: not an RGNN-Ret weights file ({err})",
                    "train one: `hopgraph train rgnn_ret --data DIR`",
                ) from err
        if not 0.0 <= self.beta <= 1.0:
            raise ValueError(f"beta must be in [0, 1], got {self.beta}")
        if self.max_steps < 1 or self.step_k < 1:
            raise ValueError("max_steps and step_k must be at least 1")
