"""The router: an :class:`Index` whose vectors and postings are on shards, for every method.

``ShardedIndex`` is the index the retrievers and agents already use, with two parts swapped:
dense search (:class:`ShardedVectorSearch`, in place of ``Index.vector_search``) and BM25
(:class:`ShardedKeywords` and :class:`ShardedQueryScores`, in place of ``Index.keywords`` and
``Index.query_scores``). Each of their calls is one round: the same call sent to every shard at
once (:class:`Shards`), the answers merged here. The merges are exact:

- a top-``n`` (dense, BM25's ``query``) is the best ``n`` of the shards' own best ``n``, ties
  broken by row as one index breaks them;
- BM25's MaxScore top (GNN-Ret's candidates) is the shards' tops cut to ``depth``, with the
  highest of their ceilings and the cut as the ceiling: no chunk left out scores above it;
- scores and vectors at given rows come from the shard holding each row.

So GNN-Ret stays exact and its rounds stay bounded: one scatter per list it reads (its first
depth, a deeper one only when its certificate asks) and one per batch of rows it scores. The
passage graph and the extractions stay on the router, as one index's: the graph's files are
mapped for whole-graph arithmetic, and a query's rows are read from them (core.csr.FileRows),
so only what it read is the router's; the chunk table is read as one process reads it, a chunk
parsed from the file when a method asks for it (stores.chunk_table.ChunkTable).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import cached_property
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from hopgraph.core.errors import IndexStateError
from hopgraph.graph_store.documents.schema import Chunk
from hopgraph.graph_store.index.reader import Index
from hopgraph.graph_store.stores.base import Scored
from hopgraph.graph_store.stores.bm25_query import KeywordTop, Lookups
from hopgraph.graph_store.stores.chunk_table import ChunkTable
from hopgraph.graph_store.stores.manifest import Manifest
from hopgraph.graph_store.stores.vector_search import SearchMode, best_rows


class Shards(Protocol):
    """The shards of one index, called all at once."""

    def scatter(self, method: str, *args: Any) -> list[Any]:
        """Call ``method(*args)`` on every shard at once; return their answers in shard order."""
        ...

    def close(self) -> None:
        """Let the shards go (a served generation's: stop serving it)."""
        ...


class Counted:
    """Shards with a count of the rounds (scatters) and of the bytes their answers moved."""

    def __init__(self, shards: Shards) -> None:
        self.shards = shards
        self.rounds = 0
        self.bytes = 0
        self.calls: Counter[str] = Counter()
        self._lock = threading.Lock()

    def scatter(self, method: str, *args: Any) -> list[Any]:
        """Call every shard (see :class:`Shards`), counting the round and the bytes."""
        answers = self.shards.scatter(method, *args)
        moved = sum(_nbytes(a) for a in args) * len(answers) + sum(map(_nbytes, answers))
        with self._lock:
            self.rounds += 1
            self.bytes += moved
            self.calls[method] += 1
        return answers

    def close(self) -> None:
        """Let the shards go."""
        self.shards.close()


class LocalShards:
    """Shards in this process, called side by side on threads (tests; one machine)."""

    def __init__(self, shards: Sequence[Any]) -> None:
        self.shards = list(shards)
        self._pool = ThreadPoolExecutor(max_workers=max(1, len(self.shards)))

    def scatter(self, method: str, *args: Any) -> list[Any]:
        """Call ``method`` on every shard at once (see :class:`Shards`)."""
        calls: list[Callable[..., Any]] = [getattr(s, method) for s in self.shards]
        return [f.result() for f in [self._pool.submit(call, *args) for call in calls]]

    def close(self) -> None:
        """Stop the threads."""
        self._pool.shutdown()


class ShardedVectorSearch:
    """Dense search over the shards: ``VectorSearch``'s interface, each call one round."""

    def __init__(self, shards: Shards, chunks: int, approximate: bool) -> None:
        self.shards, self.chunks, self.approximate = shards, chunks, approximate

    def top(
        self, query: np.ndarray, n: int, allowed: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Return up to ``n`` (chunk rows, cosines), best first (ties: lower row first)."""
        query = np.asarray(query, dtype=np.float32)
        found = self.shards.scatter("dense_top", query, n, allowed)
        return best_rows(*_joined(found), n)

    def scores(self, query: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Return the exact cosines of ``query`` to the chunks at ``rows``."""
        rows = np.asarray(rows, dtype=np.int64)
        out = np.zeros(len(rows), dtype=np.float32)
        for held, scores in self.shards.scatter("cosines", np.asarray(query, np.float32), rows):
            out[held] = scores
        return out

    def matrix(self, rows: np.ndarray) -> np.ndarray:
        """Return the vectors of the chunks at ``rows`` (float32, in that order)."""
        rows = np.asarray(rows, dtype=np.int64)
        found = self.shards.scatter("vectors", rows)
        dim = next((v.shape[1] for _, v in found if v.ndim == 2), 0)
        out = np.zeros((len(rows), dim), dtype=np.float32)
        for held, vectors in found:
            out[held] = vectors
        return out

    def all_scores(self, query: np.ndarray) -> np.ndarray:
        """Return the exact cosine of ``query`` to every chunk, in chunk order."""
        out = np.zeros(self.chunks, dtype=np.float32)
        for held, scores in self.shards.scatter("all_cosines", np.asarray(query, np.float32)):
            out[held] = scores
        return out

    def forget(self) -> None:
        """Drop what the shards keep of the last queries."""
        self.shards.scatter("forget")


class ShardedKeywords:
    """BM25 over the shards, for what reads ``Index.keywords``: its ids, ``query``, ``scores``."""

    def __init__(self, shards: Shards, ids: list[str]) -> None:
        self.shards, self.ids = shards, ids

    def query(self, text: str, k: int) -> Scored:
        """Return up to ``k`` (id, score) pairs with a positive score, best first."""
        rows, scores = best_rows(*_joined(self.shards.scatter("bm25_best", text, k)), k)
        return [
            (self.ids[r], float(s)) for r, s in zip(rows.tolist(), scores.tolist(), strict=True)
        ]

    def scores(self, text: str) -> np.ndarray:
        """Return the BM25 score of every chunk for ``text`` (a full scan: GNN-Ret's reference)."""
        out = np.zeros(len(self.ids), dtype=np.float32)
        rows, scores = _joined(self.shards.scatter("bm25_best", text, len(self.ids)))
        out[rows] = scores
        return out


class ShardedQueryScores:
    """One query's BM25 scores over the shards: ``QueryScores``' interface, each call a round."""

    def __init__(self, shards: Shards, text: str) -> None:
        self.shards, self.text = shards, text

    def extended(self, more: str) -> ShardedQueryScores:
        """Return the query of ``text + " " + more`` (the shards keep what they read)."""
        return ShardedQueryScores(self.shards, f"{self.text} {more}")

    def top(self, depth: int) -> KeywordTop:
        """Return up to ``depth`` rows (ascending) holding the best scores, and a ceiling."""
        found: list[KeywordTop] = self.shards.scatter("bm25_top", self.text, depth)
        rows, scores = _joined([(t.rows, t.scores) for t in found])
        ceiling = max((t.ceiling for t in found), default=0.0)
        if len(rows) > depth:
            keep = np.sort(np.argpartition(-scores, depth - 1)[:depth])
            ceiling = max(ceiling, float(scores[keep].min()))
            rows, scores = rows[keep], scores[keep]
        order = np.argsort(rows)
        return KeywordTop(rows[order], scores[order], ceiling)

    def at(self, rows: np.ndarray, looked_up: Lookups | None = None) -> np.ndarray:
        """Return the BM25 scores (float32) of the chunks at ``rows``.

        ``looked_up`` (term scores another text read at these rows) is not shared across
        shards: each shard keeps the postings its queries read.
        """
        rows = np.asarray(rows, dtype=np.int64)
        out = np.zeros(len(rows), dtype=np.float32)
        for held, scores in self.shards.scatter("bm25_at", self.text, rows):
            out[held] = scores
        return out


class ShardedIndex(Index):
    """An index whose dense search and BM25 run on shards (see the module doc)."""

    def __init__(
        self,
        directory: Path,
        manifest: Manifest,
        chunks: Sequence[Chunk] | ChunkTable,
        shards: Shards,
        search: SearchMode = "auto",
        approximate: bool = False,
    ) -> None:
        self.shards = Counted(shards)
        self._approximate = approximate
        super().__init__(directory, manifest, chunks, search)

    @classmethod
    def open_on(
        cls,
        directory: str | Path,
        shards_for: Callable[[Manifest, list[str]], Shards],
        search: SearchMode = "auto",
    ) -> ShardedIndex:
        """Open the index in ``directory`` with the shards ``shards_for(manifest, ids)`` gives.

        They serve the committed generation (``manifest``, chunk ``ids`` in row order); the
        router checks that they do.
        """
        directory = Path(directory)
        manifest, chunks = cls.read_checked(directory)
        shards = shards_for(manifest, chunks.ids)
        facts = shards.scatter("facts")
        if any(f["generation"] != manifest.generation for f in facts):
            shards.close()
            raise IndexStateError(
                f"the shards serve another generation of {directory} than its manifest names",
                "start the shards again on the index as it is now",
            )
        approximate = any(f["approximate"] for f in facts)
        return cls(directory, manifest, chunks, shards, search, approximate)

    def close(self) -> None:
        """Close the index and let its shards go."""
        super().close()
        self.shards.close()

    def _open_keywords(self, chunks: Mapping[str, Chunk]) -> ShardedKeywords:  # type: ignore[override]
        return ShardedKeywords(self.shards, self.ids)

    @cached_property
    def vector_search(self) -> ShardedVectorSearch:  # type: ignore[override]
        """Dense search on the shards."""
        return ShardedVectorSearch(self.shards, len(self.chunks), self._approximate)

    def query_scores(self, text: str) -> ShardedQueryScores:  # type: ignore[override]
        """BM25 scores of query ``text`` on the shards."""
        return ShardedQueryScores(self.shards, text)


def _joined(found: Sequence[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """Concatenate the shards' (rows, scores) answers."""
    if not found:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
    rows = np.concatenate([np.asarray(r, dtype=np.int64) for r, _ in found])
    return rows, np.concatenate([np.asarray(s, dtype=np.float32) for _, s in found])


def _nbytes(value: Any) -> int:
    """Return about how many bytes a call's argument or answer moves."""
    if isinstance(value, np.ndarray):
        return int(value.nbytes)
    if isinstance(value, KeywordTop):
        return int(value.rows.nbytes + value.scores.nbytes + 8)
    if isinstance(value, tuple | list):
        return sum(_nbytes(v) for v in value)
    if isinstance(value, str):
        return len(value.encode("utf-8"))
    return 8
