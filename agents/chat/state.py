"""State of a chat thread: the conversation, and what the last answer rested on."""

from __future__ import annotations

from typing import Annotated

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages

# pydantic builds the servers' input schemas from these, and needs typing_extensions' TypedDict
# on Python < 3.12 (typing's made the LangGraph server publish no input schema)
from typing_extensions import TypedDict

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
