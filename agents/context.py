"""What every agent run is given: the index, the chat model, and the reader's passage count.

Runtime objects, not state: LangGraph passes them to nodes as ``runtime.context`` and never
checkpoints them, so a resumed run is given them again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Self

from langchain_core.language_models import BaseChatModel

from hopgraph.graph_store import Index
from hopgraph.graph_store.documents.filters import Where
from hopgraph.tools import DEFAULT_PRESET, Hit, Retriever, check_preset, make_retriever
from hopgraph.tools.shared.expand import EXPAND_HELP, Expansion, expand_hits

from .evidence import Evidence


@dataclass(kw_only=True)
class AgentContext:
    """Shared settings and resources of every agent."""

    index: Index = field(metadata={"description": "the index (with graphs) to retrieve from"})
    chat: BaseChatModel = field(
        metadata={"description": "the chat model; build it with hopgraph.core.llm.make_chat_model"}
    )
    k: int = field(default=5, metadata={"description": "passages the final reader is given"})
    preset: str = field(
        default=DEFAULT_PRESET,
        metadata={"description": "tuned (our best on dev) or paper (as the papers have it)"},
    )
    where: Where | None = field(
        default=None,
        metadata={
            "description": "only passages that pass this filter, e.g. "
            '{"section": {"$has": "Signals"}} (hopgraph.graph_store.documents.filters)'
        },
    )
    expand: str | None = field(
        default=None,
        metadata={"description": "what the reader is shown of each passage: " + EXPAND_HELP},
    )
    _retrievers: dict[tuple[str, str], Retriever] = field(default_factory=dict, repr=False)
    _expansion: Expansion | None = field(default=None, init=False, repr=False)

    presets: ClassVar[Mapping[str, Mapping[str, Any]]] = {}
    """Settings per preset where they differ from the field defaults (which are ``tuned``)."""

    def __post_init__(self) -> None:
        check_preset(self.preset)
        self._expansion = Expansion.parse(self.expand) if self.expand else None

    @classmethod
    def preset_settings(cls, preset: str) -> dict[str, Any]:
        """Return the settings ``preset`` gives this agent (explicit settings override them)."""
        return dict(cls.presets.get(check_preset(preset), {}))

    @classmethod
    def in_preset(cls, preset: str = DEFAULT_PRESET, **settings: Any) -> Self:
        """Build the context: ``preset``'s settings for this agent, overridden by ``settings``."""
        return cls(**{**cls.preset_settings(preset), **settings}, preset=preset)

    def retriever(self, name: str, **options: Any) -> Retriever:
        """Return the retriever ``name`` over the index (in this run's preset), built once."""
        key = (name, repr(sorted(options.items())))
        if key not in self._retrievers:
            self._retrievers[key] = make_retriever(
                name, self.index, preset=self.preset, where=self.where, **options
            )
        return self._retrievers[key]

    def reading(self, evidence: Sequence[Evidence]) -> list[Evidence]:
        """Return the passages the reader is shown: ``evidence``, widened when ``expand`` is set.

        A widened passage keeps its best chunk's id and step (tools.expand), so citations and
        the gathered evidence still name chunks.
        """
        if self._expansion is None:
            return list(evidence)
        found_by = {e["id"]: e["found_by"] for e in evidence}
        hits = [
            Hit(e["id"], e["score"], e["title"], e["text"], e["doc_id"], metadata=e["metadata"])
            for e in evidence
        ]
        wide = expand_hits(self.index, hits, self._expansion)
        return [
            Evidence(id=h.id, doc_id=h.doc_id, title=h.title, text=h.text, score=h.score,
                     found_by=found_by[h.id], metadata=dict(h.metadata))
            for h in wide
        ]  # fmt: skip

    def allows(self, chunk_id: str) -> bool:
        """Tell whether a chunk may be evidence: every chunk, or those ``where`` matches."""
        return self.where is None or chunk_id in self.index.matching(self.where)
