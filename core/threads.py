"""Work a query runs beside its own on another core: one small thread pool per process.

GNN-Ret's hybrid base reads BM25's postings while the dense search runs
(tools/gnn_ret/retriever.py): faiss, the BLAS product that rescores its candidates and numpy's sorts
release the GIL, so the two halves cost the slower of them, not their sum (at a million synthetic
chunks, BM25's top takes 1.1 ms, p95 2.7, beside a dense search of 2.5, and GNN-Ret's p95 went from
9.2 to 7.9 ms, timed against reading them one after the other in one process, alternating per
query). The pool is made on first use and again in a forked child (a child inherits the pool's
object but none of its threads).

A write hands its heavy calls to a cluster's tasks through a :data:`Map` (graph_store/cluster/
tasks.py makes one of Ray); :func:`in_process` runs the same calls here, one after the other.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")

Map = Callable[[Callable[..., Any], list[tuple]], list[Any]]
"""Runs calls of one function and returns their results in order: here, or as tasks."""


def in_process(function: Callable[..., Any], calls: list[tuple]) -> list[Any]:
    """Run the calls here, one after the other."""
    return [function(*call) for call in calls]


WORKERS = 4
"""Threads in the pool: a few queries' side work at once (servers answer several queries)."""

_pool: ThreadPoolExecutor | None = None
_lock = threading.Lock()


def beside(work: Callable[..., T], *args: object) -> Future[T]:
    """Start ``work(*args)`` in the process's pool; its future gives the result (or raises)."""
    global _pool
    with _lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(WORKERS, thread_name_prefix="hopgraph-beside")
        pool = _pool
    return pool.submit(work, *args)


def _forked() -> None:
    global _pool, _lock
    _pool, _lock = None, threading.Lock()


os.register_at_fork(after_in_child=_forked)
