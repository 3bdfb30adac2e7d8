"""GNN-Ret, training-free (spec gnn_ret §3): query distances passed over the passage graph.

Every chunk starts with its distance to the query, h⁰ = φ(q, p) (1 − cosine for the dense base).
Per layer l (Eqs. 3–4 of the paper):

1. T_K: the K chunks with the smallest h^{l−1} over the whole graph;
2. every chunk i with a neighbour in T_K gets the message
   m_i = min_{j ∈ N(i) ∩ T_K} h_j^{l−1}   (min aggregation, which the paper's ablation prefers);
3. h_i^l = α·h_i^{l−1} + (1 − α)·m_i; chunks without a message keep h^{l−1}.

Chunks are then ranked by h^L, ascending. A chunk that a message moved up carries the chunk that
sent it in its provenance, so a user sees which seed pulled it in and over which edge types.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from graph_store import Index
from hopgraph.errors import IndexStateError

from .base import Retriever
from .hits import Hit, Provenance


@dataclass(frozen=True)
class Layer:
    """One layer's result: new distances, and for each chunk the chunk whose message it took."""

    h: np.ndarray
    sender: np.ndarray  # -1 where no message was received


def gnn_layer(
    h: np.ndarray, adjacency: sp.csr_matrix, alpha: float, top_k: int, only_lower: bool = False
) -> Layer:
    """Apply Eqs. 3–4 once: min-message from the top-K chunks, blended with weight α.

    ``only_lower`` keeps a chunk's distance when its message would raise it (spec §3.2 option b;
    the paper applies Eq. 4 literally, the default).
    """
    n = len(h)
    k = min(top_k, n)
    top = np.argpartition(h, k - 1)[:k] if k < n else np.arange(n)
    # The graph is symmetric, so the rows of the top-K chunks list who hears from each of them.
    rows = adjacency[top]
    receivers = rows.indices
    senders = np.repeat(top, np.diff(rows.indptr))
    new_h, sender = h.astype(np.float64).copy(), np.full(n, -1)
    if len(receivers) == 0:
        return Layer(new_h, sender)
    # Eq. 3: per receiver, the smallest sender distance (ties: the sender listed first).
    order = np.lexsort((senders, h[senders], receivers))
    first = np.unique(receivers[order], return_index=True)[1]
    who, best = receivers[order][first], senders[order][first]
    blended = alpha * h[who] + (1 - alpha) * h[best]  # Eq. 4
    keep = blended < h[who] if only_lower else np.ones(len(who), dtype=bool)
    new_h[who[keep]], sender[who[keep]] = blended[keep], best[keep]
    return Layer(new_h, sender)


def propagate(
    h0: np.ndarray,
    adjacency: sp.csr_matrix,
    alpha: float,
    top_k: int,
    layers: int = 1,
    only_lower: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Run ``layers`` layers; return the final distances and each chunk's last sender."""
    h, sender = h0, np.full(len(h0), -1)
    for _ in range(layers):
        layer = gnn_layer(h, adjacency, alpha, top_k, only_lower)
        sender = np.where(layer.sender >= 0, layer.sender, sender)
        h = layer.h
    return h, sender


BASES = ("dense", "bm25", "hybrid")


class GNNRetriever(Retriever):
    """GNN-Ret over the passage graph (no training).

    Defaults, chosen on the dev splits: h⁰ from the hybrid base (0.65 · cosine + 0.35 · BM25
    scaled by its maximum), structural and entity edges (semantic edges lowered R@5), and the
    spec's guard that a message only ever lowers a distance (§3.2 option b; it lifted R@2).
    """

    name = "gnn_ret"
    needs_graphs = True
    description = (
        "Graph retrieval for multi-hop questions: passages are ranked by their distance to the "
        "question blended with the distance of their best-matching linked passage (shared "
        "entities, same document, similar text), so bridge passages come up with their seeds."
    )

    def __init__(
        self,
        index: Index,
        alpha: float = 0.5,
        top_k: int = 10,
        layers: int = 1,
        edge_types: Sequence[str] = ("structural", "entity"),
        only_lower: bool = True,
        base: str = "hybrid",
        dense_weight: float = 0.65,
    ) -> None:
        super().__init__(index)
        if not 0.0 <= alpha <= 1.0:
            raise ValueError(f"alpha must be in [0, 1], got {alpha}")
        if base not in BASES:
            raise ValueError(f"base must be one of {BASES}, got {base!r}")
        self.alpha, self.top_k, self.layers, self.base = alpha, top_k, layers, base
        self.edge_types = tuple(edge_types)
        self.only_lower = only_lower
        self.dense_weight = dense_weight
        graph = index.passage_graph
        if graph.ids != list(index.chunks) or index.keywords.ids != graph.ids:
            raise IndexStateError(
                "the passage graph is out of step with the chunks",
                f"rebuild it: `hopgraph graph build --index {index.directory}`",
            )
        self.adjacency = graph.adjacency(self.edge_types)
        self._last: tuple[str, np.ndarray, np.ndarray] | None = None

    def distances(self, query: str) -> np.ndarray:
        """Return h⁰ for every chunk: 1 − similarity under the base (scores scaled to [0, 1])."""
        similarity = np.zeros(len(self.index.chunks), dtype=np.float32)
        weight = {"dense": 1.0, "bm25": 0.0, "hybrid": self.dense_weight}[self.base]
        if weight > 0:
            similarity += weight * self.index.similarities(self.index.embed_query(query))
        if weight < 1:
            bm25 = self.index.keywords.scores(query)
            similarity += (1 - weight) * (bm25 / bm25.max() if bm25.max() > 0 else bm25)
        return 1.0 - similarity

    def ranking(self, query: str) -> tuple[np.ndarray, np.ndarray]:
        """Return (final distances, senders) for a query; the last query's are kept for paging."""
        if self._last is None or self._last[0] != query:
            h, sender = propagate(
                self.distances(query),
                self.adjacency,
                self.alpha,
                self.top_k,
                self.layers,
                self.only_lower,
            )
            self._last = (query, h, sender)
        return self._last[1], self._last[2]

    def _retrieve(self, query: str, k: int) -> list[Hit]:
        h, sender = self.ranking(query)
        order = np.argsort(h, kind="stable")[:k]
        ids = self.index.passage_graph.ids
        hits = []
        for rank, row in enumerate(order, start=1):
            score = float(1.0 - h[row])
            via = self._edge(row, sender[row]) if sender[row] >= 0 else ()
            step = "message from a top-K neighbour" if via else "own distance"
            hits.append(self._hit(ids[row], score, Provenance(self.name, step, rank, score, via)))
        return hits

    def _edge(self, row: int, sender: int) -> tuple[str, ...]:
        """Name the sender and the edge types that joined it to ``row``: ("d1#0", "entity")."""
        edges = self.index.passage_graph.edges
        kinds = [k for k in self.edge_types if edges[k][row, sender] != 0]
        return (self.index.passage_graph.ids[sender], *kinds)
