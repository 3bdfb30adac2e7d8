"""What every agent run is given: the index, the chat model, and the reader's passage count.

Runtime objects, not state: LangGraph passes them to nodes as ``runtime.context`` and never
checkpoints them, so a resumed run is given them again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models import BaseChatModel

from graph_store import Index
from tools import Retriever, make_retriever


@dataclass(kw_only=True)
class AgentContext:
    """Shared settings and resources of every agent."""

    index: Index = field(metadata={"description": "the index (with graphs) to retrieve from"})
    chat: BaseChatModel = field(
        metadata={"description": "the chat model; build it with hopgraph.llm.make_chat_model"}
    )
    k: int = field(default=5, metadata={"description": "passages the final reader is given"})
    _retrievers: dict[tuple[str, str], Retriever] = field(default_factory=dict, repr=False)

    def retriever(self, name: str, **options: Any) -> Retriever:
        """Return the retriever ``name`` over the index, built once per run and options."""
        key = (name, repr(sorted(options.items())))
        if key not in self._retrievers:
            self._retrievers[key] = make_retriever(name, self.index, **options)
        return self._retrievers[key]
