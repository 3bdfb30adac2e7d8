"""A retriever for LlamaIndex: ``NodeWithScore``s for query engines, chat engines and agents.

Needs llama-index-core, an optional extra: ``pip install "hopgraph[llamaindex]"``.
"""

from __future__ import annotations

import asyncio
from typing import Any

from hopgraph.core.errors import InputError
from hopgraph.core.network import checked_k
from hopgraph.graph_store.documents.filters import OPERATORS, Where, joined_where
from hopgraph.tools.shared.expand import Expansion
from hopgraph.tools.shared.hits import Hit
from hopgraph.tools.shared.registry import DEFAULT_PRESET, check_preset, checked_method

from .sources import IndexReader, IndexSource, widened

INSTALL_HINT = 'pip install "hopgraph[llamaindex]"'

try:
    from llama_index.core.callbacks import CallbackManager
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import (
        NodeRelationship,
        NodeWithScore,
        QueryBundle,
        RelatedNodeInfo,
        TextNode,
    )
    from llama_index.core.vector_stores.types import FilterCondition, MetadataFilters
except ModuleNotFoundError as err:
    raise ModuleNotFoundError(
        f"hopgraph's LlamaIndex retriever needs llama-index-core ({err}); "
        f"install the extra: {INSTALL_HINT}",
        name=err.name,
    ) from err

NOT_FOR_THE_LLM = (
    "position", "chunks", "method", "rank", "score_kind", "raw_score", "provenance",
)  # fmt: skip
"""Metadata a node keeps but leaves out of the text an LLM or an embedder reads."""


class HopgraphLlamaIndexRetriever(BaseRetriever):
    """A hopgraph method as a LlamaIndex retriever: ``TextNode``s with their metadata and score.

    ``retriever.retrieve("question")`` (or ``aretrieve``) returns the ``k`` best passages of
    ``method`` over ``index`` as ``NodeWithScore``s, in the method's order. Each node's
    ``node_id`` is the hit's id, its text the passage, its ``ref_doc_id`` the document's id,
    and its metadata the hit's (``Hit.metadata``: the document's fields and source, the
    chunk's section, position and count) with its ``id``, ``doc_id``, ``title`` and
    ``method``. Usable anywhere a retriever is, e.g.
    ``RetrieverQueryEngine.from_args(retriever, llm=llm)``.

    Args:
        index: an index folder's path (opened as a ``LiveIndex``: each retrieval reads the
            newest committed generation), ``Index.open(DIR)`` (kept open while the retriever
            is used) or a ``LiveIndex``.
        method: a retrieval method (``hopgraph.tools.RETRIEVERS``).
        k: how many passages to return, 1 to 50.
        where: a filter every passage must pass (docs/documents.md).
        filters: LlamaIndex's ``MetadataFilters``, read as ``where`` (:func:`where_of`).
        expand: ``"section"`` or ``"neighbours[:N]"`` to widen each hit (tools.expand).
        preset: the method's settings, ``"tuned"`` or ``"paper"``.
        callback_manager: LlamaIndex's callbacks (its ``Settings`` default otherwise).
    """

    def __init__(
        self,
        index: IndexSource,
        method: str = "gnn_ret",
        k: int = 5,
        where: Where | None = None,
        expand: str | None = None,
        filters: MetadataFilters | None = None,
        preset: str = DEFAULT_PRESET,
        callback_manager: CallbackManager | None = None,
    ) -> None:
        k = checked_k(k)  # as the CLI's -k and the servers' k: "²", True, 0 and 51 refused
        self.method, self.k, self.preset = checked_method(method), k, check_preset(preset)
        self.where = joined_where(where, where_of(filters) if filters else None)
        self.expand = expand
        if expand:
            Expansion.parse(expand)  # a typo is named now, not at the first retrieval
        self._reader = IndexReader(index)
        self.index = index
        super().__init__(callback_manager=callback_manager)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        hits = widened(self._reader, self.method, query_bundle.query_str, self.k, self.where,
                       self.expand, self.preset)  # fmt: skip
        return [as_node(hit, self.method, rank) for rank, hit in enumerate(hits, start=1)]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        # retrieval is CPU work on numpy and memory maps: a worker thread keeps the loop free
        return await asyncio.to_thread(self._retrieve, query_bundle)


_FILTER_OPERATORS = {
    "==": "$eq",
    "!=": "$ne",
    "in": "$in",
    "text_match_insensitive": "$contains",
    "contains": "$has",
}
"""LlamaIndex's operators that hopgraph's filters have: ``contains`` (a list field holds the
value) is ``$has`` (one entry of a list field, or one heading of ``section``)."""


def where_of(filters: MetadataFilters) -> dict[str, Any]:
    """Return LlamaIndex ``MetadataFilters`` as a hopgraph filter (``where``).

    Conditions joined by ``and`` (nested ones too); an operator or a condition hopgraph's
    filters do not have is an InputError that names it.
    """
    if filters.condition not in (None, FilterCondition.AND):
        raise InputError(
            f"filters: condition {filters.condition.value!r}: hopgraph's filters keep what "
            "passes every condition",
            "join the filters with FilterCondition.AND, or retrieve once per alternative",
        )
    where: dict[str, Any] = {}
    for item in filters.filters:
        part = (
            where_of(item)
            if isinstance(item, MetadataFilters)
            else {item.key: {_operator(item.operator.value, item.key): item.value}}
        )
        where = joined_where(where, part) or {}
    return where


def _operator(name: str, key: str) -> str:
    if name not in _FILTER_OPERATORS:
        have = ", ".join(_FILTER_OPERATORS)
        raise InputError(
            f"filters: operator {name!r} on {key!r} is not one hopgraph's filters have",
            f"use one of: {have} (hopgraph's {', '.join(OPERATORS)})",
        )
    return _FILTER_OPERATORS[name]


def as_node(hit: Hit, method: str, rank: int = 1) -> NodeWithScore:
    """Return a hit as a LlamaIndex ``TextNode`` with its score, rank and provenance."""
    metadata = {
        **hit.metadata,
        "id": hit.id,
        "doc_id": hit.doc_id,
        "title": hit.title,
        "method": method,
        "rank": rank,
        "score_kind": hit.score_kind,
        "raw_score": hit.own_score,
        "provenance": hit.to_dict()["provenance"],
    }
    node = TextNode(
        id_=hit.id,
        text=hit.text,
        metadata=metadata,
        relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id=hit.doc_id)},
        excluded_llm_metadata_keys=list(NOT_FOR_THE_LLM),
        excluded_embed_metadata_keys=list(NOT_FOR_THE_LLM),
    )
    return NodeWithScore(node=node, score=hit.score)
