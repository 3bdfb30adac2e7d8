"""A retriever for LlamaIndex: ``NodeWithScore``s for query engines, chat engines and agents.

Needs llama-index-core, an optional extra: ``pip install "hopgraph[llamaindex]"``.
"""

from __future__ import annotations

import asyncio

from hopgraph.core.network import checked_k
from hopgraph.graph_store import Index
from hopgraph.graph_store.documents.filters import Where
from hopgraph.tools.shared.expand import Expansion, expand_hits
from hopgraph.tools.shared.hits import Hit
from hopgraph.tools.shared.registry import (
    DEFAULT_PRESET,
    check_preset,
    checked_method,
    make_retriever,
)

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
except ModuleNotFoundError as err:
    raise ModuleNotFoundError(
        f"hopgraph's LlamaIndex retriever needs llama-index-core ({err}); "
        f"install the extra: {INSTALL_HINT}",
        name=err.name,
    ) from err

NOT_FOR_THE_LLM = ("position", "chunks", "method")
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
        index: the index to search (``Index.open``; kept open while the retriever is used).
        method: a retrieval method (``hopgraph.tools.RETRIEVERS``).
        k: how many passages to return, 1 to 50.
        where: a filter every passage must pass (docs/documents.md).
        expand: ``"section"`` or ``"neighbours[:N]"`` to widen each hit (tools.expand).
        preset: the method's settings, ``"tuned"`` or ``"paper"``.
        callback_manager: LlamaIndex's callbacks (its ``Settings`` default otherwise).
    """

    def __init__(
        self,
        index: Index,
        method: str = "gnn_ret",
        k: int = 5,
        where: Where | None = None,
        expand: str | None = None,
        preset: str = DEFAULT_PRESET,
        callback_manager: CallbackManager | None = None,
    ) -> None:
        k = checked_k(k)  # as the CLI's -k and the servers' k: "²", True, 0 and 51 refused
        self.index, self.method, self.k, self.where = index, checked_method(method), k, where
        self.preset = check_preset(preset)
        self.expand = expand
        self._expansion = Expansion.parse(expand) if expand else None  # a typo is named now
        super().__init__(callback_manager=callback_manager)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        retriever = make_retriever(self.method, self.index, preset=self.preset)
        hits = retriever.retrieve(query_bundle.query_str, self.k, self.where)
        if self._expansion is not None:
            hits = expand_hits(self.index, hits, self._expansion)
        return [as_node(hit, self.method) for hit in hits]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        # retrieval is CPU work on numpy and memory maps: a worker thread keeps the loop free
        return await asyncio.to_thread(self._retrieve, query_bundle)


def as_node(hit: Hit, method: str) -> NodeWithScore:
    """Return a hit as a LlamaIndex ``TextNode`` with its score."""
    metadata = {
        **hit.metadata,
        "id": hit.id,
        "doc_id": hit.doc_id,
        "title": hit.title,
        "method": method,
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
