"""IIER's evidence chains (spec iier §3), offline: keyword seeds, then chains over the CIG.

1. Question keywords (§3.1): with a chat model, the LLM's keyword list (prompt A.1 in
   ``prompts/iier.py``); without one, the entities the question mentions (linked to the corpus's
   titles like chunk entities), or its content words when it names none. Either way normalised
   like chunk keywords.
2. Seeds (§3.2): greedy set cover of the question keywords by chunk keywords; candidates ranked
   by (uncovered keywords they cover, similarity to the question); at least one seed (the most
   similar chunk) when nothing matches.
3. Chains (§3.3): from each seed, greedily add the best unvisited neighbour of the last chunk
   (any edge type) until ``max_length`` chunks. The untrained scorer is honest similarity:
   s(n) = cos(q, n) + ``edge_weight`` · mean(r(u, n)), with IIER's edge features r scaled to
   [0, 1] (structural, semantic, keywords / 5, shared entities > 0). A trained chain scorer
   (``tools/iier/scorer.py``, `hopgraph train iier`) replaces it when given or found with the
   index (``INDEX/models/iier.pt``); its weights are applied in numpy (``ChainRanker``), so
   retrieval imports no torch.
4. Ranking: chains flattened breadth-first (every seed, then every chain's second chunk, …), or
   chain after chain as the paper concatenates them (``order="chains"``, the paper preset);
   the base retriever's ranking fills the remaining places.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np

from hopgraph.core.llm import ask_structured
from hopgraph.graph_store import Index
from hopgraph.graph_store.graphs.extraction.offline import token_key
from hopgraph.graph_store.graphs.extraction.parsing import parse_string_list
from hopgraph.graph_store.stores.vector_search import Cosines
from hopgraph.prompts.iier import QUESTION_KEYWORDS
from hopgraph.tools.guards.guard import KEEP, Guarded
from hopgraph.tools.shared.base import Bases
from hopgraph.tools.shared.hits import Hit, Provenance
from hopgraph.tools.shared.spans import span
from hopgraph.tools.shared.weights import available_weights, load_weights

from .steps import ChainRanker, ScorerSettings, Step, scaled_edges

log = logging.getLogger(__name__)

if TYPE_CHECKING:  # a chat model is passed in; the LLM-free runs import no langchain-core
    from langchain_core.language_models import BaseChatModel


def flatten_chains(
    chains: list[list[int]], order: str = "breadth"
) -> dict[int, tuple[int, list[int]]]:
    """Rank the chains' chunks, each once: row → (its hop in the chain that placed it, chain)."""
    ranked: dict[int, tuple[int, list[int]]] = {}
    if order == "chains":
        for chain in chains:
            for hop, row in enumerate(chain):
                ranked.setdefault(row, (hop, chain))
        return ranked
    for hop in range(max((len(c) for c in chains), default=0)):
        for chain in chains:
            if hop < len(chain):
                ranked.setdefault(chain[hop], (hop, chain))
    return ranked


