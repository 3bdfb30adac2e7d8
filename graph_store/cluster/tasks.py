"""Calls of one function run as tasks on a cluster, or here: what a graph build hands out.

A graph build's tasks (cluster/neighbours.py, cluster/readings.py) are written against
:data:`Map` (core/threads.py), so a test runs the same calls in this process
(:func:`in_process`) and compares.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np

from hopgraph.core.file_reads import BlockSums, expect, registered
from hopgraph.core.threads import Map

from .connect import RETRIES, failed
from .partitions import peak_rss_mb, release_heap, reset_peak_rss

Peaks = dict[str, float]
"""The largest peak RSS (MB) of a task, by the name of the function it ran."""
SHARED_FROM = 1 << 20
"""An argument this large (bytes of an array) that several calls read goes to the object store
once, not once a call."""


def ray_map(ray: ModuleType, peaks: Peaks | None = None) -> Map:
    """Return a :data:`Map` running each call as a task (retried) on the joined cluster.

    ``peaks``: each task's own peak RSS goes there (a worker runs many tasks; its peak is
    started afresh for each). A task that fails is the write's failure (connect.failed says
    whose). A task verifies what it reads of the index as this process would: it is sent what
    this process expects of those files (the generation the write reads, core.file_reads).
    """

    def run(function: Callable[..., Any], calls: list[tuple]) -> list[Any]:
        task = ray.remote(max_retries=RETRIES)(_measured)
        expected = ray.put(registered())
        shared: dict[int, Any] = {}
        for call in calls:
            for arg in call:
                # not setdefault(id, ray.put(arg)): that puts it again for every call (the
                # IVF centroids, 4 bytes a passage, were written once a task)
                if _large(arg) and id(arg) not in shared:
                    shared[id(arg)] = ray.put(arg)
        sent = [[shared.get(id(arg), arg) for arg in call] for call in calls]
        try:
            found = ray.get([task.remote(function, expected, *call) for call in sent])
        except ray.exceptions.RayError as err:
            raise failed(ray, err) from err
        if peaks is not None and found:
            name = function.__name__
            peaks[name] = max(peaks.get(name, 0.0), *(peak for _, peak in found))
        return [result for result, _ in found]

    return run


TASK_ROWS = 1 << 17
"""Rows a task of a step takes at most: a step over more rows is cut into more calls than asked,
so that what a task holds of its share stays what it is at a million rows in 8 tasks, however
large the corpus (a task's own peak then grows only with what it holds of the whole corpus)."""


def task_count(ray: ModuleType, partitions: int | None, rows: int) -> int:
    """Return the calls a step over ``rows`` rows is cut into (default: the cluster's CPUs).

    At least one, at most one per row, and enough that none takes over :data:`TASK_ROWS`.
    """
    asked = partitions or int(ray.cluster_resources().get("CPU", 1))
    return max(1, min(max(asked, -(-rows // TASK_ROWS)), rows))


def _large(arg: Any) -> bool:
    """Tell whether an argument is worth one copy in the object store for every call."""
    if isinstance(arg, np.ndarray):
        return arg.nbytes > SHARED_FROM
    return getattr(arg, "shared", False) is True


def _measured(
    function: Callable[..., Any], expected: list[BlockSums], *args: Any
) -> tuple[Any, float]:
    """Run a call in a task; return its result and the task's own peak RSS (MB).

    ``expected``: what the files it reads must hash to, verified here as they are read.
    """
    expect(expected)
    release_heap()  # what the worker's earlier tasks freed: not this task's peak
    reset_peak_rss()
    result = function(*args)
    peak = peak_rss_mb()
    release_heap()  # nor held by an idle worker
    return result, peak
