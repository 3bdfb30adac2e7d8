"""State of a chat thread: the conversation, and what the last answer rested on."""

from __future__ import annotations

from typing import Annotated, TypedDict

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages

from hopgraph.agents.evidence import Evidence


class InputState(TypedDict):
    """A turn is started with the user's message."""

    messages: Annotated[list[AnyMessage], add_messages]


class State(InputState, total=False):
    """The conversation plus the last turn's standalone question, sources and trace."""

    standalone: str
    sources: list[Evidence]
    trace_id: str | None
    steps: list[str]
