"""One query's BM25 scores, computed only where they can matter (MaxScore's pruning).

At a million chunks a query word as common as "the" after stop words has close to a million
postings and an idf near zero; reading them all cost a GNN-Ret query 4 ms at p95 and grew with
the corpus. MaxScore (Turtle & Flood, 1995) splits the query terms: the *essential* ones, read
in full, and the rest, whose total upper bound caps the score of any chunk that holds none of
the essential terms (a term's bound: its idf times the largest ``tf / (tf + norm)`` in any of
its chunks, Segment.impact_ceilings). So :meth:`QueryScores.top` reads the postings of the
rarest terms (up to a budget that grows with the depth asked), scores those chunks in full by
looking the other terms up in their postings, and returns them with a *ceiling* that no other
chunk exceeds: the caller certifies its result against that ceiling, as GNN-Ret's local
computation does (tools/gnn_ret/local.py), and asks again deeper when it cannot.

Scores are summed term by term in query order in float64, as :meth:`BM25Store.sparse_scores`
sums them, so a score here equals the full scan's bit for bit.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hopgraph.core.arrays import union_places

from .kdb_bm25 import BM25Store, impact

POSTINGS_PER_DEPTH = 64
"""A term with more postings than this per chunk asked for (32,768 at GNN-Ret's first depth of
512) may be left out of the chunks read in full."""

Postings = list[tuple[np.ndarray, np.ndarray]]
"""A term's live chunk rows and scores there, per segment."""
Lookups = dict[str, tuple[np.ndarray, np.ndarray]]
"""Terms' scores at one set of rows: positions in the rows holding the term, and the scores."""

SAFETY = 1 + 1e-6
"""Head-room on a term's bound for float rounding (scores are float32 sums)."""

NEGLIGIBLE = 0.02
"""How far below the best score the left-out terms' bounds must stay, as a share of it: GNN-Ret
scales BM25 by the best score, so its bound on the other chunks moves by at most this × (1 − w)."""


@dataclass(frozen=True)
class KeywordTop:
    """Chunk rows (ascending), their BM25 scores, and a score no other chunk exceeds."""

    rows: np.ndarray
    scores: np.ndarray
    ceiling: float


@dataclass(frozen=True)
class _Term:
    idf: float
    count: int
    postings: tuple[tuple[int, int, int], ...]  # (segment, start, end) in its CSC arrays
    ceiling: float
    """The most ``tf / (tf + norm)`` reaches in any chunk holding the term (below 1)."""

    @property
    def size(self) -> int:
        return sum(end - start for _, start, end in self.postings)

    @property
    def bound(self) -> float:
        return self.count * self.idf * self.ceiling


