"""GNN-Ret, training-free (spec gnn_ret §3): query distances passed over the passage graph.

Every chunk starts with its distance to the query, h⁰ = φ(q, p) (1 − similarity under the base).
Per layer l (Eqs. 3–4 of the paper):

1. T_K: the K chunks with the smallest h^{l−1} over the whole graph;
2. every chunk i with a neighbour in T_K gets the message
   m_i = min_{j ∈ N(i) ∩ T_K} h_j^{l−1}   (min aggregation, which the paper's ablation prefers);
3. h_i^l = α·h_i^{l−1} + (1 − α)·m_i; chunks without a message keep h^{l−1}.

Messages are typed (as in R-GCN): each :class:`Channel` is a set of edge types with its own α,
steps 2–3 run per channel, and a chunk keeps the lowest result. The paper's single α over the
union of its edges is the one-channel case. Two channels by default, because the edges differ in
how much they promise: a hyperlink from a seed ("… plays for Liga MX club Tigres") names the next
hop outright, so its message counts most (α 0.2); a shared entity (two passages both naming a
person) is weaker evidence (α 0.65). Chosen on the train splits (R@5 +5.0 hotpotqa, +0.5
musique, +7.6 2wiki over one α of 0.5 on the union; flat for link α 0.05–0.2) and confirmed on
dev (the closing note of issue 4 has the tables).

Chunks are then ranked by h^L, ascending. A chunk that a message moved up carries the chunk that
sent it in its provenance, so a user sees which seed pulled it in and over which edge types.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp

from hopgraph.core.errors import IndexStateError, InputError
from hopgraph.graph_store import Index
from hopgraph.graph_store.passage_graph import DIRECTED, EDGE_TYPES

from .guard import KEEP, MARGIN, Guarded
from .hits import Hit, Provenance


@dataclass(frozen=True)
class Layer:
    """One layer's result: new distances, and for each chunk the chunk whose message it took."""

    h: np.ndarray
    sender: np.ndarray  # -1 where no message was received


def min_messages(
    h: np.ndarray, adjacency: sp.csr_matrix, top_k: int
) -> tuple[np.ndarray, np.ndarray]:
    """Eq. 3: the chunks that hear from the top-K, and for each its lowest-distance sender.

    Row j of ``adjacency`` lists where a message from chunk j goes; ties go to the sender
    listed first.
    """
    n = len(h)
    k = min(top_k, n)
    top = np.argpartition(h, k - 1)[:k] if k < n else np.arange(n)
    rows = adjacency[top]
    receivers = rows.indices
    senders = np.repeat(top, np.diff(rows.indptr))
    if len(receivers) == 0:
        return receivers, senders
    order = np.lexsort((senders, h[senders], receivers))
    first = np.unique(receivers[order], return_index=True)[1]
    return receivers[order][first], senders[order][first]


def gnn_layer(
    h: np.ndarray, adjacency: sp.csr_matrix, alpha: float, top_k: int, only_lower: bool = False
) -> Layer:
    """Apply Eqs. 3–4 once: min-message from the top-K chunks, blended with weight α.

    ``only_lower`` keeps a chunk's distance when its message would raise it (spec §3.2 option b;
    the paper applies Eq. 4 literally, the default).
    """
    new_h, sender = h.astype(np.float64).copy(), np.full(len(h), -1)
    who, best = min_messages(h, adjacency, top_k)
    if len(who) == 0:
        return Layer(new_h, sender)
    blended = alpha * h[who] + (1 - alpha) * h[best]  # Eq. 4
    keep = blended < h[who] if only_lower else np.ones(len(who), dtype=bool)
    new_h[who[keep]], sender[who[keep]] = blended[keep], best[keep]
    return Layer(new_h, sender)


@dataclass(frozen=True)
class Channel:
    """One message type: the passage-graph edge types it travels and its blend weight α (Eq. 4)."""

    edge_types: tuple[str, ...]
    alpha: float

    def __post_init__(self) -> None:
        if not 0.0 <= self.alpha <= 1.0:
            raise ValueError(f"alpha must be in [0, 1], got {self.alpha}")
        unknown = set(self.edge_types) - set(EDGE_TYPES)
        if unknown or not self.edge_types:
            raise ValueError(f"edge types must be some of {EDGE_TYPES}, got {self.edge_types}")


