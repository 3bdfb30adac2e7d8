"""When a write merges segments: one policy for the vector table and BM25 (size-tiered).

Both stores keep a segment per build partition and per write (stores/vector_table.py,
stores/kdb_bm25.py). Merging is what keeps a query's per-segment work bounded, but what a merge
rewrites is what it costs, and a cluster's build writes one segment per partition on purpose:
a shard serves a range of them (cluster/shard.py), and merging them would put the whole corpus
through one process at the first write. So, as Lucene's tiered merge policy does, a write merges
only small segments:

- a segment holding at least :data:`LARGE_SHARE` of the largest one's rows is **large** (a
  build's, a partition's, a merge that grew): a write leaves it alone, unless more than
  :data:`MAX_DEAD_SHARE` of its own rows are dead, when its live rows are rewritten;
- the others are **small** (writes'): once there are :data:`MAX_SEGMENTS` of them, the next write
  merges them into one.

An index built in one process (one large segment) merges as before: after every eighth write,
the writes' segments; a cluster's P partitions stay P segments, with at most
:data:`MAX_SEGMENTS` small ones beside them.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hopgraph.core.id_lists import ChunkIds

MAX_SEGMENTS = 8
"""Small segments that make the next write merge them."""
MAX_DEAD_SHARE = 0.25
"""Dead rows that make a segment's live rows rewritten (its share of its own rows)."""
LARGE_SHARE = 0.25
"""A segment with this share of the largest one's rows, or more, is never merged for its size."""


def to_merge(sizes: Sequence[int], dead: Sequence[int]) -> list[int]:
    """Return the segments (by number) a write merges into one; none: keep them as they are.

    ``sizes``: each segment's rows, ``dead``: how many of them are dead.
    """
    if not sizes:
        return []
    largest = max(sizes)
    small = [s for s, size in enumerate(sizes) if size < LARGE_SHARE * largest]
    worn = [s for s, size in enumerate(sizes) if dead[s] > MAX_DEAD_SHARE * size]
    if worn or len(small) >= MAX_SEGMENTS:
        return sorted({*small, *worn})
    return []


def live_rows(
    table: ChunkIds, segments: Sequence[Sequence[str]]
) -> tuple[list[np.ndarray], np.ndarray]:
    """Each segment row's row in ``table`` (the live chunks' ids, in chunk order), -1 if dead.

    A row is dead when its chunk was deleted since, or stored again later: in a later segment
    (a replaced chunk, deleted and added back under its id) or further down its own; only the
    newest row of a chunk counts. Also returns which of ``table``'s chunks some segment holds.
    Arrays throughout: no dict or set of every id (at 3M chunks those were a gigabyte).
    """
    held = np.zeros(len(table), dtype=bool)
    out = []
    for ids in reversed(segments):
        rows = table.rows_of(ids)
        found = np.flatnonzero(rows >= 0)[::-1]  # last rows first: np.unique keeps the first
        newest = found[np.unique(rows[found], return_index=True)[1]]
        newest = newest[~held[rows[newest]]]  # a later segment's row wins
        live = np.full(len(rows), -1, dtype=np.int64)
        live[newest] = rows[newest]
        held[rows[newest]] = True
        out.append(live)
    return out[::-1], held
