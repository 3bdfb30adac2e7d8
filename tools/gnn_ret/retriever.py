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

**The question, expanded** (tuned; not in the paper): a multi-hop question names its first
hop's entity, not the bridge ("... at the place where Larry Alcala was educated": the place is
in Larry Alcala's passage, not in the question). So the chunk closest by h⁰ lends its first
``expand`` entities that the question does not name (and that are no hubs) to a second text,
the question with them appended, and each chunk's h⁰ is the smaller of its distances to the two
texts: the passage about the bridge, close to the expanded text, is a seed or a hit in its own
right, not only through an edge. Pseudo-relevance feedback (Rocchio; RM3), with entities as the
feedback terms. Chosen on the train splits (two entities of the first seed, R@5 musique / hotpotqa
/ 2wiki train 68.8 / 93.0 / 86.4 → 72.1 / 92.5 / 87.6, unguarded) and confirmed on dev;
docs/methods.md has both. It costs one more query embedding and base search.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from hopgraph.core.arrays import sparse_at, union_rows
from hopgraph.core.csr import CsrLike, has_entry
from hopgraph.core.errors import IndexStateError
from hopgraph.graph_store import Index
from hopgraph.graph_store.documents.filters import Where
from hopgraph.graph_store.graphs.passage_graph import DIRECTED, PassageGraphSettings
from hopgraph.graph_store.stores.bm25_query import KeywordTop, Lookups
from hopgraph.tools.baselines.retrievers import HybridRetriever
from hopgraph.tools.guards.guard import CONFIDENT, KEEP, MARGIN, MULTI_HOP, Guarded
from hopgraph.tools.shared.fusion import fuse_hits
from hopgraph.tools.shared.hits import Hit, Provenance
from hopgraph.tools.shared.spans import span

from .channels import (
    DEFAULT_CHANNELS,
    PAPER_CHANNELS,
    Channel,
    load_channels,
)
from .identifiers import names_identifiers
from .layers import propagate, smallest
from .list_rerank import DEPTH as RERANK_DEPTH
from .list_rerank import Listed, fits, list_reranker
from .local import (
    FIRST_DEPTH,
    Candidates,
    KnownDistances,
    LocalRanking,
    propagate_local,
    still_holds,
)
from .query_text import QueryText

EXPAND = 2
"""Entities of the closest chunk appended to the question for its second h⁰ (module doc; 0: off)."""


FULL_SCAN_BELOW = 32_768
"""Chunks below which a query computes every chunk's distance (:meth:`GNNRetriever.ranking`)
instead of the local computation: the same ranking, and faster there (2wiki dev, 7,101 chunks:
p50 1.1 against 2.9 ms; musique, 3,406: 0.9 against 2.5; the synthetic 100k: 5.6 against 4.6)."""


RERANK_FROM = 0.5
"""The hop classifier's probability from which the list reranker runs (GNNRetriever.reranks)."""


RERANKED = "reranked: list features"
"""The provenance step of a place the list reranker gave (tools/gnn_ret/list_rerank.py)."""


FUSE_DEPTH = 20
"""How deep the graph ranking and hybrid's are fused where a question names code."""


FUSED = "fused with hybrid: the question names code"
"""The provenance step of such a fused place (tools/gnn_ret/identifiers.py)."""


HUB = PassageGraphSettings().max_df
"""An entity in more chunks than this (a hub, "United States") is never appended: the passage graph
gives hubs no edges for the same reason."""


BASES = ("dense", "bm25", "hybrid")


