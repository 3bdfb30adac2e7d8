"""GNN-Ret computed locally: the same ranking as the full scan, from the chunks that can matter.

The full computation (tools/gnn_ret/retriever.py) gives every chunk its distance h⁰ and passes
messages from the K closest. Only a few chunks can change the answer: the K senders, the chunks they
send to, and the k closest by h⁰. So this computes h⁰ only for

1. candidates: dense search's top M (graph_store/stores/vector_search.py) and BM25's top M;
2. the neighbours of each layer's top-K senders, as they are reached;

and runs the same layer code (:func:`typed_layer`) on that small set. A chunk outside it keeps
its h⁰, which is at least ``bound`` = 1 − (w·d_M + (1 − w)·b_M), d_M and b_M the M-th dense
and BM25 scores: a chunk in neither top list scores no better on either. When each layer's K-th
distance and the final k-th are within the bound, no outside chunk could have been a sender or
a hit, and the ranking is the full scan's (up to ties at the bound, which the full scan breaks
arbitrarily too, and up to what the IVF search misses when the index has one). Otherwise M
grows and the ranking is first checked again, not recomputed (:func:`still_holds`): a chunk the
deeper lists add was reached by no sender, so it keeps its h⁰, and if that h⁰ and the deeper
bound are no smaller than each layer's K-th sender and the final k-th, no sender and no hit
changes. Only when that fails does it run again; at M = every chunk it is the full scan.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from hopgraph.core.arrays import sparse_at, union_rows, unique_rows
from hopgraph.core.csr import Csr, CsrLike, rows_edges

from .layers import smallest, typed_layer

Distances = Callable[[np.ndarray], np.ndarray]
"""h⁰ of the chunks at the given rows."""

FIRST_DEPTH = 512
"""The first M; it grows ×4 while the bound does not hold. An IVF search costs about the same
for 64 candidates as for 512 (the probed lists are read either way), and at a million synthetic
chunks 64 needed 2.7 rounds a query."""


@dataclass(frozen=True)
class Candidates:
    """Chunk rows to start from and the h⁰ every other chunk has at least."""

    rows: np.ndarray
    bound: float


@dataclass(frozen=True)
class LocalRanking:
    """The chunks reached, their final distances, senders (chunk rows, −1) and channels.

    ``worst_senders``: each layer's K-th smallest distance among the chunks it had (∞ when it
    had fewer than K): a chunk from outside enters no layer's senders while it is farther.
    """

    rows: np.ndarray
    h: np.ndarray
    sender: np.ndarray
    channel: np.ndarray
    worst_senders: tuple[float, ...] = ()

    def best(self, k: int) -> np.ndarray:
        """Return the positions (in ``rows``) of the ``k`` smallest distances, ties by row."""
        return smallest(self.h, k)


class KnownDistances:
    """h⁰ of the rows asked so far in one query: each row's is computed once.

    A deeper round asks again for the rows of the last (and :func:`still_holds` for the rows
    it then propagates over); at a million chunks that was half of a widened query's h⁰ work.
    """

    def __init__(self, h0_of: Distances) -> None:
        self._h0_of = h0_of
        self._rows = np.zeros(0, dtype=np.int64)
        self._h = np.zeros(0, dtype=np.float32)

    def __call__(self, rows: np.ndarray) -> np.ndarray:
        """Return h⁰ at ``rows`` (distinct), computing only the rows not asked before."""
        known, out = sparse_at(self._rows, self._h, rows)
        if not known.all():
            missing = rows[~known]
            out[~known] = fresh = self._h0_of(missing)
            merged = np.concatenate([self._rows, missing])
            order = np.argsort(merged, kind="stable")
            self._rows, self._h = merged[order], np.concatenate([self._h, fresh])[order]
        return out


def receivers(matrices: Sequence[CsrLike], senders: np.ndarray) -> np.ndarray:
    """Return every chunk a message from ``senders`` reaches over these edge matrices."""
    return unique_rows(rows_edges(matrices, senders)[1])


def local_adjacency(matrices: Sequence[CsrLike], senders: np.ndarray, rows: np.ndarray) -> Csr:
    """Return the edges from ``senders`` as a 0/1 matrix over positions in ``rows`` (sorted)."""
    source, target = rows_edges(matrices, senders)
    return Csr.binary(np.searchsorted(rows, source), np.searchsorted(rows, target), len(rows))


def propagate_local(
    h0_of: Distances,
    start: Candidates,
    channels: Sequence[tuple[Sequence[CsrLike], float]],
    top_k: int,
    layers: int,
    only_lower: bool,
) -> tuple[LocalRanking, bool]:
    """Run ``layers`` typed layers over the chunks that can matter.

    Returns the ranking and whether the bound held at every layer (then every sender was the
    full scan's).
    """
    rows = unique_rows(start.rows)
    h = h0_of(rows)  # float32, as the full scan's h⁰: its first layer blends in float32
    sender = np.full(len(rows), -1, dtype=np.int64)
    channel = np.full(len(rows), -1, dtype=np.int64)
    worst: list[float] = []
    for _ in range(layers):
        top = rows[smallest(h, top_k)]
        worst.append(float(np.max(_at(h, rows, top))) if len(top) == top_k else np.inf)
        reached = union_rows(rows, *[receivers(m, top) for m, _ in channels])
        if len(reached) > len(rows):
            h, sender, channel = _grown(h0_of, rows, reached, h, sender, channel)
            rows = reached
        local = [(local_adjacency(m, top, rows), alpha) for m, alpha in channels]
        layer, used = typed_layer(h, local, top_k, only_lower)
        moved = layer.sender >= 0
        sender = np.where(moved, rows[np.maximum(layer.sender, 0)], sender)
        channel = np.where(moved, used, channel)
        h = layer.h
    exact = start.bound == np.inf or all(w <= start.bound for w in worst)
    return LocalRanking(rows, h, sender, channel, tuple(worst)), exact


def still_holds(
    found: LocalRanking, k: int, wanted: int, start: Candidates, h0_of: Distances
) -> bool:
    """Whether ``found`` is also the ranking from the deeper candidates ``start``.

    A chunk of ``start`` that ``found`` lacks received no message (every receiver was reached),
    so its distance stays its h⁰; with every other chunk at least ``start.bound``, none of them
    enters a layer's senders or the top ``k`` if both stay at or above each layer's K-th sender
    and the k-th hit (``wanted``: how many hits there must be, fewer when the index is small).
    """
    new = np.setdiff1d(start.rows, found.rows, assume_unique=True)
    floor = start.bound
    if len(new):
        floor = min(floor, float(h0_of(new).min()))
    best = found.best(k)
    if len(best) != wanted or found.h[best].max() > floor:
        return False
    return all(w <= floor for w in found.worst_senders)


def _at(h: np.ndarray, rows: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    return h[np.searchsorted(rows, wanted)]


def _grown(
    h0_of: Distances,
    rows: np.ndarray,
    reached: np.ndarray,
    h: np.ndarray,
    sender: np.ndarray,
    channel: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Spread the arrays over ``reached`` (a sorted superset of ``rows``); new chunks get h⁰."""
    old = np.searchsorted(reached, rows)
    new = np.setdiff1d(reached, rows, assume_unique=True)
    grown_h = np.empty(len(reached), dtype=h.dtype)
    grown_h[old] = h
    grown_h[np.searchsorted(reached, new)] = h0_of(new)
    grown_sender = np.full(len(reached), -1, dtype=np.int64)
    grown_sender[old] = sender
    grown_channel = np.full(len(reached), -1, dtype=np.int64)
    grown_channel[old] = channel
    return grown_h, grown_sender, grown_channel
