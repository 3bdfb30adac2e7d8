"""One text's h⁰ under GNN-Ret's base, for the local computation: candidates, distances, closest."""

from __future__ import annotations

from concurrent.futures import Future
from typing import Protocol

import numpy as np

from hopgraph.core.arrays import union_rows
from hopgraph.core.threads import beside
from hopgraph.graph_store import Index
from hopgraph.graph_store.stores.bm25_query import KeywordTop, Lookups, QueryScores

from .layers import smallest
from .local import (
    Candidates,
)


class TextRanker(Protocol):
    """What a :class:`QueryText` asks of its retriever (GNN-Ret's; the methods say how)."""

    index: Index

    @property
    def base_weight(self) -> float:
        """Return the dense share of the similarity h⁰ is 1 minus."""
        ...

    def text_distances(self, text: str) -> np.ndarray:
        """Return every chunk's h⁰ for ``text`` (the full scan)."""
        ...

    def cosines_at(
        self, vector: np.ndarray, rows: np.ndarray, known: tuple[np.ndarray, np.ndarray] | None
    ) -> np.ndarray:
        """Return the cosines at ``rows``: dense search's where it scored them, else the table's."""
        ...

    def base_candidates(
        self,
        dense: tuple[np.ndarray, np.ndarray] | None,
        keywords: KeywordTop | None,
        top_score: float | None,
        depth: int,
        chunks: int,
    ) -> Candidates:
        """Return dense's and BM25's top chunks and the h⁰ every other chunk has at least."""
        ...


CLOSEST = 32
"""Dense's and BM25's first chunks among which the closest chunk is looked for first."""


class QueryText:
    """One text's h⁰ under a retriever's base: its candidates at a depth, its distances at rows.

    GNN-Ret's local computation asks this of the question and, when it expands it, of the
    expanded question too (:meth:`GNNRetriever.local_ranking`).
    """

    def __init__(
        self,
        retriever: TextRanker,
        text: str,
        first: int,
        cached: bool,
        extends: QueryText | None = None,
    ) -> None:
        """Prepare ``text`` (nothing ranked yet).

        ``extends``: the text it starts with (then a space), whose BM25 terms and read postings
        it keeps.
        """
        index, weight = retriever.index, retriever.base_weight
        self.retriever, self.text, self.first, self.cached = retriever, text, first, cached
        self.vector = index.embed_query(text) if weight > 0 else None
        self.keywords: QueryScores | None = None
        self._first_dense: Future | None = None
        if self.vector is not None and weight < 1:  # the two halves' first tops side by side
            self._first_dense = beside(self._dense, first)
        if weight < 1:
            self.keywords = (
                extends.keywords.extended(text[len(extends.text) + 1 :])
                if extends is not None and extends.keywords is not None
                else index.query_scores(text)
            )
        self.first_top = self.keywords.top(first) if self.keywords is not None else None
        # The best BM25 score of all, as the full scan scales by (``top`` certifies it).
        top = self.first_top
        self.top_score = top.scores.max() if top and len(top.scores) else None
        self.known: list[tuple[np.ndarray, np.ndarray]] = []  # dense's exact cosines, by row

    def dense(self, depth: int) -> tuple[np.ndarray, np.ndarray]:
        """Return dense search's top ``depth`` (rows, cosines) for this text, best first."""
        if depth == self.first and self._first_dense is not None:
            return self._first_dense.result()
        return self._dense(depth)

    def _dense(self, depth: int) -> tuple[np.ndarray, np.ndarray]:
        index = self.retriever.index
        if self.cached:
            return index.dense_top(self.text, depth)
        return index.vector_search.top(self.vector, depth)

    def candidates(self, depth: int, chunks: int) -> Candidates:
        """Return dense's and BM25's top ``depth`` chunks and the h⁰ every other one has."""
        dense = None
        if self.vector is not None:
            dense = self.dense(depth)
            order = np.argsort(dense[0])
            self.known.append((dense[0][order], dense[1][order]))
        keywords = self.first_top
        if depth != self.first and self.keywords is not None:
            keywords = self.keywords.top(depth)
        return self.retriever.base_candidates(dense, keywords, self.top_score, depth, chunks)

    def h0_of(self, rows: np.ndarray, looked_up: Lookups | None = None) -> np.ndarray:
        """Return h⁰ at ``rows`` (float32, as the full scan's), cosines from the last search.

        ``looked_up``: BM25 term scores at these rows that another text already read.
        """
        retriever, weight = self.retriever, self.retriever.base_weight
        similarity = np.zeros(len(rows), dtype=np.float32)
        if self.vector is not None:
            known = self.known[-1] if self.known else None
            similarity += weight * retriever.cosines_at(self.vector, rows, known)
        if self.keywords is not None and self.top_score:
            similarity += (1 - weight) * (self.keywords.at(rows, looked_up) / self.top_score)
        return 1.0 - similarity

    def closest(self) -> int:
        """Return the row of the chunk with the smallest h⁰ (ties: the lowest row).

        As the full scan finds it, from dense's and BM25's first :data:`CLOSEST` of the first
        round: certified when no chunk outside both lists can be as close, else from longer
        lists, and past the first round's by the full scan itself.
        """
        retriever = self.retriever
        weight = retriever.base_weight
        depth = CLOSEST
        while depth < self.first:
            parts, floor, complete = [], 0.0, False
            if self.vector is not None:
                rows, scores = self.dense(self.first)  # the first round's, kept
                parts.append(rows[:depth])
                complete = len(rows) < depth  # every chunk is in the list
                floor += weight * float(scores[depth - 1]) if not complete else 0.0
            if self.first_top is not None and self.top_score:
                order = np.argsort(-self.first_top.scores, kind="stable")[:depth]
                parts.append(self.first_top.rows[order])
                cut = float(self.first_top.scores[order[-1]]) if len(order) == depth else 0.0
                floor += (1 - weight) * max(cut, self.first_top.ceiling) / self.top_score
            rows = union_rows(*parts)
            if not len(rows):  # no chunk matches at all: the full scan's ties decide
                break
            h = self.h0_of(rows)
            at = int(smallest(h, 1)[0])
            if complete or h[at] < 1.0 - floor:
                return int(rows[at])
            depth *= 4
        return int(smallest(retriever.text_distances(self.text), 1)[0])
