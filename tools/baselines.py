"""The baselines every paper compares against: BM25, dense, and their RRF hybrid."""

from __future__ import annotations

import numpy as np

from hopgraph.graph_store import Index

from .base import Retriever
from .fusion import reciprocal_rank_fusion
from .hits import Hit, Provenance

MAX_WHERE_DOCS = 10_000
"""Documents up to which a filtered dense search asks Chroma for them by id."""


class BM25Retriever(Retriever):
    """Lexical retrieval with bm25s (Lucene BM25, English stemming and stop words)."""

    name = "bm25"
    description = (
        "Keyword search (BM25). Best for exact names, titles, rare terms and numbers. "
        "Returns passages with their title and text."
    )

    def _retrieve(self, query: str, k: int) -> list[Hit]:
        return self._hits(self.index.keywords.query(query, k), "keyword match")


class DenseRetriever(Retriever):
    """Semantic retrieval: cosine similarity of sentence embeddings in Chroma."""

    name = "dense"
    description = (
        "Semantic search over passage embeddings. Best for paraphrased or descriptive "
        "questions where the exact words may differ from the passage."
    )

    def _retrieve(self, query: str, k: int) -> list[Hit]:
        vector = self.index.embed_query(query)
        return self._hits(self.index.vectors.query(vector, k), "embedding match")

    def _retrieve_within(self, query: str, k: int, allowed: frozenset[str]) -> list[Hit]:
        """Search only the allowed chunks' documents, with Chroma's ``where`` on ``doc_id``."""
        docs = {self.index.chunk(c).doc_id for c in allowed}
        if len(docs) > MAX_WHERE_DOCS:  # a long $in list costs more than ranking deeper
            return super()._retrieve_within(query, k, allowed)
        # their other chunks (a section filter) may take places: fetch that many more
        held = sum(1 for c in self.index.chunks.values() if c.doc_id in docs)
        where = {"doc_id": {"$in": sorted(docs)}}
        vector = self.index.embed_query(query)
        scored = self.index.vectors.query(vector, min(held, k + held - len(allowed)), where)
        return self._hits([p for p in scored if p[0] in allowed][:k], "embedding match")

    def exact_top(self, query: str, k: int, allowed: frozenset[str] | None = None) -> list[Hit]:
        """Return the first ``k`` hits by an exact scan of the in-memory embedding matrix.

        The ranking Chroma's index approximates, ties broken by id as there; for a handful of
        hits it costs less than a Chroma round trip (the no-harm guard asks for two per query).
        ``allowed``: rank only these chunks.
        """
        similarity = self.index.query_similarities(query)
        ids = self.index.ids
        if allowed is not None:
            rows = self.index.rows
            keep = np.zeros(len(similarity), dtype=bool)
            keep[[rows[c] for c in allowed]] = True
            similarity = np.where(keep, similarity, -np.inf)
            k = min(k, len(allowed))
        if len(similarity) > 4 * k:  # a cheap shortlist first; ties at its edge stay in it
            cut = np.partition(similarity, -4 * k)[-4 * k]
            rows = np.flatnonzero(similarity >= cut)
        else:
            rows = np.arange(len(similarity))
        best = sorted(rows, key=lambda r: (-round(float(similarity[r]), 6), ids[r]))[:k]
        return self._hits([(ids[r], float(similarity[r])) for r in best], "embedding match")


class HybridRetriever(Retriever):
    """BM25 and dense rankings fused by reciprocal rank fusion (Cormack et al., 2009).

    By default each retriever contributes its top ``k`` (the protocol of the reference floor in
    shared/data); ``depth`` fuses deeper lists, which raises Recall@15 a little on HotpotQA.
    """

    name = "hybrid"
    description = (
        "Keyword and semantic search combined (reciprocal rank fusion). A strong default "
        "for any question."
    )

    def __init__(self, index: Index, rrf_k: int = 60, depth: int | None = None) -> None:
        super().__init__(index)
        self.rrf_k = rrf_k
        self.depth = depth
        self.parts = (BM25Retriever(index), DenseRetriever(index))

    def _retrieve(self, query: str, k: int) -> list[Hit]:
        depth = max(k, self.depth or k)
        rankings = [part.retrieve(query, depth) for part in self.parts]
        # A chunk found by both parts keeps both provenances: a user sees why it ranks high.
        found: dict[str, Hit] = {}
        for hit in (h for ranking in rankings for h in ranking):
            seen = found.get(hit.id)
            found[hit.id] = seen.with_score(seen.score, *hit.provenance) if seen else hit
        fused = reciprocal_rank_fusion([[h.id for h in r] for r in rankings], self.rrf_k)[:k]
        return [
            found[chunk_id].with_score(score, Provenance(self.name, "rrf", rank, score))
            for rank, (chunk_id, score) in enumerate(fused, start=1)
        ]
