"""hopgraph: multi-hop retrieval along the connections between passages.

The few names a library user needs (docs/api.md), imported on first use (PEP 562), so
``import hopgraph`` and the CLI's start stay cheap:

- build or open an index: :func:`build_index`, :func:`add_documents`, :func:`delete_documents`,
  :func:`sync_documents`, :func:`build_graphs`, :func:`load_corpus`, :class:`Document`,
  :class:`IndexSettings`, :class:`Index` (``Index.open``), :class:`LiveIndex` (follows writes);
- retrieve: :func:`make_retriever` (a retriever by name; ``retrieve(query, k, where)``),
  :data:`RETRIEVERS`, :class:`Hit`;
- in LangChain and LlamaIndex: :class:`HopgraphRetriever`, :func:`retrieval_tools` (an agent's
  tools), :class:`HopgraphLlamaIndexRetriever` (the ``llamaindex`` extra);
- answer: :func:`run_agent` with a chat model from :func:`choose_chat`.
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hopgraph.agents.run import RunResult, run_agent
    from hopgraph.core.llm import choose_chat
    from hopgraph.core.settings import IndexSettings
    from hopgraph.graph_store import (
        Document,
        Index,
        LiveIndex,
        add_documents,
        build_graphs,
        build_index,
        delete_documents,
        load_corpus,
        sync_documents,
    )
    from hopgraph.tools import (
        RETRIEVERS,
        Hit,
        HopgraphLlamaIndexRetriever,
        HopgraphRetriever,
        make_retriever,
        retrieval_tools,
    )

_API = {
    "Document": "hopgraph.graph_store",
    "Index": "hopgraph.graph_store",
    "LiveIndex": "hopgraph.graph_store",
    "add_documents": "hopgraph.graph_store",
    "build_graphs": "hopgraph.graph_store",
    "build_index": "hopgraph.graph_store",
    "delete_documents": "hopgraph.graph_store",
    "load_corpus": "hopgraph.graph_store",
    "sync_documents": "hopgraph.graph_store",
    "IndexSettings": "hopgraph.core.settings",
    "RETRIEVERS": "hopgraph.tools",
    "Hit": "hopgraph.tools",
    "make_retriever": "hopgraph.tools",
    "HopgraphRetriever": "hopgraph.tools",
    "HopgraphLlamaIndexRetriever": "hopgraph.tools",
    "retrieval_tools": "hopgraph.tools",
    "RunResult": "hopgraph.agents.run",
    "run_agent": "hopgraph.agents.run",
    "choose_chat": "hopgraph.core.llm",
}

__all__ = [
    "RETRIEVERS",
    "Document",
    "Hit",
    "HopgraphLlamaIndexRetriever",
    "HopgraphRetriever",
    "Index",
    "IndexSettings",
    "LiveIndex",
    "RunResult",
    "__version__",
    "add_documents",
    "build_graphs",
    "build_index",
    "choose_chat",
    "delete_documents",
    "load_corpus",
    "make_retriever",
    "retrieval_tools",
    "run_agent",
    "sync_documents",
]


def __getattr__(name: str) -> Any:
    if name in _API:
        return getattr(importlib.import_module(_API[name]), name)
    if name == "__version__":  # importlib.metadata is 0.05 s of every CLI start: on request
        return _version()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _version() -> str:
    from hopgraph.core.config import package_version

    return package_version()
