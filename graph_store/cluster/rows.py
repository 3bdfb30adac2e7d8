"""Chroma's rows of a build on a cluster: one task a partition, each its own collection.

Chroma keeps a collection's HNSW in the memory of the process that writes it, and an embedded
store takes one writer. So each partition's rows go into a collection of their own (the
partitioned location's part: graph_store/stores/chroma_parts.py), written by a task of their
own after the partition's: in parallel, each holding 1/P of the HNSW, none on the driver. The
driver journalled the partitioned collection first, so a failed build drops every part.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from hopgraph.graph_store.index import writes
from hopgraph.graph_store.index.generations import drop_collection
from hopgraph.graph_store.stores.chunk_table import chunks_in
from hopgraph.graph_store.stores.doc_table import DocumentTable
from hopgraph.graph_store.stores.vdb_chroma import ChromaLocation, ChromaVectorStore
from hopgraph.graph_store.stores.vector_table import VECTORS_FILE

from .partitions import (
    CHROMA_VECTORS,
    CHUNKS_PART,
    DOCUMENTS_PART,
    VECTORS,
    peak_rss_mb,
    reset_peak_rss,
)


def write_rows(root: str, path: str, location: ChromaLocation, generation: int) -> float:
    """Create ``location``'s collection and upsert the partition at ``path`` into it.

    Returns the task's peak RSS (MB). A retried task (its worker died) drops what the last try
    created and starts over.
    """
    reset_peak_rss()
    drop_collection(location)
    store = ChromaVectorStore(location, create=True)
    try:
        where = Path(root) / path
        chunks = chunks_in(where / CHUNKS_PART)
        kept = where / CHROMA_VECTORS
        vectors = np.load(kept if kept.is_file() else where / VECTORS / VECTORS_FILE)
        records = DocumentTable.read_file(where / DOCUMENTS_PART).records()
        fields = writes.document_fields(records, chunks)
        store.upsert(chunks, np.asarray(vectors, dtype=np.float32), generation, fields)
    finally:
        store.close()
    return peak_rss_mb()
