"""G-RAG (spec g_rag): rerank the base retriever's top-n with a GCN over their concept graph.

The document graph of a question is built in ``tools/grag_graph.py`` (its docstring says how
the concept graph stands in for AMR); the network lives in ``tools/grag_model.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from hopgraph.graph_store import Index

from .base import Bases
from .grag_graph import DocumentGraph, GRAGSettings, GraphBuilder
from .guard import CONFIDENT, KEEP, MARGIN, Guarded
from .hits import Hit, Provenance


class GRAGRetriever(Guarded):
    """The base retriever's top-n, reranked by a trained GCN over their concept graph."""

    name = "grag"
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

        ``keep``, ``selective``, ``confident``: the no-harm guard (tools/guard.py). ``bases`` makes
        the base the weights name.
        """
        from .grag_model import load_model
        from .weights import find_weights

        super().__init__(index)
        self.guard(index, keep, margin, selective, confident)
        path = Path(weights) if weights is not None else find_weights(index, self.name)
        self.model, self.record = load_model(path, index)
        self.settings = GRAGSettings(**self.record["settings"])
        self.builder = GraphBuilder(index, self.settings, bases(self.settings.base))
        self.weights_path = path
        self.ids = list(index.chunks)

    def scores(self, graph: DocumentGraph) -> np.ndarray:
        """Score every candidate of a document graph."""
        from .grag_model import score_graph

        return score_graph(self.model, graph)

    def _retrieve(self, query: str, k: int) -> list[Hit]:
        graph = self.builder.build(query)
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
