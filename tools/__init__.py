"""Single-step retrievers: one ``retrieve(query, k) -> list[Hit]`` each, also LangChain tools.

The names below are imported on first use (PEP 562), so that reading the method names (the
CLI's parser, `hopgraph --help`) does not import the retrievers' libraries.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .shared.registry import (
    DEFAULT_PRESET,
    PRESETS,
    RETRIEVERS,
    check_preset,
    make_retriever,
    parse_methods,
)

if TYPE_CHECKING:
    from .frameworks.langchain import HopgraphRetriever, retrieval_tools
    from .frameworks.llamaindex import HopgraphLlamaIndexRetriever
    from .shared.base import Retriever
    from .shared.hits import Hit, Provenance

_LAZY = {
    "Retriever": "shared.base",
    "Hit": "shared.hits",
    "Provenance": "shared.hits",
    "HopgraphRetriever": "frameworks.langchain",
    "HopgraphLlamaIndexRetriever": "frameworks.llamaindex",
    "retrieval_tools": "frameworks.langchain",  # the llamaindex extra
}

__all__ = [
    "DEFAULT_PRESET",
    "PRESETS",
    "RETRIEVERS",
    "Hit",
    "HopgraphLlamaIndexRetriever",
    "HopgraphRetriever",
    "Provenance",
    "Retriever",
    "check_preset",
    "make_retriever",
    "parse_methods",
    "retrieval_tools",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
