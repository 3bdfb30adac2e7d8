"""The one name → retriever table."""

from __future__ import annotations

from collections.abc import Sequence

from graph_store import Index
from hopgraph.errors import UnknownMethodError

from .base import Retriever
from .baselines import BM25Retriever, DenseRetriever, HybridRetriever
from .gear_ge import NaiveGERetriever, SyncGERetriever
from .gnn_ret import GNNRetriever
from .grag import GRAGRetriever
from .iier import IIERRetriever

RETRIEVERS: dict[str, type[Retriever]] = {
    cls.name: cls
    for cls in (
        BM25Retriever,
        DenseRetriever,
        HybridRetriever,
        GNNRetriever,
        NaiveGERetriever,
        IIERRetriever,
        GRAGRetriever,
        SyncGERetriever,
    )
}


def make_retriever(name: str, index: Index, **options: object) -> Retriever:
    """Return the retriever registered as ``name`` over ``index``."""
    try:
        cls = RETRIEVERS[name]
    except KeyError:
        raise UnknownMethodError(
            f"unknown method {name!r}", f"choose one of: {', '.join(RETRIEVERS)}"
        ) from None
    return cls(index, **options)


def parse_methods(text: str, choices: Sequence[str] | None = None) -> list[str]:
    """Split a comma-separated method list and check every name (default: the retrievers)."""
    allowed = list(choices) if choices is not None else list(RETRIEVERS)
    names = [part.strip() for part in text.split(",") if part.strip()]
    if not names:
        raise UnknownMethodError("no method given", f"choose from: {', '.join(allowed)}")
    unknown = [n for n in names if n not in allowed]
    if unknown:
        raise UnknownMethodError(
            f"unknown method(s): {', '.join(unknown)}", f"choose from: {', '.join(allowed)}"
        )
    return names