class QueryScores:
    """The BM25 scores of one query: at given chunks, or the top ones with a ceiling."""

    def __init__(self, store: BM25Store, text: str) -> None:
        """Find the query's terms and their postings in ``store`` (nothing is scored yet)."""
        self._setup(store, store.query_terms(text), {})

    def extended(self, more: str) -> QueryScores:
        """Return the query of ``text + " " + more``: the same terms, then ``more``'s.

        The tokenizer reads words one by one, so those are the longer text's terms; postings
        this query has read are not read again (GNN-Ret's expanded question,
        tools/gnn_ret/retriever.py).
        """
        out = QueryScores.__new__(QueryScores)
        out._setup(self.store, self.sequence + self.store.query_terms(more), self._read)
        return out

    def _setup(
        self, store: BM25Store, sequence: list[tuple[str, float]], read: dict[str, Postings]
    ) -> None:
        self.store = store
        self.sequence = sequence  # query order, repeats kept: the sum's order
        self._read = read  # each term's postings once read, shared with extended queries
        # Chunks scored in full, by the terms read: a deeper ask (GNN-Ret's next round) that
        # reads the same terms only cuts again. It starts from the terms the last ask read (a
        # deeper cut is lower, so MaxScore's test needs at least as many) and adds while the
        # test fails, rather than from the budget, which would read more than it needs.
        self._scored_by: dict[frozenset[str], tuple[np.ndarray, np.ndarray]] = {}
        self._least = 0
        terms: dict[str, _Term] = {}
        for term, idf in self.sequence:
            if term in terms:
                seen = terms[term]
                terms[term] = _Term(idf, seen.count + 1, seen.postings, seen.ceiling)
                continue
            postings, ceiling = [], 0.0
            for at, segment in enumerate(store.segments):
                col = segment.vocab.get(term)
                if col is not None:
                    start, end = segment.tf.indptr[col], segment.tf.indptr[col + 1]
                    postings.append((at, int(start), int(end)))
                    most, mean = segment.impact_ceilings
                    # A mean length above the segment's raises every score by at most its ratio.
                    ceiling = max(ceiling, most[col] * max(1.0, store.mean_length / mean))
            terms[term] = _Term(idf, 1, tuple(postings), min(1.0, ceiling * SAFETY))
        self.terms = terms

    def at(self, rows: np.ndarray, looked_up: Lookups | None = None) -> np.ndarray:
        """Return the BM25 scores (float32) of the chunks at ``rows``.

        ``looked_up``: each term's scores at these same rows, shared with another query of the
        same store that asks for them too (GNN-Ret's question and its expansion share words).
        """
        looked_up = {} if looked_up is None else looked_up
        total = np.zeros(len(rows), dtype=np.float64)
        for term, idf in self.sequence:
            if term not in looked_up:
                looked_up[term] = self._lookup(term, idf, rows)
            held, values = looked_up[term]
            total[held] += values
        return total.astype(np.float32)

    def top(self, depth: int) -> KeywordTop:
        """Return up to ``depth`` chunks that hold the best scores, and the ceiling of the rest.

        Terms with more postings than the budget are left out while the sum of their bounds
        stays within :data:`NEGLIGIBLE` of the best score; the chunks of the other terms are
        scored in full. The best score returned is the best of all.
        """
        order = sorted(self.terms, key=lambda t: (-self.terms[t].bound, self.terms[t].size))
        budget = POSTINGS_PER_DEPTH * depth
        essential = self._least  # after a first ask, the terms that served it (then add)
        if not essential:
            essential = len(order)
            while essential > 1 and self.terms[order[essential - 1]].size > budget:
                essential -= 1
        while True:
            read = frozenset(order[:essential])
            if read not in self._scored_by:
                self._scored_by[read] = self._scored(read)
            rows, scores = self._scored_by[read]
            left_out = sum(self.terms[t].bound for t in order[essential:])
            cut = 0.0  # the depth-th best score: no better chunk was cut
            if len(rows) > depth:
                keep = np.sort(np.argpartition(-scores, depth - 1)[:depth])
                cut = float(scores[keep].min())
                rows, scores = rows[keep], scores[keep]
            best = float(scores.max()) if len(scores) else 0.0
            # MaxScore's test (the left-out terms cannot lift a chunk past the cut), or bounds
            # too small to matter beside the best score.
            if essential == len(order) or left_out <= max(cut, NEGLIGIBLE * best):
                self._least = max(self._least, essential)
                return KeywordTop(rows, scores, max(cut, left_out))
            essential += 1

    def _scored(self, read: frozenset[str]) -> tuple[np.ndarray, np.ndarray]:
        """Return the chunks (ascending) holding any term in ``read``, and their full scores.

        Summed as :meth:`BM25Store.sparse_scores` sums: term by term in query order, float64.
        """
        # Each term's postings are read once (a repeated query word adds its scores again).
        for term in read:
            if term not in self._read:
                self._read[term] = self._postings(term, self.terms[term].idf)
        read_terms = [term for term in dict.fromkeys(t for t, _ in self.sequence) if term in read]
        held = [rows for term in read_terms for rows, _ in self._read[term]]
        if not held:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        rows, held_places = union_places(*held)
        placed, start = {}, 0  # each read term's postings' positions in ``rows``
        for term in read_terms:
            for at, (chunk_rows, values) in enumerate(self._read[term]):
                placed[term, at] = (held_places[start : start + len(chunk_rows)], values)
                start += len(chunk_rows)
        places, parts = [], []
        for term, idf in self.sequence:
            if term in read:
                for at in range(len(self._read[term])):
                    place, values = placed[term, at]
                    places.append(place)
                    parts.append(values)
            else:
                place, values = self._lookup(term, idf, rows)
                places.append(place)
                parts.append(values)
        weights = np.concatenate(parts).astype(np.float64)
        return rows, np.bincount(np.concatenate(places), weights, len(rows)).astype(np.float32)

    def _postings(self, term: str, idf: float) -> Postings:
        """Per segment, the live chunk rows holding ``term`` and its scores there."""
        out = []
        for at, start, end in self.terms[term].postings:
            segment, chunk_rows = self.store.segments[at], self.store.rows[at]
            local, tf = segment.tf.indices[start:end], segment.tf.data[start:end]
            mapped = chunk_rows[local]
            live = mapped >= 0
            if not live.all():  # rows a later generation removed
                mapped, local, tf = mapped[live], local[live], tf[live]
            values = impact(idf, tf, segment.lengths[local], self.store.mean_length)
            out.append((mapped, values))
        return out

    def _lookup(self, term: str, idf: float, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Return the positions in ``rows`` whose chunks hold ``term``, and its scores there."""
        segment_of, local_of = self.store.places
        segments, locals_ = segment_of[rows], local_of[rows]
        places, parts = [], []
        for at, start, end in self.terms[term].postings:
            segment = self.store.segments[at]
            mine, postings = np.flatnonzero(segments == at), segment.tf.indices[start:end]
            if not len(mine) or not len(postings):
                continue
            wanted = locals_[mine]
            place = np.minimum(np.searchsorted(postings, wanted), len(postings) - 1)
            hit = postings[place] == wanted
            tf, lengths = segment.tf.data[start:end][place[hit]], segment.lengths[wanted[hit]]
            places.append(mine[hit])
            parts.append(impact(idf, tf, lengths, self.store.mean_length))
        if not places:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        return np.concatenate(places), np.concatenate(parts)
