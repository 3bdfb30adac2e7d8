"""Value types of the index: source documents and the chunks made from them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Document:
    """A source document as loaded from a corpus."""

    id: str
    title: str
    text: str


@dataclass(frozen=True, slots=True)
class Chunk:
    """A retrievable unit: a whole short document or one piece of a long one.

    ``position`` / ``n_chunks`` place the chunk within its document, so neighbouring chunks are
    ``chunk_id(doc_id, position ± 1)``.
    """

    id: str
    doc_id: str
    title: str
    text: str
    position: int = 0
    n_chunks: int = 1

    @property
    def embed_text(self) -> str:
        """Return what the embedder sees: title, newline, text (the benchmarks' convention)."""
        return f"{self.title}\n{self.text}" if self.title else self.text


def chunk_id(doc_id: str, position: int, n_chunks: int) -> str:
    """Return the stable id of a chunk: the document id itself when the document is one chunk."""
    return doc_id if n_chunks == 1 else f"{doc_id}#{position}"
