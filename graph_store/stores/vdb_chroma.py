"""Chroma as the vector store: embedded ``PersistentClient`` by default, a server by URL.

Embeddings are always computed by hopgraph and given to Chroma, never by Chroma's default
embedding function (it downloads a model). Collections use cosine space.
"""

from __future__ import annotations

import logging
from collections.abc import Container, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlparse

import numpy as np

from hopgraph.core.errors import IndexStateError
from hopgraph.graph_store.documents.schema import Chunk, Scalar, chunk_of_row

from .base import Scored

if TYPE_CHECKING:  # chromadb takes a quarter of a second to import: only a client needs it
    import chromadb

log = logging.getLogger(__name__)

HNSW = {"space": "cosine", "ef_construction": 200, "ef_search": 200, "max_neighbors": 32}


@dataclass(frozen=True)
class ChromaLocation:
    """Where a collection lives: a local directory (embedded) or a server URL, and its name.

    ``parts``: 0 for one collection; P for a collection written as P partitions (a build on a
    cluster: graph_store/stores/chroma_parts.py), each its own collection, ``NAME-pNNN``, in
    its own folder ``pNNN`` (an embedded store) or on the same server.
    """

    collection: str
    path: Path | None = None
    url: str | None = None
    parts: int = 0

    def triples(self) -> ChromaLocation:
        """Return the location of the triple collection that goes with these passages."""
        return ChromaLocation(f"{self.collection}-triples", self.path, self.url)

    def part(self, number: int) -> ChromaLocation:
        """Return where partition ``number`` of a partitioned collection lives."""
        path = self.path / f"p{number:03d}" if self.path is not None else None
        return ChromaLocation(f"{self.collection}-p{number:03d}", path, self.url)

    def each(self) -> list[ChromaLocation]:
        """Return the single collections it is made of: itself, or each partition's."""
        return [self.part(n) for n in range(self.parts)] if self.parts else [self]

    def describe(self) -> str:
        """Return a short human description."""
        parts = f", {self.parts} partitions" if self.parts else ""
        return f"{self.url or self.path} [{self.collection}{parts}]"


def connect(location: ChromaLocation) -> chromadb.ClientAPI:
    """Open a client for ``location``; a server that does not answer is a clear error."""
    import chromadb
    from chromadb.config import Settings

    settings = Settings(anonymized_telemetry=False)  # never phone home
    if location.url is None:
        assert location.path is not None
        try:
            return chromadb.PersistentClient(path=str(location.path), settings=settings)
        except Exception:
            # Chroma keeps the system it failed to start (a full device, a damaged file) and
            # hands it to every later client of the folder, which then fails in its own way
            from chromadb.api.shared_system_client import SharedSystemClient

            SharedSystemClient.clear_system_cache()
            raise
    parsed = urlparse(location.url)
    try:
        client = chromadb.HttpClient(
            host=parsed.hostname or "localhost",
            port=parsed.port or (443 if parsed.scheme == "https" else 8000),
            ssl=parsed.scheme == "https",
            settings=settings,
        )
        client.heartbeat()
    except Exception as err:  # the client raises several types for an unreachable server
        raise IndexStateError(
            f"Chroma server at {location.url} is not reachable: {err}",
            "start it (`chroma run --host 127.0.0.1 --port 8000 --path DIR`) or fix --chroma-url",
        ) from err
    return client


class CollectionMissingError(IndexStateError):
    """The named collection is not there (never created, dropped, or the server was reset)."""


GENERATION = "generation"
"""The metadata key tagging each row with the write that added it (see stores.manifest)."""


