"""Single-step retrievers: one ``retrieve(query, k) -> list[Hit]`` each, also LangChain tools."""

from .base import Retriever
from .hits import Hit, Provenance
from .registry import (
    DEFAULT_PRESET,
    PRESETS,
    RETRIEVERS,
    check_preset,
    make_retriever,
    parse_methods,
)

__all__ = [
    "DEFAULT_PRESET",
    "PRESETS",
    "RETRIEVERS",
    "Hit",
    "Provenance",
    "Retriever",
    "check_preset",
    "make_retriever",
    "parse_methods",
]
