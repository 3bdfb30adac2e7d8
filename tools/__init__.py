"""Single-step retrievers: one ``retrieve(query, k) -> list[Hit]`` each, also LangChain tools.

The names below are imported on first use (PEP 562), so that reading the method names (the
CLI's parser, `hopgraph --help`) does not import the retrievers' libraries.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .registry import (
    DEFAULT_PRESET,
    PRESETS,
    RETRIEVERS,
    check_preset,
    make_retriever,
    parse_methods,
)

if TYPE_CHECKING:
    from .base import Retriever
    from .hits import Hit, Provenance
    from .langchain import HopgraphRetriever
    from .llamaindex import HopgraphLlamaIndexRetriever

_LAZY = {
    "Retriever": "base",
    "Hit": "hits",
    "Provenance": "hits",
    "HopgraphRetriever": "langchain",
    "HopgraphLlamaIndexRetriever": "llamaindex",  # the llamaindex extra
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
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