class ChromaVectorStore:
    """A Chroma collection of chunk embeddings; a row's id is its chunk's (or ``rows``').

    ``visible``: the ids a reader may see (its generation's chunks or triples); rows a write in
    progress added, or rows its generation removed and not yet purged, are skipped. ``None``
    sees every row (a writer). ``rows``: the reader's chunks stored under another row id
    (Manifest.rows): only that row is theirs, and results name the chunk.
    """

    def __init__(
        self,
        location: ChromaLocation,
        create: bool = False,
        visible: Container[str] | None = None,
        rows: Mapping[str, str] | None = None,
    ) -> None:
        self.location = location
        self.visible = visible
        self.rows = rows or {}
        self.client = connect(location)
        try:
            self.collection = self._collection(create)
        except BaseException:
            self.close()  # an embedded client holds its files until the last one is closed
            raise

    def _collection(self, create: bool) -> chromadb.Collection:
        name = self.location.collection
        if create:
            return self.client.create_collection(
                name, configuration={"hnsw": HNSW}, embedding_function=None
            )
        try:
            return self.client.get_collection(name, embedding_function=None)
        except Exception as err:  # NotFoundError / ValueError depending on client type
            raise CollectionMissingError(
                f"Chroma collection {self.location.describe()} is missing",
                "the index is damaged or its server was reset: rebuild it from its sources "
                "(`hopgraph index SOURCE --index DIR --force`)",
            ) from err

    def upsert(
        self,
        chunks: Sequence[Chunk],
        embeddings: np.ndarray,
        generation: int,
        fields: Mapping[str, Mapping[str, Scalar]] | None = None,
        rows: Mapping[str, str] | None = None,
    ) -> None:
        """Upsert chunks with their embeddings, tagged with the write's ``generation``.

        ``fields``: per document id, metadata every chunk of it carries (its source and the
        user's fields), which Chroma's ``where`` clauses can filter on. ``rows``: chunks
        stored under another row id (Manifest.rows).
        """
        fields, rows = fields or {}, rows or {}
        self.upsert_records(
            [rows.get(c.id, c.id) for c in chunks],
            embeddings,
            [c.text for c in chunks],
            [
                {
                    **fields.get(c.doc_id, {}),
                    "doc_id": c.doc_id,
                    "title": c.title,
                    "position": c.position,
                    "n_chunks": c.n_chunks,
                    "section": c.section_path,
                    GENERATION: generation,
                }
                for c in chunks
            ],
        )

    def upsert_records(
        self,
        ids: Sequence[str],
        embeddings: np.ndarray,
        documents: Sequence[str],
        metadatas: Sequence[dict],
    ) -> None:
        """Upsert any records (chunks, triples) in batches the client accepts."""
        step = self.client.get_max_batch_size()
        for start in range(0, len(ids), step):
            end = start + step
            self.collection.upsert(
                ids=list(ids[start:end]),
                embeddings=embeddings[start:end],
                documents=list(documents[start:end]),
                metadatas=list(metadatas[start:end]),
            )

    def delete(self, ids: Sequence[str]) -> None:
        """Delete by id in batches."""
        step = self.client.get_max_batch_size()
        for start in range(0, len(ids), step):
            self.collection.delete(ids=list(ids[start : start + step]))

    def query(self, embedding: np.ndarray, k: int, where: dict | None = None) -> Scored:
        """Return (id, cosine similarity) pairs, best first; ``where``: a Chroma filter."""
        # No generation filter (it scans every row's metadata: 0.2 s per query at 100k rows):
        # rows the reader may not see are skipped, and the search widened if they took places.
        total = self.count()
        fetch = min(k, total)
        scored: list[tuple[str, float]] = []
        while fetch > 0:
            result = self.collection.query(
                query_embeddings=[np.asarray(embedding, dtype=np.float32)],
                n_results=fetch,
                include=["distances"],
                where=where,
            )
            ids, distances = result["ids"][0], result["distances"][0]
            scored = [
                (chunk_of_row(i), 1.0 - float(d))
                for i, d in zip(ids, distances, strict=True)
                if self._sees(i)
            ]
            if len(scored) >= k or fetch >= total:
                break
            fetch = min(total, 2 * fetch + k)
        # HNSW returns equal distances in arbitrary order; ties broken by id keep runs repeatable.
        return sorted(scored, key=lambda pair: (-round(pair[1], 6), pair[0]))[:k]

    def _sees(self, row: str) -> bool:
        """Tell whether a row is one of the reader's: its chunk's, under the reader's row id."""
        if self.visible is None:
            return True
        chunk = chunk_of_row(row)
        return chunk in self.visible and self.rows.get(chunk, chunk) == row

    def ids_after(self, generation: int) -> list[str]:
        """Return the ids of rows added by writes after ``generation`` (uncommitted ones)."""
        return self.collection.get(where={GENERATION: {"$gt": generation}}, include=[])["ids"]

    def tag_all(self, generation: int) -> None:
        """Tag every row with ``generation`` (turns an index of format 1 into format 2)."""
        for ids, _, _, _ in self.records():
            self.collection.update(ids=ids, metadatas=[{GENERATION: generation}] * len(ids))

    def count(self) -> int:
        """Return the number of stored chunks."""
        return self.collection.count()

    def records(self, batch: int = 2000) -> Iterator[tuple[list[str], np.ndarray, list, list]]:
        """Yield (ids, embeddings, documents, metadatas) batches of every stored record."""
        total = self.count()
        for offset in range(0, total, batch):
            got = self.collection.get(
                limit=batch, offset=offset, include=["embeddings", "documents", "metadatas"]
            )
            yield got["ids"], np.asarray(got["embeddings"]), got["documents"], got["metadatas"]

    def drop(self) -> None:
        """Delete the whole collection."""
        self.client.delete_collection(self.location.collection)

    def close(self) -> None:
        """Release the client (and, for the embedded client, its files)."""
        try:
            self.client.close()
        except Exception:  # closing twice, or a server already gone, is harmless here
            log.debug("closing Chroma client failed", exc_info=True)
