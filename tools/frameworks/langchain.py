"""Retrievers for LangChain: tools for LLM agents, and a ``BaseRetriever`` for chains."""

from __future__ import annotations

import asyncio
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document as LangChainDocument
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import BaseTool, StructuredTool
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator

from hopgraph.core.errors import InputError
from hopgraph.core.network import checked_k
from hopgraph.graph_store.documents.filters import (
    JSON_HELP,
    Where,
    WhereValue,
    checked_where,
    joined_where,
)
from hopgraph.tools.shared.expand import EXPAND_HELP
from hopgraph.tools.shared.hits import Hit, order_note
from hopgraph.tools.shared.registry import (
    DEFAULT_PRESET,
    RETRIEVERS,
    checked_method,
    served_methods,
)

from .sources import IndexReader, IndexSource, widened

SEARCH_KWARGS = ("k", "where", "filter")
"""What ``search_kwargs`` and a call's keyword arguments may set (``filter``: ``where``, by the
name LangChain's vector-store retrievers give it)."""


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


def as_tool(reader: IndexReader, method: str) -> BaseTool:
    """Wrap a method: the content is text for the model, the artifact is the list of hits."""
    cls = RETRIEVERS[method]

    def run(
        query: str, k: int = 5, where: Where | None = None, expand: str | None = None
    ) -> tuple[str, list[Hit]]:
        hits = widened(reader, method, query, k, where, expand)
        return format_hits(hits), hits

    return StructuredTool.from_function(
        func=run,
        name=f"retrieve_{method}",
        description=cls.description,
        args_schema=RetrieveInput,
        response_format="content_and_artifact",
    )


def retrieval_tools(index: IndexSource, names: list[str] | None = None) -> list[BaseTool]:
    """Return the named methods as tools over ``index`` (a path, an Index or a LiveIndex).

    Default: every method the index runs without an LLM (G-RAG and the other trained ones
    when it holds their weights), as MCP and the page offer them.
    """
    reader = IndexReader(index)
    if names is None:
        with reader.reading() as opened:
            names = list(served_methods(opened))
    return [as_tool(reader, checked_method(name)) for name in names]


class HopgraphRetriever(BaseRetriever):
    """A hopgraph method as a LangChain retriever: ``Document``s with their metadata and score.

    ``retriever.invoke("question")`` (or ``ainvoke``) returns the ``k`` best passages of
    ``method`` over ``index``; each ``Document`` carries the hit's metadata (``Hit.metadata``:
    the document's fields and source, the chunk's section, position and count) and its ``id``,
    ``doc_id``, ``title``, ``score`` and ``method``. Usable anywhere a retriever is, e.g.
    ``{"context": retriever | format, "question": RunnablePassthrough()} | prompt | llm``.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    index: Any
    """An index folder's path (opened as a LiveIndex: calls see later writes), an ``Index``
    or a ``LiveIndex``."""
    method: str = "gnn_ret"
    k: int = Field(5, ge=1, le=50)
    where: dict[str, WhereValue] | None = None
    expand: str | None = None
    preset: str = DEFAULT_PRESET
    search_kwargs: dict[str, Any] = Field(default_factory=dict)
    """LangChain's vector-store convention: ``{"k": 2, "filter": {...}}`` (``where`` too)."""
    _reader: IndexReader = PrivateAttr()

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

    @field_validator("search_kwargs", mode="before")
    @classmethod
    def _search_kwargs(cls, value: object) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise InputError(f"search_kwargs: {value!r:.60} is not a dict", _KWARGS_HINT)
        return call_options(value, "search_kwargs")

    def model_post_init(self, context: Any) -> None:
        """Resolve the index: a path is opened here, so a wrong one fails at construction."""
        self._reader = IndexReader(self.index)

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[LangChainDocument]:
        kwargs.pop("verbose", None)  # LangChain's own, passed on by invoke
        call = call_options(kwargs, "invoke")
        k = call.get("k", self.search_kwargs.get("k", self.k))
        # every filter holds: a call narrows the retriever's scope, never widens it
        where = joined_where(joined_where(self.where, self.search_kwargs.get("where")),
                             call.get("where"))  # fmt: skip
        hits = widened(self._reader, self.method, query, k, where, self.expand, self.preset)
        return [as_document(hit, self.method, rank) for rank, hit in enumerate(hits, start=1)]

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[LangChainDocument]:
        # retrieval is CPU work on numpy and memory maps: a worker thread keeps the loop free
        return await asyncio.to_thread(
            self._get_relevant_documents, query, run_manager=run_manager.get_sync(), **kwargs
        )


_KWARGS_HINT = "give k (1 to 50) and where (or filter, a filter as --where's JSON)"


def call_options(given: dict[str, Any], what: str) -> dict[str, Any]:
    """Return ``k`` and ``where`` from a call's keyword arguments, checked as the CLI does.

    An unknown name is an error that names it (a misspelt ``topk`` was silently ignored).
    """
    unknown = sorted(set(given) - set(SEARCH_KWARGS))
    if unknown:
        raise InputError(f"{what}: unknown argument(s) {', '.join(map(repr, unknown))}",
                         _KWARGS_HINT)  # fmt: skip
    if "where" in given and "filter" in given:
        raise InputError(f"{what}: both where and filter given", "give one of them")
    out: dict[str, Any] = {}
    if "k" in given:
        out["k"] = checked_k(given["k"])
    if "where" in given or "filter" in given:
        out["where"] = checked_where(given.get("where", given.get("filter")))
    return out


def as_document(hit: Hit, method: str, rank: int = 1) -> LangChainDocument:
    """Return a hit as a LangChain ``Document``: its text, and metadata with rank and score.

    ``provenance``: each step that placed it, as ``Hit.to_dict`` gives them.
    """
    metadata = {
        **hit.metadata,
        "id": hit.id,
        "doc_id": hit.doc_id,
        "title": hit.title,
        "rank": rank,
        "score": hit.score,
        "score_kind": hit.score_kind,
        "raw_score": hit.own_score,
        "method": method,
        "provenance": hit.to_dict()["provenance"],
    }
    return LangChainDocument(page_content=hit.text, metadata=metadata, id=hit.id)
