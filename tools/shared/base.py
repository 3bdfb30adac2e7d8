"""The retriever interface: one verb, ``retrieve(query, k) -> list[Hit]``."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from hopgraph.core.errors import InputError
from hopgraph.core.network import checked_text
from hopgraph.graph_store import Index
from hopgraph.graph_store.documents.filters import Where
from hopgraph.graph_store.stores.base import Scored

from . import spans
from .hits import Hit, Provenance, falling


class Retriever(ABC):
    """Base of every retriever: validates input, then ranks chunks of one index."""

    name: ClassVar[str]
    description: ClassVar[str]
    """What the method finds and when to use it; shown to LLMs that call it as a tool."""
    needs_graphs: ClassVar[bool] = False
    """Whether the method walks the passage or knowledge graph (`hopgraph graph build`)."""
    needs_llm: ClassVar[bool] = False
    """Whether the method calls an LLM at query time (see hopgraph.core.llm for the settings)."""
    needs_weights: ClassVar[bool] = False
    """Whether the method needs trained weights (`hopgraph train`) to run at all."""
    needs_triple_vectors: ClassVar[bool] = False
    """Whether the method searches the knowledge graph's triples by embedding: the registry
    embeds them at the method's first use when ``graph build`` left them out (the default)."""
    needs_base: ClassVar[bool] = False
    """Whether the method reranks or expands another retriever's results: its constructor then
    takes ``bases`` (:data:`Bases`), which the registry gives it."""
    embeds_query: ClassVar[bool] = True
    """Whether the method embeds the query (a traced retrieval shows it as a child span)."""
    score_kind: str = "cosine"
    """The scale of the method's scores (hits.SCORE_KINDS); an instance may set its own where
    an option changes it (GEAR's fusion), a step its hits' (gnn_ret's list reranker)."""
    presets: ClassVar[Mapping[str, Mapping[str, Any]]] = {}
    """Constructor options per preset (tools.registry.PRESETS): ``tuned`` is the constructor's
    defaults, ``paper`` the paper's settings; docs/methods.md gives every difference."""

    where: Where | None = None
    """A filter each result must pass (``make_retriever(..., where=...)``); see :meth:`retrieve`."""

    def __init__(self, index: Index) -> None:
        self.index = index

    def retrieve(self, query: str, k: int = 5, where: Where | None = None) -> list[Hit]:
        """Return the ``k`` best chunks for ``query``, best first.

        ``where`` (with the retriever's own :attr:`where`): only chunks that pass this filter on
        ``doc_id``, ``title``, ``source``, ``section`` or any metadata field of their document
        (:mod:`hopgraph.graph_store.documents.filters`: equal, not equal, one of, contains,
        starts with, has a part). The method ranks as it always does; its ranking is
        searched deeper until ``k`` such chunks are found or every chunk is ranked (methods
        that call an LLM rank once, four times deeper, to bound their calls).

        Scores fall with rank on the method's own scale (hits.falling: a hit the method placed
        above better-scored ones shows the score below it; ``Hit.raw_score`` keeps its own).
        Traced as an OpenTelemetry retrieval span when the process traces (tools.shared.spans).
        """
        query = checked_request(query, k)
        with spans.retrieval(self.name, self.index.directory.name, query, k) as opened:
            if opened is not None and self.embeds_query:  # its own child span; then kept
                model = {"gen_ai.operation.name": "embeddings",
                         "gen_ai.request.model": self.index.manifest.settings.model}  # fmt: skip
                with spans.span("embeddings", model):
                    self.index.embed_query(query)
            hits = falling(self.ranked(query, k, where))
            spans.record_hits(opened, hits)
        return hits

    def ranked(self, query: str, k: int, where: Where | None = None) -> list[Hit]:
        """Return the method's own list for a checked query: its order, its scores."""
        allowed = self.allowed(where)
        if allowed is None:
            return self._retrieve(query, k)
        return self._retrieve_within(query, k, allowed) if allowed else []

    def allowed(self, where: Where | None = None) -> frozenset[str] | None:
        """Return the chunks ``where`` and the retriever's own filter allow (None: every one)."""
        wanted = {**(self.where or {}), **(where or {})}
        return self.index.matching(wanted) if wanted else None

    @abstractmethod
    def _retrieve(self, query: str, k: int) -> list[Hit]:
        """Rank chunks for a validated query."""

    def _retrieve_within(self, query: str, k: int, allowed: frozenset[str]) -> list[Hit]:
        """Return the ``k`` best of the ``allowed`` chunks: the ranking, searched deeper."""
        total = len(self.index.chunks)
        depth = min(total, 4 * k)
        while True:
            hits = self._retrieve(query, depth)
            kept = [h for h in hits if h.id in allowed]
            exhausted = len(hits) < depth or depth >= total
            if len(kept) >= k or exhausted or self.needs_llm:
                return kept[:k]
            depth = min(total, 4 * depth)

    def _hits(self, scored: Scored, step: str) -> list[Hit]:
        """Turn (chunk id, score) pairs into hits with this method's provenance."""
        return [
            self._hit(chunk_id, score, Provenance(self.name, step, rank, score))
            for rank, (chunk_id, score) in enumerate(scored, start=1)
        ]

    def _hit(self, chunk_id: str, score: float, *provenance: Provenance) -> Hit:
        """Build the hit of a chunk with the given score and provenance."""
        chunk = self.index.chunk(chunk_id)
        metadata = self.index.metadata(chunk_id)
        return Hit(
            chunk.id, score, chunk.title, chunk.text, chunk.doc_id, provenance, metadata,
            score_kind=self.score_kind,
        )  # fmt: skip


Bases = Callable[[str], Retriever]
"""Makes the retriever registered under a name, over the same index. The registry hands one to
each retriever that builds on another (``needs_base``), so no retriever imports the registry."""


def checked_request(query: object, k: object) -> str:
    """Return the query stripped, or raise InputError for a query that is not text or a bad ``k``.

    The query as every surface checks it (core.network.checked_text: empty, NUL, a lone
    surrogate); ``k`` any positive whole number (a surface caps it: checked_k).
    """
    query = checked_text(query)
    if isinstance(k, bool) or not isinstance(k, int) or k <= 0:
        raise InputError(f"k must be a positive whole number, got {k!r}")
    return query