WEIGHTS_HINT = "train them for this index's model: `hopgraph train gnn_ret --data DIR`"

PAPER_CHANNELS = (Channel(("structural", "entity"), 0.5),)
"""The paper's graph: structure and keyword (shared-entity) edges, untyped, one α of 0.5."""

DEFAULT_CHANNELS = (Channel(("structural", "entity"), 0.65), Channel(("structural", "link"), 0.2))


def typed_layer(
    h: np.ndarray,
    channels: Sequence[tuple[sp.csr_matrix, float]],
    top_k: int,
    only_lower: bool = False,
) -> tuple[Layer, np.ndarray]:
    """Run :func:`gnn_layer` per (adjacency, α) channel; each chunk keeps the lowest result.

    Returns the combined layer and, per chunk, the channel whose message it took (−1: none).
    """
    layers = [gnn_layer(h, adjacency, alpha, top_k, only_lower) for adjacency, alpha in channels]
    stacked = np.stack([layer.h for layer in layers])
    best = np.argmin(stacked, axis=0)  # ties: the first channel listed
    rows = np.arange(len(h))
    sender = np.stack([layer.sender for layer in layers])[best, rows]
    channel = np.where(sender >= 0, best, -1)
    return Layer(stacked[best, rows], sender), channel


def propagate(
    h0: np.ndarray,
    channels: Sequence[tuple[sp.csr_matrix, float]],
    top_k: int,
    layers: int = 1,
    only_lower: bool = False,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Run ``layers`` typed layers.

    Returns the final distances, each chunk's last sender and the channel that carried its
    message (−1 where none did).
    """
    n = len(h0)
    h, sender, channel = h0, np.full(n, -1), np.full(n, -1)
    for _ in range(layers):
        layer, used = typed_layer(h, channels, top_k, only_lower)
        moved = layer.sender >= 0
        sender, channel = np.where(moved, layer.sender, sender), np.where(moved, used, channel)
        h = layer.h
    return h, sender, channel


def recurrent_merge(h: np.ndarray, previous: np.ndarray, beta: float) -> np.ndarray:
    """RGNN-Ret's Eq. 6: ĥ^t = β·h^t + (1 − β)·ĥ^{t−1} (this step's distances, blended)."""
    return beta * h + (1 - beta) * previous


BASES = ("dense", "bm25", "hybrid")


def smallest(values: np.ndarray, k: int) -> np.ndarray:
    """Return the rows of the ``k`` smallest values, ties by row: a stable argsort's first k.

    Selects before sorting: a full sort per query cost a fifth of a query at 200k chunks.
    """
    if k >= len(values):
        return np.argsort(values, kind="stable")
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    cut = np.partition(values, k - 1)[k - 1]
    rows = np.flatnonzero(values <= cut)  # every tie at the edge, so rows break them
    return rows[np.argsort(values[rows], kind="stable")][:k]


class GNNRetriever(Guarded):
    """GNN-Ret over the passage graph (no training).

    Defaults: h⁰ from the hybrid base (0.65 · cosine + 0.35 · BM25 scaled by its maximum), the
    two :data:`DEFAULT_CHANNELS` (chosen on train; semantic and keyword edges lowered R@5 on dev),
    and the spec's guard that a message only ever lowers a distance (§3.2 option b; it lifted
    R@2 on dev).
    """

    name = "gnn_ret"
    needs_graphs = True
    presets: ClassVar[Mapping[str, Mapping[str, Any]]] = {
        "paper": {
            "channels": PAPER_CHANNELS,
            "top_k": 10,
            "layers": 1,
            "only_lower": False,
            "base": "dense",
            "keep": 0,
        }
    }
    description = (
        "Graph retrieval for multi-hop questions: passages are ranked by their distance to the "
        "question blended with the distance of the best-matching passage that links to them "
        "(mentions their page, shares an entity, same document), so bridge passages come up "
        "with their seeds."
    )

    def __init__(
        self,
        index: Index,
        channels: Sequence[Channel] = DEFAULT_CHANNELS,
        top_k: int = 10,
        layers: int = 1,
        only_lower: bool = True,
        base: str = "hybrid",
        dense_weight: float = 0.65,
        weights: str | Path | None = None,
        keep: int = KEEP,
        margin: float = MARGIN,
        selective: bool = True,
    ) -> None:
        """Set up over ``index``; ``weights`` is a file of learned α's (`hopgraph train`).

        ``keep``, ``selective``: the no-harm guard (tools/guard.py), dense's top ``keep`` first.
        """
        super().__init__(index)
        self.guard(index, keep, margin, selective)
        if weights is not None:
            channels = load_channels(Path(weights), index)
        if base not in BASES:
            raise ValueError(f"base must be one of {BASES}, got {base!r}")
        if not channels:
            raise ValueError("GNN-Ret needs at least one channel")
        self.channels, self.top_k, self.layers, self.base = tuple(channels), top_k, layers, base
        self.only_lower = only_lower
        self.dense_weight = dense_weight
        graph = index.passage_graph
        if graph.ids != list(index.chunks) or index.keywords.ids != graph.ids:
            raise IndexStateError(
                "the passage graph is out of step with the chunks",
                f"rebuild it: `hopgraph graph build --index {index.directory}`",
            )
        self.adjacencies = [(graph.adjacency(c.edge_types), c.alpha) for c in self.channels]
        self._last: tuple[str, np.ndarray, np.ndarray, np.ndarray] | None = None

    def distances(self, query: str) -> np.ndarray:
        """Return h⁰ for every chunk: 1 − similarity under the base (scores scaled to [0, 1])."""
        similarity = np.zeros(len(self.index.chunks), dtype=np.float32)
        weight = {"dense": 1.0, "bm25": 0.0, "hybrid": self.dense_weight}[self.base]
        if weight > 0:
            similarity += weight * self.index.query_similarities(query)
        if weight < 1:
            bm25 = self.index.keywords.scores(query)
            similarity += (1 - weight) * (bm25 / bm25.max() if bm25.max() > 0 else bm25)
        return 1.0 - similarity

    def ranking(self, query: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Return (final distances, senders, channels) for a query; the last query's are kept."""
        if self._last is None or self._last[0] != query:
            result = propagate(
                self.distances(query), self.adjacencies, self.top_k, self.layers, self.only_lower
            )
            self._last = (query, *result)
        return self._last[1], self._last[2], self._last[3]

    def _retrieve(self, query: str, k: int) -> list[Hit]:
        h, sender, channel = self.ranking(query)
        order = smallest(h, k)
        ids = self.index.passage_graph.ids
        hits = []
        for rank, row in enumerate(order, start=1):
            score = float(1.0 - h[row])
            if sender[row] >= 0:
                via = self._edge(row, sender[row], self.channels[channel[row]])
                step = "message from a top-K neighbour"
            else:
                via, step = (), "own distance"
            hits.append(self._hit(ids[row], score, Provenance(self.name, step, rank, score, via)))
        return hits

    def _edge(self, row: int, sender: int, channel: Channel) -> tuple[str, ...]:
        """Name the sender and the edge types that carried its message: ("d1#0", "link")."""
        edges = self.index.passage_graph.edges
        # A message travels row → column; a directed edge only counts in that direction.
        kinds = [
            k
            for k in channel.edge_types
            if edges[k][sender, row] != 0 or (k not in DIRECTED and edges[k][row, sender] != 0)
        ]
        return (self.index.passage_graph.ids[sender], *kinds)


def load_channels(path: Path, index: Index) -> tuple[Channel, ...]:
    """Read learned channels (`hopgraph train gnn_ret`); refuse ones made for another model."""
    try:
        saved = json.loads(path.read_text(encoding="utf-8"))
        channels = tuple(
            Channel(tuple(c["edge_types"]), float(c["alpha"])) for c in saved["channels"]
        )
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise InputError(f"{path}: not a GNN-Ret weights file ({err})", WEIGHTS_HINT) from err
    model = index.manifest.settings.model
    if saved.get("model") != model:
        raise IndexStateError(
            f"{path} was trained on an index embedded with {saved.get('model')!r}; "
            f"this index uses {model!r}",
            WEIGHTS_HINT,
        )
    return channels
