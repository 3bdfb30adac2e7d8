"""State of a single-step run."""

from __future__ import annotations

from hopgraph.agents.evidence import Evidence
from hopgraph.agents.state import AnswerState, InputState

__all__ = ["InputState", "State"]


class State(AnswerState, total=False):
    """The shared outputs plus the passages handed to the reader."""

    evidence: list[Evidence]
