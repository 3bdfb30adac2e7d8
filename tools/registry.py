"""The one name → retriever table."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Literal, get_args

from hopgraph.core.errors import UnknownMethodError
from hopgraph.graph_store import Index
from hopgraph.graph_store.filters import Where
from hopgraph.graph_store.triple_vectors import embed_triple_vectors

from .base import Retriever
from .baselines import BM25Retriever, DenseRetriever, HybridRetriever
from .gear_ge import NaiveGERetriever, SyncGERetriever
from .gnn_ret import GNNRetriever
from .grag import GRAGRetriever
from .iier import IIERRetriever

Preset = Literal["tuned", "paper"]
PRESETS: tuple[str, ...] = get_args(Preset)
"""``tuned``: our best on dev/train (the default); ``paper``: each method as its paper has it,
as closely as our models allow (docs/methods.md lists what still differs)."""
DEFAULT_PRESET: Preset = "tuned"

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


def check_preset(preset: str) -> Preset:
    """Return ``preset`` if it names a preset; otherwise a clear error."""
    if preset not in PRESETS:
        raise UnknownMethodError(
            f"unknown preset {preset!r}",
            "choose tuned (our best on dev, the default) or paper (as the papers have it)",
        )
    return preset  # type: ignore[return-value]


def make_retriever(
    name: str,
    index: Index,
    preset: str = DEFAULT_PRESET,
    where: Where | None = None,
    **options: object,
) -> Retriever:
    """Return the retriever registered as ``name`` over ``index``.

    ``preset`` picks the method's settings (its class's ``presets``); ``options`` override them.
    ``where``: a filter every result must pass (Retriever.retrieve), the base's too.
    """
    try:
        cls = RETRIEVERS[name]
    except KeyError:
        raise UnknownMethodError(
            f"unknown method {name!r}", f"choose one of: {', '.join(RETRIEVERS)}"
        ) from None
    chosen = {**cls.presets.get(check_preset(preset), {}), **options}
    if cls.needs_triple_vectors:
        ensure_triple_vectors(index)
    if cls.needs_base:
        chosen["bases"] = lambda base: make_retriever(base, index, where=where)
    retriever = cls(index, **chosen)
    retriever.where = dict(where) if where else None
    return retriever


def ensure_triple_vectors(index: Index) -> None:
    """Embed the index's triples at their first use (one new generation) and adopt it."""
    graph = index.manifest.graph
    if graph is None or graph["settings"].get("embed_triples"):
        return  # without graphs, the method names what to build when it opens them
    count = graph.get("counts", {}).get("triples", "the")
    print(
        f"embedding {count} triples of {index.directory} (first use by a method that searches "
        "them; kept and updated by later writes)",
        file=sys.stderr,
        flush=True,
    )
    index.adopt(embed_triple_vectors(index.directory, show_progress=sys.stderr.isatty()))


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
