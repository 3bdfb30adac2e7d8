"""A Chroma collection written as partitions: one collection per partition of a cluster's build.

Chroma holds a collection's HNSW in the memory of the one process that writes it, and an
embedded store takes one writer: a cluster's build that wrote one collection would need a task
holding the whole corpus's HNSW (2.4 GB a million 256-d rows) writing alone, for 44 minutes a
million rows on two cores. So each partition's task writes a collection of its own, in its own
folder (ChromaLocation.part), in parallel and with 1/P of the HNSW each.

:class:`PartitionedStore` gives those collections the one store's interface, for what reads or
writes Chroma after the build (writes, recovery, check, repair, inspection): it opens one
partition at a time and closes it after each call, so no process holds every partition's HNSW.
A later write adds its rows to the last partition; a delete asks each partition.
"""

from __future__ import annotations

import heapq
from collections.abc import Container, Iterator, Mapping, Sequence
from contextlib import contextmanager

import numpy as np

from hopgraph.graph_store.documents.schema import Chunk, Scalar

from .base import Scored
from .vdb_chroma import ChromaLocation, ChromaVectorStore, CollectionMissingError


class PartitionedStore:
    """The collections of a partitioned location, read and written as one store.

    ``missing_ok``: skip a partition whose collection is not there (undoing a write that
    stopped before creating it); otherwise a missing one is an error.
    """

    def __init__(
        self,
        location: ChromaLocation,
        visible: Container[str] | None = None,
        rows: Mapping[str, str] | None = None,
        missing_ok: bool = False,
    ) -> None:
        assert location.parts > 0, "a partitioned location"
        self.location, self.visible, self.rows = location, visible, rows
        self.missing_ok = missing_ok

    @contextmanager
    def _opened(self, part: ChromaLocation) -> Iterator[ChromaVectorStore | None]:
        try:
            if part.path is not None and not part.path.is_dir():  # a client would make it
                raise CollectionMissingError(f"Chroma collection {part.describe()} is missing")
            store = ChromaVectorStore(part, visible=self.visible, rows=self.rows)
        except CollectionMissingError:
            if not self.missing_ok:
                raise
            yield None
            return
        try:
            yield store
        finally:
            store.close()

    def _each(self) -> Iterator[ChromaVectorStore]:
        for part in self.location.each():
            with self._opened(part) as store:
                if store is not None:
                    yield store

    def upsert(
        self,
        chunks: Sequence[Chunk],
        embeddings: np.ndarray,
        generation: int,
        fields: Mapping[str, Mapping[str, Scalar]] | None = None,
        rows: Mapping[str, str] | None = None,
    ) -> None:
        """Upsert chunks into the last partition (see ChromaVectorStore.upsert)."""
        with self._opened(self.location.part(self.location.parts - 1)) as store:
            assert store is not None, "the last partition is missing"
            store.upsert(chunks, embeddings, generation, fields, rows)

    def delete(self, ids: Sequence[str]) -> None:
        """Delete by id from every partition (an id a partition lacks is no error)."""
        if ids:
            for store in self._each():
                store.delete(ids)

    def query(self, embedding: np.ndarray, k: int, where: dict | None = None) -> Scored:
        """Return each partition's best ``k``, merged: best first, ties by id."""
        found = [pair for store in self._each() for pair in store.query(embedding, k, where)]
        return heapq.nsmallest(k, found, key=lambda pair: (-round(pair[1], 6), pair[0]))

    def ids_after(self, generation: int) -> list[str]:
        """Return the ids of rows added by writes after ``generation``, from every partition."""
        return [row for store in self._each() for row in store.ids_after(generation)]

    def tag_all(self, generation: int) -> None:
        """Tag every row of every partition with ``generation``."""
        for store in self._each():
            store.tag_all(generation)

    def count(self) -> int:
        """Return the number of stored rows, all partitions together."""
        return sum(store.count() for store in self._each())

    def records(self, batch: int = 2000) -> Iterator[tuple[list[str], np.ndarray, list, list]]:
        """Yield (ids, embeddings, documents, metadatas) batches, a partition at a time."""
        for store in self._each():
            yield from store.records(batch)

    def drop(self) -> None:
        """Delete every partition's collection."""
        for store in self._each():
            store.drop()

    def close(self) -> None:
        """Nothing to release: each call closed the partitions it opened."""


PassageStore = ChromaVectorStore | PartitionedStore


def upsert_rows(
    location: ChromaLocation,
    chunks: Sequence[Chunk],
    embeddings: np.ndarray,
    generation: int,
    fields: Mapping[str, Mapping[str, Scalar]],
    rows: Mapping[str, str],
) -> None:
    """Open the passage rows at ``location``, upsert ``chunks`` and close them (a task's call).

    A cluster's write runs it as a task: the writing process then never opens Chroma (at a
    million rows a partition's HNSW and Chroma's import were 170 MB of its peak).
    """
    store = open_store(location)
    try:
        store.upsert(chunks, embeddings, generation, fields, rows)
    finally:
        store.close()


"""Where an index's passage rows are: one collection, or one per partition."""


def open_store(
    location: ChromaLocation,
    visible: Container[str] | None = None,
    rows: Mapping[str, str] | None = None,
    missing_ok: bool = False,
) -> PassageStore:
    """Open the passage rows at ``location``, one collection or partitioned.

    A missing collection raises CollectionMissingError (for a partitioned one, when a call
    reaches the missing partition, unless ``missing_ok``).
    """
    if location.parts:
        return PartitionedStore(location, visible, rows, missing_ok)
    return ChromaVectorStore(location, visible=visible, rows=rows)
