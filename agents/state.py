"""State keys every agent shares: the question in, the answer and its accounting out."""

from __future__ import annotations

import operator
from typing import Annotated

# pydantic builds the servers' input schemas from these, and needs typing_extensions' TypedDict
# on Python < 3.12 (typing's made the LangGraph server publish no input schema)
from typing_extensions import TypedDict

from hopgraph.core.llm import Usage, add_usage

from .evidence import Evidence, gather


class InputState(TypedDict):
    """What a run is started with."""

    question: str


class AnswerState(InputState, total=False):
    """The outputs of every agent; each agent's state adds its own working keys."""

    answer: str
    citations: list[Evidence]
    """The passages the answer cites."""
    gathered: Annotated[list[Evidence], gather]
    """Every passage the run retrieved, in order first seen (scored for recall)."""
    usage: Annotated[Usage, add_usage]
    """LLM calls, tokens and seconds, summed over the nodes."""
    steps: Annotated[list[str], operator.add]
    """One line per node: what it did (shown by `hopgraph ask`)."""