class IIERRetriever(Guarded):
    """Evidence chains grown from keyword seeds over the chunk-interaction graph."""

    name = "iier"
    needs_graphs = True
    needs_base = True
    presets: ClassVar[Mapping[str, Mapping[str, Any]]] = {
        "paper": {
            "max_length": 5,
            "order": "chains",
            "seed_order": "cover",
            "dense_seeds": 0,
            "keep": 0,
        }
    }
    description = (
        "Evidence-chain retrieval for multi-hop questions: starts from the passages that cover "
        "the question's keywords and follows links (same document, similar text, shared "
        "keywords or entities) to the next piece of evidence; passages come in chain order."
    )

    def __init__(
        self,
        index: Index,
        max_length: int = 3,
        edge_weight: float = 0.1,
        base: str = "hybrid",
        chat: BaseChatModel | None = None,
        weights: str | Path | Literal[False] | None = None,
        order: Literal["breadth", "chains"] = "breadth",
        seed_order: Literal["cover", "similarity"] = "similarity",
        dense_seeds: int = 1,
        keep: int = KEEP,
        margin: float = 0.15,
        selective: bool = True,
        confident: float = 0.15,
        *,
        bases: Bases,
    ) -> None:
        """Set up over ``index``; give ``chat`` to read question keywords with an LLM (§3.1).

        ``weights``: a trained chain scorer (`hopgraph train iier`); by default (None) the one
        found with the index or shipped for its model, else the untrained scorer; False: the
        untrained scorer. ``order``: ``chains`` gives each chain whole, one after another (the
        paper's context); ``breadth`` every seed first, then every chain's second chunk, ….
        ``seed_order``: chains start in set-cover order (the paper) or by the seed's similarity
        to the question; ``dense_seeds``: the chunks closest to the question seed chains too
        (the cover misses single-hop answers whose keywords differ from the question's);
        ``keep``, ``margin``, ``selective``, ``confident``: the no-harm guard
        (tools/guards/guard.py; IIER stands aside on a multi-hop question wherever dense's second is
        within its margin, the place the guard would give it).
        ``bases`` makes ``base``.
        """
        if seed_order not in ("cover", "similarity"):
            raise ValueError(f"seed_order must be 'cover' or 'similarity', got {seed_order!r}")
        self.seed_order = seed_order
        if dense_seeds < 0:
            raise ValueError(f"dense_seeds must be ≥ 0, got {dense_seeds}")
        self.dense_seeds = dense_seeds
        if order not in ("breadth", "chains"):
            raise ValueError(f"order must be 'breadth' or 'chains', got {order!r}")
        self.order = order
        super().__init__(index)
        self.guard(index, keep, margin, selective, confident)
        self.max_length, self.edge_weight, self.chat = max_length, edge_weight, chat
        if weights is False:
            path = None
        else:
            path = Path(weights) if weights else available_weights(index, self.name)
        self.scorer: ChainRanker | None = None
        if path is not None:
            record, state = load_weights(path, index, self.name)
            self.scorer = ChainRanker(state, ScorerSettings(**record["settings"]))
        self.weights_path = path
        self.base = bases(base)
        self.graph = index.passage_graph
        self.ids = self.graph.ids
        self.adjacency = self.graph.adjacency()
        # Seeds match a chunk's keywords and its entities (its own page's included): IIER keeps
        # titles out of keyword *edges* to keep them sparse, but a question naming a page
        # should be able to seed on that page.
        self.keywords: list[set[str]] = [
            set(e.keywords) | set(e.entities) for e in index.extractions
        ]
        self.by_keyword: dict[str, list[int]] = defaultdict(list)
        for row, words in enumerate(self.keywords):
            for word in words:
                self.by_keyword[word].append(row)

    def question_keywords(self, question: str) -> set[str]:
        """Return the question's keywords, normalised like chunk keywords."""
        if self.chat is not None:
            listed, _ = ask_structured(
                self.chat,
                QUESTION_KEYWORDS.format(question=question),
                parse_string_list,
                lambda _: None,
            )
            if listed is not None:
                return {key for key in map(token_key, listed) if key}
            log.warning(
                "iier: the LLM's keyword list could not be read even after a repair; "
                "FALLBACK: the question's keywords are found without it"
            )
        # linked as the chunks were, so the question's entities meet the chunks' keywords
        linked = self.index.entity_linker.link(question)
        # IIER's keywords are entity-like phrases; plain words only when the question names none.
        return set(linked.entities) or set(linked.content_words())

    def seeds(self, wanted: set[str], similarity: Cosines) -> list[int]:
        """Greedy set cover of ``wanted`` by chunk keywords (§3.2); never empty."""
        remaining, chosen = set(wanted), []
        while remaining:
            candidates = sorted({row for w in remaining for row in self.by_keyword.get(w, ())})
            candidates = [r for r in candidates if r not in chosen]
            if not candidates:
                break
            cosine = dict(zip(candidates, similarity[candidates].tolist(), strict=True))
            best = max(candidates, key=lambda r: (len(self.keywords[r] & remaining), cosine[r], -r))
            chosen.append(best)
            remaining -= self.keywords[best]
        return chosen or [int(similarity.top(1)[0])]

    def chain(self, seed: int, similarity: Cosines, query: np.ndarray) -> list[int]:
        """Grow one chain greedily from ``seed`` (§3.3): best unvisited neighbour of the last."""
        path = [seed]
        while len(path) < self.max_length:
            last = path[-1]
            row = self.adjacency.indices[
                self.adjacency.indptr[last] : self.adjacency.indptr[last + 1]
            ]
            candidates = [int(n) for n in row if n not in path]
            if not candidates:
                break
            scores = self.next_scores(path, candidates, similarity, query)
            path.append(candidates[int(np.argmax(scores))])
        return path

    def next_scores(
        self, path: list[int], candidates: list[int], similarity: Cosines, query: np.ndarray
    ) -> np.ndarray:
        """Score the candidates for the chain's next chunk: trained scorer, else similarity."""
        edges = scaled_edges(self.graph.edge_features_rows(path[-1], candidates))
        if self.scorer is None:
            return similarity[candidates] + self.edge_weight * edges.mean(axis=1)
        vectors = self.index.vector_search  # these rows only, not the table
        step = Step(
            question=query,
            path=vectors.matrix(np.array(path)).mean(axis=0),
            candidates=vectors.matrix(np.array(candidates)),
            edges=edges,
        )
        return self.scorer.rank(step)

    def _retrieve(self, query: str, k: int) -> list[Hit]:
        vector = self.index.embed_query(query).astype(np.float32)
        similarity = Cosines(self.index.vector_search, vector)  # of the chunks reached only
        with span("graph expansion", {"hopgraph.graph.top_k": k}) as opened:
            seeds = self.seeds(self.question_keywords(query), similarity)
            if self.dense_seeds:  # the chunks closest to the question seed chains too
                closest = similarity.top(self.dense_seeds)
                seeds = list(dict.fromkeys([*seeds, *(int(r) for r in closest)]))
            if self.seed_order == "similarity":
                seeds = sorted(seeds, key=lambda row: -similarity[row])
            chains = [self.chain(s, similarity, vector) for s in seeds]
            ranked = flatten_chains(chains, self.order)
            if opened is not None:
                opened.set_attribute("hopgraph.graph.seeds", len(seeds))
                opened.set_attribute("hopgraph.graph.hops", max(map(len, chains), default=1) - 1)
                opened.set_attribute("hopgraph.graph.nodes_reached", len(ranked))
        hits = []
        for rank, (row, (hop, chain)) in enumerate(list(ranked.items())[:k], start=1):
            score = float(similarity[row])
            step = "seed" if hop == 0 else f"hop {hop}"
            via = tuple(self.ids[r] for r in chain[: hop + 1])
            hits.append(
                self._hit(self.ids[row], score, Provenance(self.name, step, rank, score, via))
            )
        if len(hits) < k:  # the base ranking fills the places the chains left
            taken, rows = {h.id for h in hits}, self.index.rows
            for extra in self.base.retrieve(query, k + len(taken)):
                if extra.id not in taken and len(hits) < k:
                    # scored by its cosine as the chains' are: one scale (the base's stays in
                    # its provenance)
                    cosine = float(similarity[rows[extra.id]])
                    why = Provenance(self.name, "base retrieval", len(hits) + 1, cosine)
                    hits.append(extra.with_score(cosine, why, kind="cosine"))
        return hits  # chain order; each scored by its cosine (hits.order_note says so)
