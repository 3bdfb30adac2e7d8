"""Both graphs, made by tasks on a cluster from the parts a graph build's reading left.

The readings' tasks (cluster/readings.py) leave each part's extractions in the new graph folder
(``EXTRACTION_PARTS``, with the rows each part holds), where they stay: the index reads them
joined (table.load_extractions). The neighbour lists are saved there too. Tasks then make:

- the passage graph's edges in three steps (graph_store/graphs/edge_parts.py): each part's
  items into buckets by hash, each bucket's pairs into the parts of rows, each part's CSR rows;
- the knowledge graph in two (graph_store/graphs/kg_parts.py): each part's triples and sorted
  entities, then, once the driver has merged the entities, each part's incidence rows.

The driver writes each file a part at a time, so it holds neither the extractions nor an edge
list nor the triples. The graphs equal one process's
(tests/unit/graph_store/cluster/test_cluster_graph_parts.py).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from hopgraph.core.threads import Map, in_process
from hopgraph.graph_store.graphs.edge_parts import (
    RowsIn,
    edge_counts,
    emit,
    group,
    stitch,
    sum_rows,
)
from hopgraph.graph_store.graphs.extraction.table import (
    EXTRACTION_PARTS,
    ExtractionTable,
    extraction_parts,
)
from hopgraph.graph_store.graphs.kg_parts import (
    merge_entities,
    part_incidence,
    part_triples,
    stitch_graph,
)
from hopgraph.graph_store.graphs.passage_graph import PassageGraphSettings
from hopgraph.graph_store.graphs.semantic import NEIGHBOURS_FILE, Neighbours
from hopgraph.graph_store.index.graph_build import PartsBuild
from hopgraph.graph_store.stores.manifest import Manifest

from .readings import Source, chunk_rows
from .tasks import Peaks, ray_map

SCRATCH = "graph-parts"
"""The folder in the new graph folder where the steps pass their files (removed after)."""
Part = tuple[str, int, int]
"""A part of the extractions: its file, its first row, the row after its last."""


def graphs_on(ray: ModuleType, peaks: Peaks | None = None) -> PartsBuild:
    """Return how a graph build makes both graphs from its reading's parts on the cluster.

    ``peaks``: each kind of task's largest peak RSS (MB) goes there (tasks.ray_map).
    """
    run = ray_map(ray, peaks)

    def build(
        directory: Path, manifest: Manifest, target: Path, settings: PassageGraphSettings
    ) -> tuple[dict[str, Any], int, int]:
        source = (str(directory), manifest.model_dump_json())
        return build_graphs_in_parts(source, target, settings, run)

    return build


def build_graphs_in_parts(
    rows: Source, target: Path, settings: PassageGraphSettings, run: Map = in_process
) -> tuple[dict[str, Any], int, int]:
    """Write both graphs' files into ``target`` (``nodes.json`` aside) from its parts.

    ``rows``: the chunk table the tasks read their rows' documents, places and titles from
    (a write's once written: the driver holds none of them). Returns the passage graph's
    counts and the knowledge graph's entities and triples.
    """
    parts = extraction_parts(target)
    scratch = target / SCRATCH
    scratch.mkdir()
    counts = build_edges(rows, target, parts, settings, run)
    entities, triples = build_knowledge(target, parts, run)
    shutil.rmtree(scratch)  # every step's inputs, kept until the next step had run
    return counts, entities, triples


def build_edges(
    rows: Source,
    target: Path,
    parts: list[Part],
    settings: PassageGraphSettings,
    run: Map,
) -> dict[str, Any]:
    """Write the passage graph's edge files; return its counts (edge_parts.py)."""
    n = parts[-1][2] if parts else 0
    bounds = np.array([start for _, start, _ in parts] + [n], dtype=np.int64)
    scratch, names = target / SCRATCH, [f"p{i}" for i in range(len(parts))]
    run(emit_rows, [(rows, str(target), part, name, bounds, settings)
                    for part, name in zip(parts, names, strict=True)])  # fmt: skip
    run(group_bucket, [(b, names, bounds, str(scratch), settings) for b in range(len(parts))])
    sources = (names, len(parts))  # a bucket a part
    found = run(part_rows, [((p, start, stop), n, sources, str(scratch), settings)
                            for p, (_, start, stop) in enumerate(parts)])  # fmt: skip
    stitch(scratch, [nnz for nnz, _ in found], n, target)
    return edge_counts([nnz for nnz, _ in found], sum(degree for _, degree in found), n)


def build_knowledge(target: Path, parts: list[Part], run: Map) -> tuple[int, int]:
    """Write the knowledge graph's files; return its entities and triples (kg_parts.py)."""
    scratch, names = target / SCRATCH, [f"p{i}" for i in range(len(parts))]
    calls = [(str(target), file, name) for (file, _, _), name in zip(parts, names, strict=True)]
    sizes = run(triples_of_part, calls)
    entities = merge_entities(scratch, names, [count for _, count in sizes], target)
    run(incidence_of_part, [(*call, entities) for call in calls])
    triples, chunks = sum(count for count, _ in sizes), parts[-1][2] if parts else 0
    stitch_graph(scratch, names, (triples, chunks, entities), target)
    return entities, triples


def _part(target: Path, file: str) -> ExtractionTable:
    return ExtractionTable.load(target / EXTRACTION_PARTS / file)


def emit_rows(
    rows: Source,
    target: str,
    part: Part,
    name: str,
    bounds: np.ndarray,
    settings: PassageGraphSettings,
) -> None:
    """Write one part's items into the buckets (a task); see edge_parts.emit.

    ``rows``: the chunk table to read the part's rows from (folder, manifest).
    """
    file, start, stop = part
    chunks = chunk_rows(rows, start, stop, texts=False)
    positions = np.fromiter((c.position for c in chunks), dtype=np.int64, count=len(chunks))
    documents, titles = [c.doc_id for c in chunks], [c.title for c in chunks]
    del chunks
    part_lists = Neighbours.load_rows(Path(target) / NEIGHBOURS_FILE, start, stop)
    table = _part(Path(target), file)
    rows_in = RowsIn(start, table, documents, positions, titles, part_lists)
    emit(rows_in, name, bounds, len(bounds) - 1, Path(target) / SCRATCH, settings)


def group_bucket(
    bucket: int, names: list[str], bounds: np.ndarray, scratch: str, settings: PassageGraphSettings
) -> None:
    """Make one bucket's pairs (a task); see edge_parts.group."""
    group(bucket, names, bounds, Path(scratch), settings)


def part_rows(
    part: tuple[int, int, int],
    n: int,
    sources: tuple[list[str], int],
    scratch: str,
    settings: PassageGraphSettings,
) -> tuple[dict[str, int], int]:
    """Sum one part of rows' pairs into CSR rows (a task); see edge_parts.sum_rows."""
    return sum_rows(part, n, sources, Path(scratch), settings)


def triples_of_part(target: str, file: str, name: str) -> tuple[int, int]:
    """Write one part's triples and sorted entities (a task); see kg_parts.part_triples."""
    return part_triples(_part(Path(target), file), Path(target) / SCRATCH, name)


def incidence_of_part(target: str, file: str, name: str, entities: int) -> None:
    """Save one part's incidence rows (a task); see kg_parts.part_incidence."""
    part_incidence(_part(Path(target), file), Path(target) / SCRATCH, name, entities)
