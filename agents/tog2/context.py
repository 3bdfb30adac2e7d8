"""Settings of a ToG-2 run (spec tog2 §5: W = 3, D = 3, K = 10, α = 0.8)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from hopgraph.agents.context import AgentContext


@dataclass(kw_only=True)
class Context(AgentContext):
    """The shared context plus the search's bounds."""

    width: int = field(
        default=3, metadata={"description": "W: topic entities kept, relations per entity"}
    )
    depth: int = field(default=3, metadata={"description": "D: search rounds at most"})
    top_chunks: int = field(
        default=10, metadata={"description": "K: chunks kept per round (Ctx) and for reasoning"}
    )
    alpha: float = field(default=0.8, metadata={"description": "Eq. 6: rank decay exp(−α·k)"})
    max_relations: int = field(
        default=40, metadata={"description": "relations shown per entity, the most frequent"}
    )
    max_tails: int = field(default=50, metadata={"description": "candidates per relation at most"})
    triple_sentences: bool = field(
        default=False,
        metadata={
            "description": "Eq. 5: score each candidate's chunks with the triple that reached it "
            "prefixed, each (candidate, chunk) pair on its own (the paper); off: chunks by "
            "their cosine to the query, each chunk once for its best candidate"
        },
    )
    topic_context: bool = field(
        default=True,
        metadata={
            "description": "the current topic entities' chunks, scored by the round's "
            "(re-formed) query, join the candidates' in Ctx (ours; off: candidates only)"
        },
    )
    newest_first: bool = field(
        default=True,
        metadata={
            "description": "the reasoner sees this round's Ctx first, then earlier rounds' "
            "(ours); off: all rounds' chunks by closeness to the question"
        },
    )
    name_search: int = field(
        default=10,
        metadata={
            "description": "Doc(e) also holds the chunks BM25 finds for the entity's name, "
            "this many (ours; 0: only the chunks whose extraction mentions it)"
        },
    )
    question_chunks: int = field(
        default=5,
        metadata={
            "description": "Ctx⁰ also holds the first this many passages the default graph "
            "method (gnn_ret) finds for the question, first (ours; 0: only the topic entities' "
            "chunks, as the paper)"
        },
    )
    presets: ClassVar[Mapping[str, Mapping[str, Any]]] = {
        "paper": {
            "triple_sentences": True,
            "topic_context": False,
            "newest_first": False,
            "name_search": 0,
            "question_chunks": 0,
        }
    }
    chunks_per_entity: int = field(
        default=10, metadata={"description": "an entity's chunks scored at most (closest first)"}
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if min(self.width, self.depth, self.top_chunks, self.max_tails) < 1:
            raise ValueError("width, depth, top_chunks and max_tails must be at least 1")
        if not 0 <= self.question_chunks <= self.top_chunks:
            raise ValueError("question_chunks must be between 0 and top_chunks")
