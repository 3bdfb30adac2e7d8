"""The baselines every paper compares against: BM25, dense, and their RRF hybrid."""

from __future__ import annotations

import numpy as np

from hopgraph.graph_store import Index
from hopgraph.tools.shared.base import Retriever
from hopgraph.tools.shared.fusion import reciprocal_rank_fusion
from hopgraph.tools.shared.hits import Hit, Provenance


class BM25Retriever(Retriever):
    """Lexical retrieval with bm25s (Lucene BM25, English stemming and stop words)."""

    name = "bm25"
    score_kind = "bm25"
    step = "keyword match"
    embeds_query = False
    description = (
        "Keyword search (BM25). Best for exact names, titles, rare terms and numbers. "
        "Returns passages with their title and text."
    )

    def _retrieve(self, query: str, k: int) -> list[Hit]:
        return self._hits(self.scored(query, k), self.step)

    def scored(self, query: str, k: int) -> list[tuple[str, float]]:
        """Return the first ``k`` (chunk id, BM25 score) pairs, best first."""
        return self.index.keywords.query(query, k)


class DenseRetriever(Retriever):
    """Semantic retrieval: cosine similarity of sentence embeddings.

    Searched in the index's vector table (graph_store/stores/vector_search.py): through the IVF
    of each large segment, exactly elsewhere; every score is an exact cosine.
    """

    name = "dense"
    step = "embedding match"
    description = (
        "Semantic search over passage embeddings. Best for paraphrased or descriptive "
        "questions where the exact words may differ from the passage."
    )

    def _retrieve(self, query: str, k: int) -> list[Hit]:
        return self.top_hits(query, k)

    def _retrieve_within(self, query: str, k: int, allowed: frozenset[str]) -> list[Hit]:
        """Rank only the allowed chunks (scored exactly when few, else searched deeper)."""
        return self.top_hits(query, k, allowed)

    def top_hits(self, query: str, k: int, allowed: frozenset[str] | None = None) -> list[Hit]:
        """Return the first ``k`` hits; ``allowed``: rank only these chunks (:meth:`scored`)."""
        return self._hits(self.scored(query, k, allowed), self.step)

    def scored(
        self, query: str, k: int, allowed: frozenset[str] | None = None
    ) -> list[tuple[str, float]]:
        """Return the first ``k`` (chunk id, cosine) pairs; ``allowed``: rank only these chunks.

        Ties are broken by id, on cosines rounded to 6 decimals (what float32 can tell apart),
        so a ranking does not depend on the order the chunks were written in.
        """
        rows = None
        if allowed is not None:
            position = self.index.rows
            rows = np.fromiter((position[c] for c in allowed), dtype=np.int64, count=len(allowed))
            k = min(k, len(allowed))
        # a cheap shortlist first, ranked by the tie rule
        found, scores = self.index.dense_top(query, max(4 * k, 8), rows)
        ids = self.index.ids
        best = sorted(
            zip(found.tolist(), scores.tolist(), strict=True),
            key=lambda p: (-round(p[1], 6), ids[p[0]]),
        )[:k]
        return [(ids[r], s) for r, s in best]


class HybridRetriever(Retriever):
    """BM25 and dense rankings fused by reciprocal rank fusion (Cormack et al., 2009).

    By default each retriever contributes its top ``k`` (the protocol of the reference floor in
    shared/data); ``depth`` fuses deeper lists, which raises Recall@15 a little on HotpotQA.
    """

    name = "hybrid"
    score_kind = "rrf"
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
        # Scored pairs, not hits: G-RAG fuses a hundred deep, and hits for chunks that do not
        # make the fused top k cost more than the search (nq dev, top 100: 1.0 → 0.7 ms).
        rankings = [part.scored(query, depth) for part in self.parts]
        fused = reciprocal_rank_fusion([[c for c, _ in r] for r in rankings], self.rrf_k)[:k]
        wanted = {chunk_id for chunk_id, _ in fused}
        # A chunk found by both parts keeps both provenances: a user sees why it ranks high.
        why: dict[str, list[Provenance]] = {}
        for part, ranking in zip(self.parts, rankings, strict=True):
            for rank, (chunk_id, score) in enumerate(ranking, start=1):
                if chunk_id in wanted:
                    why.setdefault(chunk_id, []).append(
                        Provenance(part.name, part.step, rank, score)
                    )
        return [
            self._hit(chunk_id, score, *why[chunk_id], Provenance(self.name, "rrf", rank, score))
            for rank, (chunk_id, score) in enumerate(fused, start=1)
        ]
