"""State of an RGNN-Ret run, and the parsers of its LLM replies."""

from __future__ import annotations

import operator
import re
from typing import Annotated

# pydantic builds the servers' input schemas from these, and needs typing_extensions' TypedDict
# on Python < 3.12 (typing's made the LangGraph server publish no input schema)
from typing_extensions import TypedDict

from hopgraph.agents.evidence import Evidence
from hopgraph.agents.state import AnswerState, InputState

__all__ = ["InputState", "State", "Step", "parse_critique", "parse_next_step"]


class Step(TypedDict):
    """One sub-question and its intermediate answer."""

    subquestion: str
    answer: str


class State(AnswerState, total=False):
    """The shared outputs plus the loop's working keys."""

    trace: Annotated[list[Step], operator.add]
    subquestion: str
    h_hat: list[float]
    """Eq. 6's running blend of GNN distances over every chunk."""
    evidence: list[Evidence]
    """This step's passages, ranked by the running blend."""
    enough: bool
    """The last critique's verdict."""


_CRITIQUE = re.compile(r"critique\W*(yes|no)\b", re.IGNORECASE)


def parse_next_step(reply: str) -> str:
    """Return the sub-question: the first non-empty line after the last "Next step:"."""
    text = reply.rsplit("Next step:", 1)[-1] if "Next step:" in reply else reply
    for line in text.splitlines():
        line = line.strip()
        if line.lower().startswith(("intermediate answer", "question:")):
            break
        if line:
            return line
    raise ValueError("no next-step question in the reply")


def parse_critique(reply: str) -> bool:
    """Return the verdict of the last "Critique: yes|no" (§5.6, case-insensitive)."""
    verdicts = _CRITIQUE.findall(reply)
    if not verdicts:
        raise ValueError('no "Critique: yes" or "Critique: no"')
    return verdicts[-1].lower() == "yes"
