"""G-RAG (spec g_rag): rerank the base retriever's top-n with a GCN over their concept graph.

The document graph of a question is built in ``tools/grag/graph.py`` (its docstring says how
the concept graph stands in for AMR); the network and its training live in
``tools/grag/model.py`` (torch); retrieval applies the trained weights in numpy
(:class:`GraphScorer`), so it imports no torch (1.5 s of a command's start).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from hopgraph.graph_store import Index
from hopgraph.tools.guards.guard import CONFIDENT, KEEP, MARGIN, Guarded
from hopgraph.tools.shared.base import Bases
from hopgraph.tools.shared.hits import Hit, Provenance
from hopgraph.tools.shared.spans import span

from .graph import DocumentGraph, GRAGSettings, GraphBuilder


class GraphScorer:
    """``GRAGNet``'s forward pass in inference mode (no dropout), in numpy, from its state dict.

    A graph is about a hundred nodes: a few small products, which numpy does on one thread as
    fast as torch did (``score_graph`` set torch to one thread for them).
    """

    def __init__(self, state: Mapping[str, np.ndarray]) -> None:
        self.state = {name: np.asarray(value) for name, value in state.items()}

    def layer(self, name: str, x: np.ndarray, mean: np.ndarray) -> np.ndarray:
        """Eq. 7 as ``GraphLayer``: x_v' = W_s x_v + b + W_n (mean of the neighbours' x)."""
        s = self.state
        own = x @ s[f"{name}.own.weight"].T + s[f"{name}.own.bias"]
        return own + (mean @ x) @ s[f"{name}.neighbours.weight"].T

    def __call__(self, graph: DocumentGraph) -> np.ndarray:
        """Return one score per candidate."""
        mean = neighbour_mean(graph.weights)
        h = np.maximum(self.layer("first", graph.features, mean), 0)
        h = self.layer("second", h, mean)
        r = np.maximum(self.layer("relevance_first", graph.relevance, mean), 0)
        r = self.layer("relevance_second", r, mean)[:, 0]
        mix = self.state["mix"]
        return h @ graph.query + r + mix[0] * graph.cosine + mix[1] * graph.prior


def neighbour_mean(weights: np.ndarray) -> np.ndarray:
    """Rows scaled to sum to 1; an isolated node's row stays 0 (it hears nothing)."""
    sums = weights.sum(axis=1, keepdims=True)
    return np.divide(weights, sums, out=np.zeros_like(weights), where=sums > 0)


class GRAGRetriever(Guarded):
    """The base retriever's top-n, reranked by a trained GCN over their concept graph."""

    name = "grag"
    score_kind = "logit"
    needs_graphs = True
    needs_base = True
    presets: ClassVar[Mapping[str, Mapping[str, Any]]] = {"paper": {"keep": 0}}
    needs_weights = True
    description = (
        "Reranks the hybrid search's top 100 passages with a trained graph network that "
        "looks at which passages share entities and facts with each other and with the "
        "question; good when the best passage is in the candidates but not near the top. "
        "About twice dense retrieval's time a new question; embeds the index's concepts once "
        "when first used on an index."
    )

    def __init__(
        self,
        index: Index,
        weights: str | Path | None = None,
        keep: int = KEEP,
        margin: float = MARGIN,
        selective: bool = True,
        confident: float = CONFIDENT,
        *,
        bases: Bases,
    ) -> None:
        """Set up over ``index`` with trained weights (default: see :func:`find_weights`).

        ``keep``, ``selective``, ``confident``: the no-harm guard (tools/guards/guard.py). ``bases``
        makes the base the weights name.
        """
        from hopgraph.tools.shared.weights import find_weights, load_weights

        super().__init__(index)
        self.guard(index, keep, margin, selective, confident)
        path = Path(weights) if weights is not None else find_weights(index, self.name)
        self.record, state = load_weights(path, index, self.name)
        # Weights saved before concept_paths existed embedded the path strings.
        self.record["settings"] = {"concept_paths": "encoded", **self.record["settings"]}
        self.settings = GRAGSettings(**self.record["settings"])
        self.model = GraphScorer(state)
        self.builder = GraphBuilder(index, self.settings, bases(self.settings.base))
        self.weights_path = path
        self.ids = index.ids

    def scores(self, graph: DocumentGraph) -> np.ndarray:
        """Score every candidate of a document graph."""
        return self.model(graph)

    def _retrieve(self, query: str, k: int) -> list[Hit]:
        with span("graph expansion", {"hopgraph.graph.top_k": k}) as opened:
            graph = self.builder.build(query)
            if opened is not None:
                opened.set_attribute("hopgraph.graph.nodes_reached", len(graph.rows))
        with span("rerank", {"hopgraph.rerank.candidates": len(graph.rows)}):
            scores = self.scores(graph)
        order = np.argsort(-scores, kind="stable")
        ids = self.ids
        hits = []
        for rank, i in enumerate(order[:k], start=1):
            score = float(scores[i])
            step = f"reranked from base rank {int(i) + 1}"
            hits.append(
                self._hit(ids[graph.rows[i]], score, Provenance(self.name, step, rank, score))
            )
        return hits
