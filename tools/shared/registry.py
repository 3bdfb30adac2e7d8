"""The one name → retriever table.

Importing it is cheap: each retriever's module (numpy, scipy, networkx, Chroma, torch, ...) is
imported when the table is first asked for that class, so a command that runs BM25 does not
pay for GEAR's Chroma client, and `hopgraph --help` pays for none.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal, get_args

from hopgraph.core.errors import InputError, UnknownMethodError

if TYPE_CHECKING:
    from hopgraph.graph_store import Index
    from hopgraph.graph_store.documents.filters import Where

    from .base import Retriever

Preset = Literal["tuned", "paper"]
PRESETS: tuple[str, ...] = get_args(Preset)
"""``tuned``: our best on dev/train (the default); ``paper``: each method as its paper has it,
as closely as our models allow (docs/methods.md lists what still differs)."""
DEFAULT_PRESET: Preset = "tuned"

_CLASSES = {
    "bm25": "baselines.retrievers:BM25Retriever",
    "dense": "baselines.retrievers:DenseRetriever",
    "hybrid": "baselines.retrievers:HybridRetriever",
    "gnn_ret": "gnn_ret.retriever:GNNRetriever",
    "naive_ge": "gear.retriever:NaiveGERetriever",
    "iier": "iier.retriever:IIERRetriever",
    "grag": "grag.retriever:GRAGRetriever",
    "sync_ge": "gear.retriever:SyncGERetriever",
}
"""Each method's class as ``module:Class`` under hopgraph.tools, in the order shown to users."""


class _Registry(Mapping[str, "type[Retriever]"]):
    """Method name → retriever class; a class's module is imported when it is first asked for."""

    def __getitem__(self, name: str) -> type[Retriever]:
        module, cls = _CLASSES[name].split(":")  # KeyError for an unknown name, as a dict
        return getattr(importlib.import_module(f"hopgraph.tools.{module}"), cls)

    def __iter__(self) -> Iterator[str]:
        return iter(_CLASSES)

    def __len__(self) -> int:
        return len(_CLASSES)

    def __contains__(self, name: object) -> bool:
        return name in _CLASSES


RETRIEVERS: Mapping[str, type[Retriever]] = _Registry()


def check_preset(preset: str) -> Preset:
    """Return ``preset`` if it names a preset; otherwise a clear error."""
    if preset not in PRESETS:
        raise UnknownMethodError(
            f"unknown preset {preset!r}",
            "choose tuned (our best on dev, the default) or paper (as the papers have it)",
        )
    return preset  # type: ignore[return-value]


def checked_method(name: object) -> str:
    """Return ``name`` if a retriever is registered under it; else UnknownMethodError."""
    if not isinstance(name, str) or name not in RETRIEVERS:
        raise UnknownMethodError(
            f"unknown method {name!r}", f"choose one of: {', '.join(RETRIEVERS)}"
        )
    return name


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
    cls = RETRIEVERS[checked_method(name)]
    chosen = {**cls.presets.get(check_preset(preset), {}), **options}
    if cls.needs_triple_vectors:
        ensure_triple_vectors(index)
    if cls.needs_base:
        chosen["bases"] = lambda base: make_retriever(base, index, where=where)
    retriever = cls(index, **chosen)
    retriever.where = dict(where) if where else None
    return retriever


def standalone_methods() -> tuple[str, ...]:
    """Return the retrievers that run on an index alone: no LLM, no trained weights."""
    return tuple(n for n, c in RETRIEVERS.items() if not (c.needs_llm or c.needs_weights))


def served_methods(index: Index) -> tuple[str, ...]:
    """Return the retrievers ``index`` runs without an LLM: weights ones when it has weights."""
    from .weights import available_weights

    trained = [
        name
        for name, cls in RETRIEVERS.items()
        if cls.needs_weights and not cls.needs_llm and available_weights(index, name)
    ]
    return (*standalone_methods(), *trained)


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
    from hopgraph.core.settings import settings
    from hopgraph.graph_store.index.triple_vectors import embed_triple_vectors

    wait = settings().wait  # another process's write (or its own embedding of them) ends first
    index.adopt(embed_triple_vectors(index.directory, sys.stderr.isatty(), wait))


WEIGHTED = ("gnn_ret", "grag", "iier")
"""Methods that take trained weights (`hopgraph train`)."""


def parse_weights(items: Sequence[str]) -> dict[str, dict[str, Path | bool]]:
    """Turn METHOD=FILE items (``--weights``) into retriever options; iier=none: untrained."""
    options: dict[str, dict[str, Path | bool]] = {}
    for item in items:
        method, sep, file = item.partition("=")
        if not sep or method.strip() not in WEIGHTED or not file.strip():
            raise InputError(
                f"--weights {item!r} is not METHOD=FILE with a method that takes weights",
                f"write it like --weights grag=runs/grag.pt; methods: {', '.join(WEIGHTED)}",
            )
        if method.strip() == "iier" and file.strip() == "none":
            options["iier"] = {"weights": False}  # the untrained scorer
            continue
        path = Path(file.strip())
        if not path.is_file():
            raise InputError(f"--weights {item!r}: no file {path}", "check the path")
        options[method.strip()] = {"weights": path}
    return options


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
