"""Chroma's rows of a build on a cluster, written by one task on the cluster, not the driver.

Chroma keeps a collection's HNSW in the memory of the process that writes it (an embedded
store) or of its server: either way not the driver's, which stays small. The task reads each
partition's chunk and document table parts and vectors, and upserts them a partition at a
time. An embedded store takes one writer, so one task writes it all, beside the driver's
reduce; the driver journalled the collection first, so a failed build drops it.
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

from .partitions import CHROMA_VECTORS, CHUNKS_PART, DOCUMENTS_PART, VECTORS, peak_rss_mb


def write_rows(root: str, paths: list[str], location: ChromaLocation, generation: int) -> float:
    """Create the collection and upsert the partitions at ``paths``; return this peak RSS (MB).

    A retried task (its worker died) drops what the last try created and starts over.
    """
    drop_collection(location)
    store = ChromaVectorStore(location, create=True)
    try:
        for path in paths:
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
