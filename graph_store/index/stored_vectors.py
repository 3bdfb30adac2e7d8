"""A generation's stored vectors read back in chunk order: the vector table, else Chroma's."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from hopgraph.core.errors import IndexStateError
from hopgraph.graph_store.documents.schema import Chunk
from hopgraph.graph_store.stores.chroma_parts import open_store
from hopgraph.graph_store.stores.manifest import (
    Manifest,
)
from hopgraph.graph_store.stores.vdb_chroma import ChromaLocation
from hopgraph.graph_store.stores.vector_table import VectorTable

from .generations import passages_location

if TYPE_CHECKING:  # BM25 (bm25s, scipy) and the graphs: imported when a method reads them
    pass


def stored_vectors(location: ChromaLocation) -> dict[str, np.ndarray]:
    """Read every vector of a Chroma collection (each partition's), by record id."""
    store = open_store(location)
    try:
        found: dict[str, np.ndarray] = {}
        for ids, embeddings, _, _ in store.records():
            found.update(zip(ids, embeddings, strict=True))
        return found
    finally:
        store.close()


def read_vectors(directory: Path, manifest: Manifest, chunks: Sequence[Chunk]) -> np.ndarray:
    """Return the chunks' stored vectors in chunk order: from the vector table, else Chroma."""
    if manifest.vectors:
        return VectorTable.load(directory, manifest.vectors).matrix([c.id for c in chunks])
    location = passages_location(directory, manifest)
    return chunk_embeddings(location, chunks, manifest.rows)


def chunk_embeddings(
    location: ChromaLocation, chunks: Sequence[Chunk], rows: Mapping[str, str] | None = None
) -> np.ndarray:
    """Read the chunks' stored embeddings from Chroma, in chunk order (nothing is re-embedded).

    Rows of other generations (a write in progress) are left out by id; ``rows``: chunks
    stored under another row id (Manifest.rows).
    """
    found, rows = stored_vectors(location), rows or {}
    missing = [c.id for c in chunks if rows.get(c.id, c.id) not in found]
    if missing:
        raise IndexStateError(
            f"{len(missing)} chunks have no stored vector (e.g. {missing[0]!r})",
            "the index is damaged: rebuild it with `hopgraph index`",
        )
    return np.stack([found[rows.get(c.id, c.id)] for c in chunks]).astype(np.float32)
