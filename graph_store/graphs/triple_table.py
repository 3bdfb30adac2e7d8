"""The knowledge graph's triple vectors, kept in the generation beside the graphs.

The GEAR methods score triples by their vectors. Chroma holds them too (the triples'
collection), but opening an embedded Chroma store rewrites its files, so readers never do
(graph_store/stores/chroma_seal.py): they read this table, one vector segment (``vectors.npy`` +
``ids.json``, memory-mapped) in the knowledge graph's triple order, saved by every write that
keeps triple vectors and named by ``Manifest.files["triple_vectors"]``, so its size and CRC are
recorded and checked like every other file's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from hopgraph.core.errors import IndexStateError
from hopgraph.core.file_reads import verify_rows
from hopgraph.graph_store.stores.manifest import TRIPLE_VECTORS as PART
from hopgraph.graph_store.stores.manifest import Manifest, graphs_hint
from hopgraph.graph_store.stores.vector_table import VectorSegment

FOLDER = "triple-vectors"


def save(
    directory: Path,
    manifest: Manifest,
    folder: str,
    ids: Sequence[str],
    fresh: dict[str, np.ndarray],
    stored: Callable[[list[str]], np.ndarray],
) -> None:
    """Save the vectors of ``ids`` (graph order) under ``folder/triple-vectors``; name it.

    ``fresh``: the vectors this write embedded, by triple id; the others come from the
    previous generation's table, or ``stored(ids)`` (Chroma) for an index written before it.
    """
    is_fresh = np.array([i in fresh for i in ids], dtype=bool)
    kept = [i for i in ids if i not in fresh]  # the rows of ~is_fresh, in order
    known = _previous(directory, manifest, kept)
    matrix = np.empty((len(ids), int(manifest.embedder["dimension"])), dtype=np.float32)
    if kept:
        matrix[~is_fresh] = known if known is not None else stored(kept)
    if fresh:
        matrix[is_fresh] = np.stack([fresh[i] for i in ids if i in fresh])
    path = f"{folder}/{FOLDER}"
    VectorSegment(path, list(ids), matrix).save(directory, ann=False)
    manifest.files[PART] = path


def load(directory: Path, manifest: Manifest, ids: Sequence[str]) -> np.ndarray | None:
    """Return the vectors of ``ids`` (graph order), or ``None`` for an index without the table."""
    path = manifest.files.get(PART)
    if path is None:
        return None
    segment = VectorSegment.load(directory, path)
    if segment.ids != list(ids):
        raise IndexStateError(
            f"the triple vectors in {directory / path} are out of step with the knowledge graph",
            graphs_hint(directory),
        )
    verify_rows(segment.vectors)
    return np.asarray(segment.vectors, dtype=np.float32)


def _previous(directory: Path, manifest: Manifest, ids: list[str]) -> np.ndarray | None:
    """Return ``ids``' vectors from the table the manifest names, if it names one."""
    path = manifest.files.get(PART)
    if path is None:
        return None
    segment = VectorSegment.load(directory, path)
    where = {triple_id: row for row, triple_id in enumerate(segment.ids)}
    if any(i not in where for i in ids):
        return None  # a table of other triples (an older graph build): read Chroma instead
    rows = np.array([where[i] for i in ids], dtype=np.int64)
    return np.asarray(segment.vectors[rows] if len(rows) else segment.vectors[:0], np.float32)
