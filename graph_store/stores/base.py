"""One small interface per storage role. Backends live in ``vdb_*.py`` / ``kdb_*.py``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from hopgraph.graph_store.documents.schema import Chunk

Scored = list[tuple[str, float]]
"""(chunk id, score) pairs, best first."""


class VectorStore(Protocol):
    """Nearest-neighbour search over chunk embeddings."""

    def upsert(self, chunks: Sequence[Chunk], embeddings: np.ndarray) -> None:
        """Insert or replace chunks with their embeddings."""
        ...

    def delete(self, ids: Sequence[str]) -> None:
        """Remove chunks by id (unknown ids are ignored)."""
        ...

    def query(self, embedding: np.ndarray, k: int) -> Scored:
        """Return the ``k`` chunks most similar to ``embedding`` (cosine similarity)."""
        ...

    def count(self) -> int:
        """Return the number of stored chunks."""
        ...

    def close(self) -> None:
        """Release the client and its files."""
        ...


class KeywordStore(Protocol):
    """Lexical search over chunk texts."""

    def query(self, text: str, k: int) -> Scored:
        """Return up to ``k`` chunks matching ``text``, best first; zero scores left out."""
        ...
