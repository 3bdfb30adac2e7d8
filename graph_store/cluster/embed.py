"""The chunking and embedding of a write to a built index (add, sync), done on a cluster.

A write's new documents are cut into ``partitions`` contiguous slices, in the order given, and
one Ray task per slice chunks and embeds it (retried if its worker dies); the driver takes the
chunks and vectors back in that order and commits the write as one process does
(index/changes.py): the same chunks, rows and vectors, the same graphs brought up to date. The
encoder's work, what a write at a million passages spends most on with a real model, runs on
the cluster; the write's table and graph updates stay on the driver.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise
from types import ModuleType

import numpy as np

from hopgraph.core.settings import IndexSettings
from hopgraph.graph_store.documents.schema import Chunk, Document
from hopgraph.graph_store.embedding.embedders import embedder_for
from hopgraph.graph_store.index import writes
from hopgraph.graph_store.index.changes import Embed

from .connect import RETRIES, failed


def embed_part(docs: list[Document], settings: IndexSettings) -> tuple[list[Chunk], np.ndarray]:
    """Chunk and embed one slice of a write's documents (a task on the cluster)."""
    embedder = embedder_for(settings)
    chunks = writes.chunk_documents(docs, settings, embedder)
    return chunks, writes.embed_chunks(chunks, embedder, False)


def embedded_on(ray: ModuleType, partitions: int | None) -> Embed:
    """Return how a write embeds on the joined cluster: ``partitions`` tasks (default: CPUs)."""

    def embed(docs: Sequence[Document], settings: IndexSettings) -> tuple[list[Chunk], np.ndarray]:
        count = partitions or int(ray.cluster_resources().get("CPU", 1))
        count = max(1, min(count, len(docs)))
        bounds = np.linspace(0, len(docs), count + 1).astype(int)
        task = ray.remote(max_retries=RETRIES)(embed_part)
        refs = [task.remote(list(docs[a:b]), settings) for a, b in pairwise(bounds)]
        try:
            found = ray.get(refs)
        except ray.exceptions.RayError as err:
            raise failed(ray, err) from err
        chunks = [c for part, _ in found for c in part]
        vectors = [v for _, v in found if len(v)]
        return chunks, np.concatenate(vectors) if vectors else np.zeros((0, 0), np.float32)

    return embed
