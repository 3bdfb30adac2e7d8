"""Single-step retrievers: one ``retrieve(query, k) -> list[Hit]`` each, also LangChain tools."""

from .base import Retriever
from .hits import Hit, Provenance
from .registry import RETRIEVERS, make_retriever, parse_methods

__all__ = ["RETRIEVERS", "Hit", "Provenance", "Retriever", "make_retriever", "parse_methods"]
