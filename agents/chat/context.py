"""Settings of a chat turn."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hopgraph.agents.context import AgentContext
from hopgraph.agents.registry import DEFAULT_METHOD


@dataclass(kw_only=True)
class Context(AgentContext):
    """The shared context plus the method answering and where its steps are shown."""

    method: str = field(default=DEFAULT_METHOD, metadata={"description": "the method that answers"})
    on_update: Callable[[str, dict[str, Any]], None] | None = field(
        default=None, metadata={"description": "called as each step of the answer finishes"}
    )
