"""The passage graph's edges, made by tasks on a cluster from the parts a graph build read.

The readings' tasks (cluster/readings.py) leave each part's extractions in the new graph folder
(:data:`EXTRACTION_PARTS`, with the rows each part holds); the neighbour lists are saved there
too. Tasks then make the edges in three steps (graph_store/graphs/edge_parts.py): each part's
items into buckets by hash, each bucket's pairs into the parts of rows, each part's CSR rows;
the driver writes each type's file a part at a time, so it holds neither the extractions nor
an edge list. The graph equals one process's (tests/unit/graph_store/cluster/test_cluster_edges.py).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from hopgraph.graph_store.graphs.edge_parts import (
    RowsIn,
    edge_counts,
    emit,
    group,
    rows,
    stitch,
)
from hopgraph.graph_store.graphs.extraction.table import ExtractionTable
from hopgraph.graph_store.graphs.passage_graph import PassageGraphSettings
from hopgraph.graph_store.graphs.semantic import Neighbours
from hopgraph.graph_store.index.graph_build import (
    EXTRACTION_PARTS,
    NEIGHBOURS_FILE,
    EdgeBuild,
)
from hopgraph.graph_store.stores.manifest import Manifest

from .readings import Source, chunk_rows, extracted
from .tasks import Map, Peaks, in_process, ray_map

SCRATCH = "edge-parts"
"""The folder in the new graph folder where the steps pass their files (removed after)."""


def edges_on(ray: ModuleType, peaks: Peaks | None = None) -> EdgeBuild:
    """Return how a graph build makes its passage graph's edges on the joined cluster.

    ``peaks``: each kind of task's largest peak RSS (MB) goes there (tasks.ray_map).
    """
    run = ray_map(ray, peaks)

    def build(
        directory: Path, manifest: Manifest, target: Path, settings: PassageGraphSettings
    ) -> dict[str, Any]:
        return build_edges((str(directory), manifest.model_dump_json()), target, settings, run)

    return build


def build_edges(
    source: Source, target: Path, settings: PassageGraphSettings, run: Map = in_process
) -> dict[str, Any]:
    """Write the passage graph's edge files into ``target``; return its counts.

    ``target`` holds the readings' parts (:data:`EXTRACTION_PARTS`, removed here) and the
    neighbour lists.
    """
    parts = [(name, start, stop) for name, start, stop in _listed(target)]
    n = parts[-1][2] if parts else 0
    bounds = np.array([start for _, start, _ in parts] + [n], dtype=np.int64)
    scratch = target / SCRATCH
    scratch.mkdir()
    where = (str(target), str(scratch))
    names = [name for name, _, _ in parts]
    run(emit_rows, [(source, where, part, bounds, len(parts), settings) for part in parts])
    run(group_bucket, [(b, names, bounds, str(scratch), settings) for b in range(len(parts))])
    found = run(
        part_rows,
        [(p, start, stop, n, str(scratch), settings) for p, (_, start, stop) in enumerate(parts)],
    )
    stitch(scratch, len(parts), n, target)
    scratch.rmdir()
    shutil.rmtree(target / EXTRACTION_PARTS)
    return edge_counts([nnz for nnz, _ in found], sum(degree for _, degree in found), n)


def _listed(target: Path) -> list[tuple[str, int, int]]:
    """Return the readings' parts: (name, first row, row after the last), in row order."""
    listed = json.loads((target / EXTRACTION_PARTS / "parts.json").read_text(encoding="utf-8"))
    return [(name, int(start), int(stop)) for name, start, stop in listed]


def emit_rows(
    source: Source,
    where: tuple[str, str],
    part: tuple[str, int, int],
    bounds: np.ndarray,
    buckets: int,
    settings: PassageGraphSettings,
) -> None:
    """Write one part's items into the buckets (a task); see edge_parts.emit."""
    target, scratch = (Path(p) for p in where)
    name, start, stop = part
    table = ExtractionTable.load(target / EXTRACTION_PARTS / extracted(name))
    chunks = chunk_rows(source, start, stop, texts=False)
    lists = Neighbours.load(target / NEIGHBOURS_FILE)
    rows_in = RowsIn(
        start,
        table,
        [c.doc_id for c in chunks],
        np.fromiter((c.position for c in chunks), dtype=np.int64, count=len(chunks)),
        [c.title for c in chunks],
        Neighbours(lists.rows[start:stop], lists.scores[start:stop]),
    )
    emit(rows_in, name, bounds, buckets, scratch, settings)


def group_bucket(
    bucket: int, names: list[str], bounds: np.ndarray, scratch: str, settings: PassageGraphSettings
) -> None:
    """Make one bucket's pairs (a task); see edge_parts.group."""
    group(bucket, names, bounds, Path(scratch), settings)


def part_rows(
    part: int, start: int, stop: int, n: int, scratch: str, settings: PassageGraphSettings
) -> tuple[dict[str, int], int]:
    """Sum one part of rows' pairs into CSR rows (a task); see edge_parts.rows."""
    return rows(part, start, stop, n, Path(scratch), settings)
