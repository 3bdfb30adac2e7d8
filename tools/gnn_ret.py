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
from functools import cached_property
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp

from hopgraph.core.arrays import union_rows
from hopgraph.core.errors import IndexStateError, InputError
from hopgraph.graph_store import Index
from hopgraph.graph_store.bm25_query import KeywordTop, QueryScores
from hopgraph.graph_store.passage_graph import DIRECTED, EDGE_TYPES

from .gnn_layers import propagate
from .gnn_local import FIRST_DEPTH, Candidates, LocalRanking, propagate_local
from .guard import CONFIDENT, KEEP, MARGIN, Guarded
from .hits import Hit, Provenance


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


def recurrent_merge(h: np.ndarray, previous: np.ndarray, beta: float) -> np.ndarray:
    """RGNN-Ret's Eq. 6: ĥ^t = β·h^t + (1 − β)·ĥ^{t−1} (this step's distances, blended)."""
    return beta * h + (1 - beta) * previous


BASES = ("dense", "bm25", "hybrid")


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
        confident: float = CONFIDENT,
    ) -> None:
        """Set up over ``index``; ``weights`` is a file of learned α's (`hopgraph train`).

        ``keep``, ``selective``, ``confident``: the no-harm guard (tools/guard.py), dense's top
        ``keep`` first.
        """
        super().__init__(index)
        self.guard(index, keep, margin, selective, confident)
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
        self._last: tuple[str, np.ndarray, np.ndarray, np.ndarray] | None = None

    @cached_property
    def adjacencies(self) -> list[tuple[sp.csr_matrix, float]]:
        """Return each channel's union adjacency and α (for the full scan: :meth:`ranking`)."""
        graph = self.index.passage_graph
        return [(graph.adjacency(c.edge_types), c.alpha) for c in self.channels]

    @property
    def _weight(self) -> float:
        return {"dense": 1.0, "bm25": 0.0, "hybrid": self.dense_weight}[self.base]

    def distances(self, query: str) -> np.ndarray:
        """Return h⁰ for every chunk: 1 − similarity under the base (scores scaled to [0, 1])."""
        similarity = np.zeros(len(self.index.chunks), dtype=np.float32)
        weight = self._weight
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

    def local_ranking(self, query: str, k: int) -> LocalRanking:
        """Return the ranking of the chunks that can enter the top ``k`` (tools/gnn_local.py).

        The full scan's ranking (:meth:`ranking`) without computing every chunk's distance.
        """
        weight, index = self._weight, self.index
        vector = index.embed_query(query) if weight > 0 else None
        keywords = QueryScores(index.keywords, query) if weight < 1 else None
        first = depth = max(FIRST_DEPTH, 2 * k, 2 * self.top_k)
        first_top = keywords.top(first) if keywords is not None else None
        # The best BM25 score of all, as the full scan scales by (``top`` certifies it).
        top_score = first_top.scores.max() if first_top and len(first_top.scores) else None

        known: list[tuple[np.ndarray, np.ndarray]] = []  # dense's exact cosines, by row

        def h0_of(rows: np.ndarray) -> np.ndarray:
            similarity = np.zeros(len(rows), dtype=np.float32)
            if vector is not None:
                similarity += weight * self._cosines(vector, rows, known[-1] if known else None)
            if keywords is not None and top_score:
                similarity += (1 - weight) * (keywords.at(rows) / top_score)
            return 1.0 - similarity

        chunks = len(index.chunks)
        channels = [
            ([index.passage_graph.edges[t] for t in c.edge_types], c.alpha) for c in self.channels
        ]
        while True:
            dense = index.dense_top(query, depth) if vector is not None else None
            keyword_top = first_top if depth == first or keywords is None else keywords.top(depth)
            start = self._candidates(dense, keyword_top, top_score, depth, chunks)
            if dense is not None:
                order = np.argsort(dense[0])
                known.append((dense[0][order], dense[1][order]))
            found, exact = propagate_local(
                h0_of, start, channels, self.top_k, self.layers, self.only_lower
            )
            best = found.best(k)
            exact &= start.bound == np.inf or (
                len(best) == min(k, chunks) and bool(found.h[best].max() <= start.bound)
            )
            if exact or depth >= chunks:
                return found
            depth *= 2 if depth == FIRST_DEPTH else 4  # most misses are narrow (1M: 25 in 200)

    def _cosines(
        self, vector: np.ndarray, rows: np.ndarray, known: tuple[np.ndarray, np.ndarray] | None
    ) -> np.ndarray:
        """Return the cosines at ``rows``: dense search's where it scored them, else the table's."""
        hit, out = _sparse_at(*known, rows) if known is not None else (
            np.zeros(len(rows), dtype=bool), np.zeros(len(rows), dtype=np.float32))  # fmt: skip
        missing = ~hit
        if missing.any():
            out[missing] = self.index.vector_search.scores(vector, rows[missing])
        return out

    def _candidates(
        self,
        dense: tuple[np.ndarray, np.ndarray] | None,
        keywords: KeywordTop | None,
        top_score: float | None,
        depth: int,
        chunks: int,
    ) -> Candidates:
        """Return dense's and BM25's top chunks and the h⁰ every other chunk has at least.

        ``dense``: dense search's top ``depth`` (rows, cosines), None on the BM25 base;
        ``keywords``: BM25's top and the ceiling of the rest, None on the dense base; ``top_score``:
        the best BM25 score, by which scores are scaled.
        """
        parts, dense_floor, keyword_floor = [], -np.inf, 0.0
        if dense is not None:
            rows, scores = dense
            parts.append(rows)
            dense_floor = float(scores[-1]) if len(rows) == depth else -np.inf
        if keywords is not None and top_score:
            parts.append(keywords.rows)
            keyword_floor = keywords.ceiling / float(top_score)
        rows = union_rows(*parts)
        # At a depth of every chunk the bound is no longer needed: the last round is the full scan.
        everything = (
            depth >= chunks or len(rows) >= chunks or (dense is not None and dense_floor == -np.inf)
        )
        if everything:
            return Candidates(rows if len(rows) >= chunks else np.arange(chunks), np.inf)
        if dense is None:  # BM25 alone: every chunk outside has at most the floor
            return Candidates(rows, 1.0 - keyword_floor)
        weight = self._weight
        return Candidates(rows, 1.0 - (weight * dense_floor + (1 - weight) * keyword_floor))

    def _retrieve(self, query: str, k: int) -> list[Hit]:
        found = self.local_ranking(query, k)
        ids = self.index.passage_graph.ids
        hits = []
        for rank, at in enumerate(found.best(k), start=1):
            row, score = int(found.rows[at]), float(1.0 - found.h[at])
            if found.sender[at] >= 0:
                sender = int(found.sender[at])
                via = self._edge(row, sender, self.channels[found.channel[at]])
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


def _sparse_at(
    rows: np.ndarray, values: np.ndarray, wanted: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Look ``wanted`` up in a sparse vector (``rows`` ascending): (held, values, 0 elsewhere)."""
    out = np.zeros(len(wanted), dtype=np.float32)
    hit = np.zeros(len(wanted), dtype=bool)
    if len(rows):
        at = np.minimum(np.searchsorted(rows, wanted), len(rows) - 1)
        hit = rows[at] == wanted
        out[hit] = values[at[hit]]
    return hit, out


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
