"""Dense search over the vector table without reading all of it: one home for a query's cosines.

The vector table's segments are memory-mapped (read-only, shared through the page cache by every
process that opens the index). A query's nearest chunks come from each segment's IVF
(graph_store/stores/ivf.py) where it has one, and from an exact scan where it has none (segments
under ``ivf.MIN_ROWS``: a scan is as fast there). Rows of deleted or replaced chunks are
skipped. Every returned score is an exact cosine, computed from the table.

Modes: ``auto`` uses the IVF files the index has; ``exact`` scans everything (the reference
ranking); ``ann`` also partitions, in memory, the segments that have no IVF file, whatever their
size (to measure the approximate search on small corpora: ``hopgraph eval --search ann``). A
missing or damaged IVF file is named on stderr once, and its segment is searched exactly: slower,
never wrong.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np

from hopgraph.core.arrays import sparse_at
from hopgraph.core.errors import IndexStateError
from hopgraph.core.file_reads import file_offset, release_pages, verify_rows
from hopgraph.core.id_lists import ChunkIds

from .ivf import IVF
from .manifest import Manifest, ann_hint, crc32
from .segments import live_rows
from .vector_table import VectorSegment, VectorTable

log = logging.getLogger(__name__)

SearchMode = Literal["auto", "exact", "ann"]
SEARCH_MODES: tuple[str, ...] = ("auto", "exact", "ann")
RESCORED = 32
"""Candidates beyond the n asked (at least; an eighth of n for large n) that the IVF proposes
and the table scores exactly: its 8-bit codes misorder near-ties."""
EXACT_BELOW = 20_000
"""Chunks up to which a search restricted to some chunks (a filter) scores them all exactly."""
GATHER_ROWS = 1 << 15
"""Rows a gather fetches at a time (48 MB of float32 MiniLM vectors)."""


@dataclass(frozen=True)
class SearchSegment:
    """One vector segment: its rows, the chunk row each holds (−1: dead), and its IVF if any."""

    vectors: np.ndarray
    chunk_rows: np.ndarray
    ivf: IVF | None
    _last: list = field(default_factory=list, compare=False, repr=False)
    """The last query's rescored candidates, [(query bytes, rows, cosines)]: a deeper search for
    the same query (GNN-Ret's next round) reads only the rows it adds from the table."""

    def top(self, query: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
        """Return this segment's ``n`` best live (chunk rows, cosines), ties included, unordered."""
        if self.ivf is None:
            verify_rows(self.vectors)
            scores = _dot(self.vectors, query)
            rows = np.arange(len(scores))
        else:  # the IVF proposes, the table scores: every cosine returned is exact
            rows = np.sort(self.ivf.candidates(query, n + max(n // 8, RESCORED)))
            scores = self._rescored(query, rows)
        chunk_rows = self.chunk_rows[rows]
        live = chunk_rows >= 0
        chunk_rows, scores = chunk_rows[live], scores[live]
        if len(scores) > n:  # ties at the n-th score stay: the caller breaks them by row
            cut = np.partition(scores, len(scores) - n)[len(scores) - n]
            keep = scores >= cut
            chunk_rows, scores = chunk_rows[keep], scores[keep]
        return chunk_rows, scores

    def _rescored(self, query: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Return the exact cosines at ``rows`` (ascending), reusing the last search's."""
        key = query.tobytes()
        last = (self._last[-1:] or [None])[0]  # one read: threads may replace it
        known, scores = (
            sparse_at(last[1], last[2], rows) if last is not None and last[0] == key
            else (np.zeros(len(rows), dtype=bool), np.zeros(len(rows), dtype=np.float32))
        )  # fmt: skip
        verify_rows(self.vectors, rows[~known])
        scores[~known] = _dot(self.vectors[rows[~known]], query)
        self._last[:] = [(key, rows, scores)]
        return scores

    def forget(self) -> None:
        """Drop what is kept of the last query's search (so a timing includes it)."""
        self._last.clear()
        if self.ivf is not None:
            self.ivf.forget()


class VectorSearch:
    """The cosines of a query to the index's chunks, by chunk row (the chunk table's order)."""

    def __init__(
        self, segments: Sequence[SearchSegment], chunks: int, complete: bool = True
    ) -> None:
        """Search ``segments`` over ``chunks`` chunk rows.

        Not ``complete``: the segments hold some of the rows (a shard's, cluster/shard.py), so
        no check that every row has a vector.
        """
        self.segments = list(segments)
        self.chunks = chunks
        self.segment_of = np.full(chunks, -1, dtype=np.int32)
        self.row_in = np.zeros(chunks, dtype=np.int64)
        for s, segment in enumerate(self.segments):
            live = np.flatnonzero(segment.chunk_rows >= 0)
            self.segment_of[segment.chunk_rows[live]] = s
            self.row_in[segment.chunk_rows[live]] = live
        if complete and chunks and self.segment_of.min() < 0:
            missing = int(np.flatnonzero(self.segment_of < 0)[0])
            raise IndexStateError(
                f"{int(np.sum(self.segment_of < 0))} chunks have no stored vector "
                f"(e.g. row {missing})",
                "the index is damaged: rebuild it with `hopgraph index SOURCE --force`",
            )

    def forget(self) -> None:
        """Drop what the segments keep of the last query's search."""
        for segment in self.segments:
            segment.forget()

    @classmethod
    def open(
        cls,
        directory: Path,
        manifest: Manifest,
        ids: Sequence[str],
        mode: SearchMode = "auto",
        keep: Collection[int] | None = None,
    ) -> VectorSearch:
        """Open the vector table the manifest names; ``mode``: see the module doc.

        ``keep``: open only these segments (by number; a shard's), the others left out.
        """
        if mode not in SEARCH_MODES:
            raise ValueError(f"search mode must be one of {SEARCH_MODES}, got {mode!r}")
        rows = ids if isinstance(ids, ChunkIds) else ChunkIds(ids)  # no dict of every id
        table = VectorTable.load(directory, manifest.vectors)
        # a later segment wins a repeated id (a replaced chunk)
        live, _ = live_rows(rows, [segment.ids for segment in table.segments])
        segments = []
        for s, (segment, chunk_rows) in enumerate(zip(table.segments, live, strict=True)):
            if keep is not None and s not in keep:
                continue
            ivf = None if mode == "exact" else _ivf(directory, manifest, segment, mode)
            segments.append(SearchSegment(segment.vectors, chunk_rows, ivf))
        return cls(segments, len(rows), complete=keep is None)

    @classmethod
    def of_matrix(cls, matrix: np.ndarray, mode: SearchMode = "auto") -> VectorSearch:
        """Search an in-memory matrix (rows in chunk order): an index from before the table."""
        ivf = IVF.build(matrix) if mode == "ann" and len(matrix) else None
        return cls([SearchSegment(matrix, np.arange(len(matrix)), ivf)], len(matrix))

    @property
    def approximate(self) -> bool:
        """Tell whether any segment is searched through an IVF."""
        return any(s.ivf is not None for s in self.segments)

    def top(
        self, query: np.ndarray, n: int, allowed: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Return up to ``n`` (chunk rows, cosines), best first (ties: lower row first).

        ``allowed``: chunk rows to rank among; up to :data:`EXACT_BELOW` of them are scored
        exactly, more are searched deeper until ``n`` of them are found.
        """
        query = np.asarray(query, dtype=np.float32)
        if allowed is not None and len(allowed) <= EXACT_BELOW:
            rows = np.unique(allowed)
            return best_rows(rows, self.scores(query, rows), n)
        depth = n
        while True:
            found = [s.top(query, depth) for s in self.segments]
            rows = np.concatenate([f[0] for f in found]) if found else np.zeros(0, np.int64)
            scores = np.concatenate([f[1] for f in found]) if found else np.zeros(0, np.float32)
            if allowed is None:
                return best_rows(rows, scores, n)
            keep = np.isin(rows, allowed)
            if keep.sum() >= n or depth >= self.chunks:
                return best_rows(rows[keep], scores[keep], n)
            depth *= 4

    def release_pages(self) -> None:
        """Let go of the table's memory-mapped pages read so far (the page cache keeps them).

        A mapped page read counts in the process's RSS until the mapping goes: a task that
        reads the whole table a part at a time (cluster/neighbours.py) would end up holding
        it all, 3 GB of a 3M-row table's 4.6 in a task of 1 GB of its own.
        """
        release_pages(*(segment.vectors for segment in self.segments))

    def scores(self, query: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Return the exact cosines of ``query`` to the chunks at ``rows``."""
        return self.matrix(rows) @ np.asarray(query, dtype=np.float32)

    def matrix(self, rows: np.ndarray) -> np.ndarray:
        """Return the vectors of the chunks at ``rows`` (float32, in that order)."""
        return self._gathered(rows, _mapped_rows)

    def read(self, rows: np.ndarray) -> np.ndarray:
        """Return what :meth:`matrix` does, read from the files without mapping their pages.

        For a task that reads rows all over the table (cluster/neighbours.py): every mapped page
        read counts in its RSS (the kernel maps the cached pages around each one faulted in),
        so scattered reads through the mapping end up holding the whole table, and letting go
        of it after each read means mapping it again for the next. A read here costs a system
        call per run of consecutive rows and leaves nothing behind.
        """
        return self._gathered(rows, _read_rows)

    def _gathered(
        self, rows: np.ndarray, fetch: Callable[[np.ndarray, np.ndarray], np.ndarray]
    ) -> np.ndarray:
        """Return the vectors at ``rows``, each segment's fetched by ``fetch(vectors, at)``."""
        rows = np.asarray(rows, dtype=np.int64)
        dim = self.segments[0].vectors.shape[1] if self.segments else 0
        out = np.empty((len(rows), dim), dtype=np.float32)
        where = self.segment_of[rows]
        for s, segment in enumerate(self.segments):
            everyone = np.flatnonzero(where == s)
            # by blocks: a fetch's own copies (its rows, then in the asked order) stay small
            # beside ``out``, where whole they were two more of it (a k-means sample at 10M
            # rows: 3.8 GB)
            for at in range(0, len(everyone), GATHER_ROWS):
                mine = everyone[at : at + GATHER_ROWS]
                verify_rows(segment.vectors, self.row_in[rows[mine]])
                out[mine] = fetch(segment.vectors, self.row_in[rows[mine]])
        return out

    def all_scores(self, query: np.ndarray) -> np.ndarray:
        """Return the exact cosine of ``query`` to every chunk, in chunk order (a full scan)."""
        query = np.asarray(query, dtype=np.float32)
        out = np.zeros(self.chunks, dtype=np.float32)
        for segment in self.segments:
            verify_rows(segment.vectors)
            scores = _dot(segment.vectors, query)
            live = segment.chunk_rows >= 0
            out[segment.chunk_rows[live]] = scores[live]
        return out


class Cosines:
    """One query's cosines to the chunks, computed for the rows asked and kept: never a scan.

    Indexed like the full array it stands for (``cosines[row]``, ``cosines[rows]``), for the
    methods that look up the chunks they reach (IIER's chains, ToG-2's entity chunks).
    """

    def __init__(self, search: VectorSearch, query: np.ndarray) -> None:
        self.search = search
        self.query = np.asarray(query, dtype=np.float32)
        self._known: dict[int, float] = {}

    def __getitem__(
        self, rows: int | np.integer | Sequence[int] | np.ndarray
    ) -> float | np.ndarray:
        if isinstance(rows, int | np.integer):
            return float(self._lookup([int(rows)])[0])
        return self._lookup(np.asarray(rows, dtype=np.int64).tolist())

    def top(self, n: int) -> np.ndarray:
        """Return the ``n`` nearest chunk rows, best first (ties: lower row first)."""
        rows, scores = self.search.top(self.query, n)
        self._known.update(zip(rows.tolist(), scores.tolist(), strict=True))
        return rows

    def _lookup(self, rows: list[int]) -> np.ndarray:
        missing = sorted({r for r in rows if r not in self._known})
        if missing:
            found = self.search.scores(self.query, np.array(missing, dtype=np.int64))
            self._known.update(zip(missing, found.tolist(), strict=True))
        return np.array([self._known[r] for r in rows], dtype=np.float32)


def _dot(vectors: np.ndarray, query: np.ndarray, block: int = 262_144) -> np.ndarray:
    """Return ``vectors @ query`` in float32 (float16 tables are widened block by block)."""
    if vectors.dtype == np.float32:
        return vectors @ query
    out = np.empty(len(vectors), dtype=np.float32)
    for start in range(0, len(vectors), block):
        out[start : start + block] = vectors[start : start + block].astype(np.float32) @ query
    return out


def best_rows(rows: np.ndarray, scores: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Return the ``n`` best (rows, scores), best first, ties by row."""
    order = np.lexsort((rows, -scores))[:n]
    return rows[order], scores[order]


def _ivf(directory: Path, manifest: Manifest, segment: VectorSegment, mode: str) -> IVF | None:
    """Return the segment's IVF: its file's (checked), or a new one in ``ann`` mode."""
    name = manifest.ann.get(segment.path)
    rows, dim = segment.vectors.shape
    if name is not None:
        path = directory / name
        try:
            if not path.is_file():
                raise IndexStateError(f"{path} is missing")
            if name in manifest.checksums and crc32(path) != manifest.checksums[name]:
                raise IndexStateError(f"{path} is damaged: its CRC-32 is not the one recorded")
            return IVF.load(path, rows, dim)
        except IndexStateError as err:
            message = f"hopgraph: {err.message}; searching its segment exactly. Fix: "
            print(message + ann_hint(directory), file=sys.stderr, flush=True)
            log.warning("%s", err.message)
    if mode == "ann" and rows:
        return IVF.build(np.asarray(segment.vectors, dtype=np.float32))
    return None


def _mapped_rows(vectors: np.ndarray, at: np.ndarray) -> np.ndarray:
    """Return ``vectors[at]`` (float32), read in file order (memory-mapped: forwards)."""
    order = np.argsort(at)
    out = np.empty((len(at), vectors.shape[1]), dtype=np.float32)
    out[order] = vectors[at[order]]
    return out


def _read_rows(vectors: np.ndarray, at: np.ndarray) -> np.ndarray:
    """Return ``vectors[at]`` (float32), by ``pread`` from its file when it is memory-mapped.

    Rows are read in file order, one call per run of consecutive rows, into place.
    """
    first, filename = file_offset(vectors), getattr(vectors, "filename", None)
    if first is None or filename is None or not vectors.flags.c_contiguous:
        return np.asarray(vectors[at], dtype=np.float32)
    unique, back = np.unique(at, return_inverse=True)
    held = np.empty((len(unique), vectors.shape[1]), dtype=vectors.dtype)
    width = vectors.strides[0]
    starts = np.flatnonzero(np.diff(unique, prepend=-2) != 1)  # where each run begins
    ends = np.append(starts[1:], len(unique))
    view = memoryview(held.reshape(-1).view(np.uint8))
    fd = os.open(filename, os.O_RDONLY)
    try:
        for a, b in zip(starts.tolist(), ends.tolist(), strict=True):
            _read_into(fd, view[a * width : b * width], first + int(unique[a]) * width, filename)
    finally:
        os.close(fd)
    return np.asarray(held[back.reshape(-1)], dtype=np.float32)


def _read_into(fd: int, buffer: memoryview, offset: int, filename: str) -> None:
    """Fill ``buffer`` from ``offset`` of the open file (a read may return less than asked)."""
    done = 0
    while done < len(buffer):
        got = os.preadv(fd, [buffer[done:]], offset + done)
        if got == 0:
            raise IndexStateError(
                f"{filename} is shorter than its header says",
                "the index is damaged: rebuild it with `hopgraph index SOURCE --force`",
            )
        done += got
