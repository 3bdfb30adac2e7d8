"""GNN-Ret's message passing (spec gnn_ret §3, Eqs. 3–4): the layer arithmetic on arrays.

Shared by the full scan over every chunk (tools/gnn_ret/retriever.py) and the local computation over
the chunks that can matter (tools/gnn_ret/local.py); tools/gnn_ret/retriever.py documents the
method.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from hopgraph.core.csr import CsrLike, row_edges


@dataclass(frozen=True)
class Layer:
    """One layer's result: new distances, and for each chunk the chunk whose message it took."""

    h: np.ndarray
    sender: np.ndarray  # -1 where no message was received


def min_messages(h: np.ndarray, adjacency: CsrLike, top_k: int) -> tuple[np.ndarray, np.ndarray]:
    """Eq. 3: the chunks that hear from the top-K, and for each its lowest-distance sender.

    Row j of ``adjacency`` lists where a message from chunk j goes; ties go to the sender
    listed first.
    """
    n = len(h)
    k = min(top_k, n)
    top = np.argpartition(h, k - 1)[:k] if k < n else np.arange(n)
    senders, receivers = row_edges(adjacency, top)
    if len(receivers) == 0:
        return receivers, senders
    order = np.lexsort((senders, h[senders], receivers))
    first = np.unique(receivers[order], return_index=True)[1]
    return receivers[order][first], senders[order][first]


def gnn_layer(
    h: np.ndarray, adjacency: CsrLike, alpha: float, top_k: int, only_lower: bool = False
) -> Layer:
    """Apply Eqs. 3–4 once: min-message from the top-K chunks, blended with weight α.

    ``only_lower`` keeps a chunk's distance when its message would raise it (spec §3.2 option b;
    the paper applies Eq. 4 literally, the default).
    """
    new_h, sender = h.astype(np.float64).copy(), np.full(len(h), -1)
    who, best = min_messages(h, adjacency, top_k)
    if len(who) == 0:
        return Layer(new_h, sender)
    blended = alpha * h[who] + (1 - alpha) * h[best]  # Eq. 4
    keep = blended < h[who] if only_lower else np.ones(len(who), dtype=bool)
    new_h[who[keep]], sender[who[keep]] = blended[keep], best[keep]
    return Layer(new_h, sender)


def typed_layer(
    h: np.ndarray,
    channels: Sequence[tuple[CsrLike, float]],
    top_k: int,
    only_lower: bool = False,
) -> tuple[Layer, np.ndarray]:
    """Run :func:`gnn_layer` per (adjacency, α) channel; each chunk keeps the lowest result.

    Returns the combined layer and, per chunk, the channel whose message it took (−1: none).
    """
    layers = [gnn_layer(h, adjacency, alpha, top_k, only_lower) for adjacency, alpha in channels]
    stacked = np.stack([layer.h for layer in layers])
    best = np.argmin(stacked, axis=0)  # ties: the first channel listed
    rows = np.arange(len(h))
    sender = np.stack([layer.sender for layer in layers])[best, rows]
    channel = np.where(sender >= 0, best, -1)
    return Layer(stacked[best, rows], sender), channel


def propagate(
    h0: np.ndarray,
    channels: Sequence[tuple[CsrLike, float]],
    top_k: int,
    layers: int = 1,
    only_lower: bool = False,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Run ``layers`` typed layers.

    Returns the final distances, each chunk's last sender and the channel that carried its
    message (−1 where none did).
    """
    n = len(h0)
    h, sender, channel = h0, np.full(n, -1), np.full(n, -1)
    for _ in range(layers):
        layer, used = typed_layer(h, channels, top_k, only_lower)
        moved = layer.sender >= 0
        sender, channel = np.where(moved, layer.sender, sender), np.where(moved, used, channel)
        h = layer.h
    return h, sender, channel


def smallest(values: np.ndarray, k: int) -> np.ndarray:
    """Return the rows of the ``k`` smallest values, ties by row: a stable argsort's first k.

    Selects before sorting: a full sort per query cost a fifth of a query at 200k chunks.
    """
    if k >= len(values):
        return np.argsort(values, kind="stable")
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    cut = np.partition(values, k - 1)[k - 1]
    rows = np.flatnonzero(values <= cut)  # every tie at the edge, so rows break them
    return rows[np.argsort(values[rows], kind="stable")][:k]
