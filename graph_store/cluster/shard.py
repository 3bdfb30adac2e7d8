"""A shard: some of an index's segments, memory-mapped, answering a router's batched calls.

A partitioned build writes one vector segment and one BM25 segment per partition; a shard
holds a range of each (:func:`shard_ranges`) and answers, for the chunk rows its segments hold
(row numbers are the index's, so the router merges without translating): dense search's top,
the cosines and vectors of given rows, BM25's top with its ceiling and BM25 scores at given
rows. BM25 is scored with the whole index's statistics, so every score a shard returns is the
one the whole index gives; a chunk is live in exactly one segment, so the router's merge of
the shards' answers is the whole index's answer (router.py).

Plain Python: the router calls it in process (tests) or through Ray Serve (serve.py).
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from hopgraph.core.file_reads import expect
from hopgraph.graph_store.stores.bm25_query import KeywordTop, QueryScores
from hopgraph.graph_store.stores.chunk_table import ChunkTable
from hopgraph.graph_store.stores.kdb_bm25 import SEGMENTS_FILE, STATS_FILE, BM25Store, Segment
from hopgraph.graph_store.stores.manifest import Manifest, expected_sums, read_manifest
from hopgraph.graph_store.stores.vector_search import SearchMode, VectorSearch, best_rows

from .partitions import peak_rss_mb, rss_mb

KEPT_QUERIES = 64
"""Queries whose BM25 postings a shard keeps (GNN-Ret asks again, deeper, for the same text)."""


def shard_ranges(segments: int, shards: int) -> list[range]:
    """Cut ``segments`` segment numbers into ``shards`` contiguous ranges of about equal count."""
    return [range(i * segments // shards, (i + 1) * segments // shards) for i in range(shards)]


class Shard:
    """Shard ``number`` of ``shards`` of the index in ``directory`` (its committed generation)."""

    def __init__(
        self,
        directory: str,
        number: int,
        shards: int,
        ids: Sequence[str] | None,
        search: SearchMode,
        manifest: Manifest | None = None,
    ) -> None:
        """Open the shard of the generation ``manifest`` (default: the committed one).

        ``ids``: the index's chunk ids in row order (None: read from its chunk table here).
        """
        root = Path(directory)
        manifest = read_manifest(root) if manifest is None else manifest
        expect(expected_sums(root, manifest), root)  # what it reads is verified as it is read
        self.generation = manifest.generation
        if ids is None:  # held compactly (ChunkIds): a shard keeps them for its answers' rows
            ids = ChunkTable.open(manifest.path(root, "chunks")).ids
        vectors = shard_ranges(len(manifest.vectors), shards)[number]
        self.search = VectorSearch.open(root, manifest, ids, search, keep=set(vectors))
        self.keywords = _keywords(root, manifest.path(root, "bm25"), ids, number, shards)
        self._queries: OrderedDict[str, QueryScores] = OrderedDict()

    def dense_top(
        self, query: np.ndarray, n: int, allowed: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Return this shard's ``n`` best (chunk rows, cosines), best first, ties by row."""
        if allowed is not None:
            allowed = allowed[self.search.segment_of[allowed] >= 0]  # the rows held here
            if not len(allowed):
                return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        return self.search.top(query, n, allowed)

    def cosines(self, query: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Return the places in ``rows`` held here and the cosines of ``query`` there."""
        held = np.flatnonzero(self.search.segment_of[rows] >= 0)
        return held, self.search.scores(query, rows[held])

    def vectors(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Return the places in ``rows`` held here and their vectors (float32)."""
        held = np.flatnonzero(self.search.segment_of[rows] >= 0)
        return held, self.search.matrix(rows[held])

    def all_cosines(self, query: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Return every row held here and its cosine to ``query`` (a scan of the shard)."""
        scores = self.search.all_scores(query)
        held = np.flatnonzero(self.search.segment_of >= 0)
        return held, scores[held]

    def bm25_top(self, text: str, depth: int) -> KeywordTop:
        """Return BM25's top ``depth`` rows here and the ceiling of the others (bm25_query)."""
        return self._query(text).top(depth)

    def bm25_at(self, text: str, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Return the places in ``rows`` held here and their BM25 scores for ``text``."""
        segment_of, _ = self.keywords.places
        held = np.flatnonzero(segment_of[rows] >= 0)
        return held, self._query(text).at(rows[held])

    def bm25_best(self, text: str, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Return this shard's ``k`` best (rows, BM25 scores) with a positive score."""
        rows, scores = self.keywords.sparse_scores(text)
        return best_rows(rows, scores, k)

    def forget(self) -> None:
        """Drop what is kept of the last queries (so a timing includes computing them)."""
        self.search.forget()
        self._queries.clear()

    def facts(self) -> dict[str, float]:
        """Return this shard's generation, rows held, IVF use, resident and peak memory (MB)."""
        return {
            "generation": float(self.generation),
            "rows": float(np.sum(self.search.segment_of >= 0)),
            "approximate": float(self.search.approximate),
            "rss_mb": rss_mb(),
            "peak_rss_mb": peak_rss_mb(),
        }

    def _query(self, text: str) -> QueryScores:
        found = self._queries.pop(text, None) or QueryScores(self.keywords, text)
        self._queries[text] = found  # the newest last
        while len(self._queries) > KEPT_QUERIES:
            self._queries.popitem(last=False)
        return found


def _keywords(root: Path, folder: Path, ids: Sequence[str], number: int, shards: int) -> BM25Store:
    """Open this shard's range of the BM25 segments, with the whole index's statistics.

    Which segment holds a chunk live is worked out over all of them (a later segment holds a
    replaced chunk); the other shards' segments are then let go.
    """
    paths = json.loads((folder / SEGMENTS_FILE).read_text(encoding="utf-8"))
    stats = json.loads((folder / STATS_FILE).read_text(encoding="utf-8"))
    whole = BM25Store([Segment.load(root / p) for p in paths], paths, ids, stats)
    mine = shard_ranges(len(paths), shards)[number]
    return BM25Store(
        [whole.segments[s] for s in mine],
        [paths[s] for s in mine],
        ids,
        stats,
        [whole.rows[s] for s in mine],
    )