class GNNRetriever(Guarded):
    """GNN-Ret over the passage graph (no training).

    Defaults: h⁰ from the hybrid base (0.65 · cosine + 0.35 · BM25 scaled by its maximum), the
    two :data:`DEFAULT_CHANNELS` (chosen on train; semantic and keyword edges lowered R@5 on dev),
    and the spec's guard that a message only ever lowers a distance (§3.2 option b; it lifted
    R@2 on dev).
    """

    name = "gnn_ret"
    score_kind = "gnn similarity"
    needs_graphs = True
    presets: ClassVar[Mapping[str, Mapping[str, Any]]] = {
        "paper": {
            "channels": PAPER_CHANNELS,
            "top_k": 10,
            "layers": 1,
            "only_lower": False,
            "base": "dense",
            "keep": 0,
            "expand": 0,
            "rerank": False,
            "identifiers": False,
        }
    }
    description = (
        "Graph retrieval for multi-hop questions: passages are ranked by their distance to the "
        "question (or to the question with the entities its closest passage adds) blended with "
        "the distance of the best-matching passage that links to them (mentions their page, "
        "shares an entity, same document), so bridge passages come up with their seeds."
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
        expand: int = EXPAND,
        rerank: bool | str | Path = False,
        identifiers: bool = True,
    ) -> None:
        """Set up over ``index``; ``weights`` is a file of learned α's (`hopgraph train`).

        ``keep``, ``selective``, ``confident``: the no-harm guard (tools/guards/guard.py), dense's
        top
        ``keep`` first. ``expand``: entities of the closest chunk added to the question for a
        second h⁰ (module doc; 0: the question alone, as the paper). ``rerank``: ``True``
        reorders the first passages of a multi-hop question by the list reranker shipped for the
        index's model (tools/gnn_ret/list_rerank.py; an index under a model with none ranks as the
        propagation does), a path by the one in that file; it leaves a documentation site's list
        alone (:func:`~hopgraph.tools.gnn_ret.list_rerank.fits`); off by default (docs/methods.md,
        "Reranking the list"). ``identifiers``: a question
        that names code is ranked by the graph's ranking and hybrid's fused (:meth:`retrieve`).
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
        if isinstance(expand, bool) or not isinstance(expand, int) or expand < 0:
            raise ValueError(f"expand must be a whole number ≥ 0, got {expand!r}")
        self.expand = expand
        self.reranker = list_reranker(index, rerank)
        if not isinstance(identifiers, bool):
            raise ValueError(f"identifiers must be true or false, got {identifiers!r}")
        self._hybrid = HybridRetriever(index) if identifiers else None
        graph = index.passage_graph
        if graph.ids != index.ids or index.keywords.ids != graph.ids:
            raise IndexStateError(
                "the passage graph is out of step with the chunks",
                f"rebuild it: `hopgraph graph build --index {index.directory}`",
            )
        self._last: tuple[str, np.ndarray, np.ndarray, np.ndarray] | None = None

    def ranked(self, query: str, k: int, where: Where | None = None) -> list[Hit]:
        """Rank by GNN-Ret (guarded); where the question names code, fused with hybrid.

        A documentation question that names an identifier (tools/gnn_ret/identifiers.py) is keyword
        search's: the first :data:`FUSE_DEPTH` of the graph ranking and of hybrid's are fused by
        RRF (docs/methods.md, "Questions that name code": structlog dev R@5 91.8 → 93.9,
        marshmallow 90.4 → 92.6; no question of the Wikipedia sets names code).
        """
        if self._hybrid is None or not names_identifiers(query):
            return super().ranked(query, k, where)
        depth = max(k, FUSE_DEPTH)
        found = [super().ranked(query, depth, where), self._hybrid.ranked(query, depth, where)]
        return fuse_hits(found, self.name, FUSED, k)

    @cached_property
    def adjacencies(self) -> list[tuple[CsrLike, float]]:
        """Return each channel's union adjacency and α (for the full scan: :meth:`ranking`)."""
        graph = self.index.passage_graph
        return [(graph.walks(c.edge_types), c.alpha) for c in self.channels]

    @property
    def base_weight(self) -> float:
        """Return the dense share of h⁰'s similarity: 1 on dense, 0 on BM25, ``dense_weight``."""
        return {"dense": 1.0, "bm25": 0.0, "hybrid": self.dense_weight}[self.base]

    def distances(self, query: str) -> np.ndarray:
        """Return h⁰ for every chunk: its distance to the question, or to the question expanded.

        The smaller of the two (module doc), each 1 − similarity under the base.
        """
        h0 = self.text_distances(query)
        if not self.expands(query):
            return h0
        expanded = self.expanded(query, int(smallest(h0, 1)[0]))
        return np.minimum(h0, self.text_distances(expanded)) if expanded else h0

    def expands(self, query: str) -> bool:
        """Whether the question is expanded: ``expand`` is on and the question looks multi-hop.

        The guard's classifier and threshold (tools/guards/guard.py): a single-hop question's
        closest chunk holds its answer, and the entities it lends only add noise (NQ dev, unguarded:
        R@5 98.1 → 97.7 expanded) and a second embedding.
        """
        if not self.expand:
            return False
        return self.multi_hop(query, with_vector=self.base_weight > 0) >= MULTI_HOP

    def text_distances(self, text: str) -> np.ndarray:
        """Return 1 − similarity under the base for every chunk (scores scaled to [0, 1])."""
        similarity = np.zeros(len(self.index.chunks), dtype=np.float32)
        weight = self.base_weight
        if weight > 0:
            similarity += weight * self.index.query_similarities(text)
        if weight < 1:
            bm25 = self.index.keywords.scores(text)
            similarity += (1 - weight) * (bm25 / bm25.max() if bm25.max() > 0 else bm25)
        return 1.0 - similarity

    @cached_property
    def _entity_chunks(self) -> np.ndarray:
        """Return how many chunks name each entity of the extraction table (hubs: > HUB)."""
        table = self.index.extraction_table
        return table.entities.column_counts(len(table.vocab.strings))

    def expanded(self, query: str, closest: int) -> str | None:
        """Return the question with entities of chunk row ``closest`` appended, or None.

        The first ``expand`` entities it names that the question does not and that are no hubs
        (module doc); None when there are none.
        """
        if not self.expand:
            return None
        table = self.index.extraction_table
        named = set(self.index.entity_linker.link(query).entities)
        lowered = query.lower()
        added: list[str] = []
        for at in table.entities.row(closest).tolist():
            entity = table.vocab.strings[at]
            if entity in named or entity in lowered or entity in added:
                continue
            if self._entity_chunks[at] > HUB:
                continue
            added.append(entity)
            if len(added) == self.expand:
                break
        return f"{query} {' ; '.join(added)}" if added else None

    def ranking(self, query: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Return (final distances, senders, channels) for a query; the last query's are kept."""
        if self._last is None or self._last[0] != query:
            result = propagate(
                self.distances(query), self.adjacencies, self.top_k, self.layers, self.only_lower
            )
            self._last = (query, *result)
        return self._last[1], self._last[2], self._last[3]

    def local_ranking(self, query: str, k: int) -> LocalRanking:
        """Return the ranking of the chunks that can enter the top ``k`` (tools/gnn_ret/local.py).

        The full scan's ranking (:meth:`ranking`) without computing every chunk's distance.
        """
        index, chunks = self.index, len(self.index.chunks)
        first = depth = max(FIRST_DEPTH, 2 * k, 2 * self.top_k)
        texts = [QueryText(self, query, first, cached=True)]
        expanded = self.expanded(query, texts[0].closest()) if self.expands(query) else None
        if expanded:  # its dense search bypasses the index's one-query cache (the guard's)
            texts.append(QueryText(self, expanded, first, cached=False, extends=texts[0]))
        channels = [
            ([index.passage_graph.csr[t] for t in c.edge_types], c.alpha) for c in self.channels
        ]

        def distances(rows: np.ndarray) -> np.ndarray:
            looked_up: Lookups = {}  # the expansion repeats the question's words
            return np.minimum.reduce([text.h0_of(rows, looked_up) for text in texts])

        h0_of = KnownDistances(distances)

        found: LocalRanking | None = None
        while True:
            parts = [text.candidates(depth, chunks) for text in texts]
            rows = union_rows(*(part.rows for part in parts))
            # every other chunk is at least as far from each text as that text's bound
            bound = np.inf if len(rows) >= chunks else min(part.bound for part in parts)
            start = Candidates(rows, bound)
            # A miss is mostly narrow: the deeper lists usually confirm the ranking they were
            # asked to check (at a million synthetic chunks, 16 of the 25 questions in 200 that
            # widen), which costs their new rows' h⁰, not the layers again.
            if found is not None and still_holds(found, k, min(k, chunks), start, h0_of):
                return found
            found, exact = propagate_local(
                h0_of, start, channels, self.top_k, self.layers, self.only_lower
            )
            best = found.best(k)
            exact &= start.bound == np.inf or (
                len(best) == min(k, chunks) and bool(found.h[best].max() <= start.bound)
            )
            if exact or depth >= chunks:
                return found
            depth *= 2 if depth == FIRST_DEPTH else 4

    def cosines_at(
        self, vector: np.ndarray, rows: np.ndarray, known: tuple[np.ndarray, np.ndarray] | None
    ) -> np.ndarray:
        """Return the cosines at ``rows``: dense search's where it scored them, else the table's."""
        hit, out = sparse_at(*known, rows) if known is not None else (
            np.zeros(len(rows), dtype=bool), np.zeros(len(rows), dtype=np.float32))  # fmt: skip
        missing = ~hit
        if missing.any():
            out[missing] = self.index.vector_search.scores(vector, rows[missing])
        return out

    def base_candidates(
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
        weight = self.base_weight
        return Candidates(rows, 1.0 - (weight * dense_floor + (1 - weight) * keyword_floor))

    def _found(self, query: str, n: int) -> tuple[LocalRanking, np.ndarray]:
        """Return the propagation's ranking and the positions of its first ``n`` in it."""
        if len(self.index.chunks) < FULL_SCAN_BELOW:
            h, senders, channels = self.ranking(query)
            found = LocalRanking(np.arange(len(h)), h, senders, channels)
        else:
            found = self.local_ranking(query, n)
        return found, found.best(n)

    def listed(self, query: str, n: int) -> Listed:
        """Return the propagation's first ``n`` passages: what the list reranker reads."""
        return _listed(*self._found(query, n))

    def reranks(self, query: str) -> bool:
        """Whether the list reranker reorders this question's list: the question is multi-hop.

        The guard's classifier (tools/guards/hop_classifier.py) at its own decision point,
        :data:`RERANK_FROM`: the reranker was fitted on multi-hop questions only (every train
        question is at 0.5 or more; no NQ question is). Run on every question it cost the
        documentation sets R@5 (marshmallow 90.4 → 84.0, structlog 91.8 → 82.7; at the guard's
        0.3, which a third of their questions pass, 87.2 and 87.8). A documentation site's list
        is left alone as well, once found (:func:`~hopgraph.tools.gnn_ret.list_rerank.fits`).
        """
        return self.reranker is not None and self.multi_hop(query) >= RERANK_FROM

    def _retrieve(self, query: str, k: int) -> list[Hit]:
        reranks = self.reranks(query)
        depth = max(k, RERANK_DEPTH) if reranks else k
        expansion = {"hopgraph.graph.hops": self.layers, "hopgraph.graph.top_k": self.top_k}
        with span("graph expansion", expansion) as opened:
            found, best = self._found(query, depth)
            if opened is not None:
                opened.set_attribute("hopgraph.graph.nodes_reached", len(found.rows))
        order, probability = np.arange(len(best)), None
        if reranks and self.reranker is not None and fits(self.index, found.rows[best]):
            with span("rerank", {"hopgraph.rerank.candidates": len(best)}):
                order, probability = self.reranker.order(self.index, query, _listed(found, best))
        ids = self.index.passage_graph.ids
        hits = []
        for rank, place in enumerate(order[:k].tolist(), start=1):
            at = best[place]
            row, score = int(found.rows[at]), float(1.0 - found.h[at])
            if found.sender[at] >= 0:
                sender = int(found.sender[at])
                via = self._edge(row, sender, self.channels[found.channel[at]])
                step = "message from a top-K neighbour"
            else:
                via, step = (), "own distance"
            why = Provenance(self.name, step, place + 1, score, via)
            hit = self._hit(ids[row], score, why)
            if probability is not None:
                p = float(probability[rank - 1])
                reranked = Provenance(self.name, RERANKED, rank, p)
                hit = hit.with_score(p, reranked, kind="probability")
            hits.append(hit)
        return hits

    def _edge(self, row: int, sender: int, channel: Channel) -> tuple[str, ...]:
        """Name the sender and the edge types that carried its message: ("d1#0", "link")."""
        edges = self.index.passage_graph.csr
        # A message travels row → column; a directed edge only counts in that direction.
        kinds = [
            k
            for k in channel.edge_types
            if has_entry(edges[k], sender, row)
            or (k not in DIRECTED and has_entry(edges[k], row, sender))
        ]
        return (self.index.passage_graph.ids[sender], *kinds)


def _listed(found: LocalRanking, best: np.ndarray) -> Listed:
    """Return the passages at positions ``best`` of ``found``, as the list reranker reads them."""
    return Listed(found.rows[best], 1.0 - found.h[best], found.sender[best] >= 0)
