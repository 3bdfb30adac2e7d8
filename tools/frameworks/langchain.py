"""Retrievers for LangChain: tools for LLM agents, and a ``BaseRetriever`` for chains."""

from __future__ import annotations

import asyncio

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document as LangChainDocument
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import BaseTool, StructuredTool
from pydantic import BaseModel, ConfigDict, Field, field_validator

from hopgraph.core.network import checked_k
from hopgraph.graph_store import Index
from hopgraph.graph_store.documents.filters import JSON_HELP, Where, WhereValue, checked_where
from hopgraph.tools.shared.base import Retriever
from hopgraph.tools.shared.expand import EXPAND_HELP, Expansion, expand_hits
from hopgraph.tools.shared.hits import Hit, order_note
from hopgraph.tools.shared.registry import (
    DEFAULT_PRESET,
    RETRIEVERS,
    checked_method,
    make_retriever,
)


class RetrieveInput(BaseModel):
    """Arguments of every retrieval tool."""

    query: str = Field(min_length=1, description="the question or keywords to search for")
    k: int = Field(5, ge=1, le=50, description="how many passages to return")
    where: dict[str, WhereValue] | None = Field(None, description=JSON_HELP)
    expand: str | None = Field(None, description=EXPAND_HELP)

    @field_validator("where", mode="before")
    @classmethod
    def _where(cls, value: object) -> object:
        return checked_where(value)  # the CLI's words, not pydantic's dump


def format_hits(hits: list[Hit]) -> str:
    """Render hits as numbered passages an LLM can cite by id."""
    if not hits:
        return "No passages found."
    text = "\n\n".join(
        f"[{i}] id={h.id} title={h.title!r} score={h.score:.3f}\n{h.text}"
        for i, h in enumerate(hits, start=1)
    )
    note = order_note(hits)
    return text if note is None else f"{text}\n\n(Passages {note}.)"


def widened(
    retriever: Retriever, query: str, k: int, where: Where | None, expand: str | None
) -> list[Hit]:
    """Return the retriever's hits, widened by ``expand`` when given (tools.expand)."""
    expansion = Expansion.parse(expand) if expand else None  # a typo is named before retrieving
    hits = retriever.retrieve(query, k, where)
    return expand_hits(retriever.index, hits, expansion) if expansion is not None else hits


def as_tool(retriever: Retriever) -> BaseTool:
    """Wrap a retriever: the content is text for the model, the artifact is the list of hits."""

    def run(
        query: str, k: int = 5, where: Where | None = None, expand: str | None = None
    ) -> tuple[str, list[Hit]]:
        hits = widened(retriever, query, k, where, expand)
        return format_hits(hits), hits

    return StructuredTool.from_function(
        func=run,
        name=f"retrieve_{retriever.name}",
        description=retriever.description,
        args_schema=RetrieveInput,
        response_format="content_and_artifact",
    )


def retrieval_tools(index: Index, names: list[str] | None = None) -> list[BaseTool]:
    """Return the named retrievers as tools over ``index`` (default: every LLM-free one)."""
    default = [n for n, cls in RETRIEVERS.items() if not (cls.needs_llm or cls.needs_weights)]
    return [as_tool(make_retriever(name, index)) for name in names or default]


class HopgraphRetriever(BaseRetriever):
    """A hopgraph method as a LangChain retriever: ``Document``s with their metadata and score.

    ``retriever.invoke("question")`` (or ``ainvoke``) returns the ``k`` best passages of
    ``method`` over ``index``; each ``Document`` carries the hit's metadata (``Hit.metadata``:
    the document's fields and source, the chunk's section, position and count) and its ``id``,
    ``doc_id``, ``title``, ``score`` and ``method``. Usable anywhere a retriever is, e.g.
    ``{"context": retriever | format, "question": RunnablePassthrough()} | prompt | llm``.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    index: Index
    method: str = "gnn_ret"
    k: int = Field(5, ge=1, le=50)
    where: dict[str, WhereValue] | None = None
    expand: str | None = None
    preset: str = DEFAULT_PRESET

    # Checked as the CLI checks them, before pydantic's lax coercion (which reads True as 1):
    # the same error and message on every surface (core.network.checked_k).
    @field_validator("k", mode="before")
    @classmethod
    def _k(cls, value: object) -> int:
        return checked_k(value)  # type: ignore[arg-type]

    @field_validator("method", mode="before")
    @classmethod
    def _method(cls, value: object) -> str:
        return checked_method(value)

    @field_validator("where", mode="before")
    @classmethod
    def _where(cls, value: object) -> object:
        return checked_where(value)

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[LangChainDocument]:
        retriever = make_retriever(self.method, self.index, preset=self.preset)
        hits = widened(retriever, query, self.k, self.where, self.expand)
        return [as_document(hit, self.method) for hit in hits]

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> list[LangChainDocument]:
        # retrieval is CPU work on numpy and memory maps: a worker thread keeps the loop free
        return await asyncio.to_thread(
            self._get_relevant_documents, query, run_manager=run_manager.get_sync()
        )


def as_document(hit: Hit, method: str) -> LangChainDocument:
    """Return a hit as a LangChain ``Document``: its text, and its metadata with its score."""
    metadata = {
        **hit.metadata,
        "id": hit.id,
        "doc_id": hit.doc_id,
        "title": hit.title,
        "score": hit.score,
        "method": method,
    }
    return LangChainDocument(page_content=hit.text, metadata=metadata, id=hit.id)
