"""Value types of the index: source documents and the chunks made from them."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import orjson

Scalar = str | int | float | bool


@dataclass(frozen=True, slots=True)
class Document:
    """A source document as loaded from a corpus.

    ``source``: where it was read from (a file path; empty when given in code). ``metadata``:
    the user's fields (JSONL keys, Markdown front matter), scalars only. ``root``: the folder
    that was indexed, which hits show ``source`` relative to (empty: the file's own folder).
    """

    id: str
    title: str
    text: str
    source: str = ""
    metadata: dict[str, Scalar] = field(default_factory=dict)
    root: str = ""

    def content_hash(self) -> str:
        """Return a hash of what is indexed of it (title, text, metadata): sync's change test."""
        body = orjson.dumps([self.title, self.text, self.metadata], option=orjson.OPT_SORT_KEYS)
        return hashlib.sha256(body).hexdigest()[:16]


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
    section: str = ""
    """The headings above the chunk's start within its document, outermost first, " > " between."""

    @property
    def section_path(self) -> str:
        """Return the section users see and filter on: the page's title, then :attr:`section`.

        An .rst page's title and a Markdown page's H1 become the document's title, not a
        heading of its text, so without this ``section~=Signals`` would leave out the page
        called Signals. A section that already starts with the title is not doubled.
        """
        title, section = " ".join(self.title.split()), self.section
        if not title or section == title or section.startswith(title + " > "):
            return section
        return f"{title} > {section}" if section else title

    @property
    def embed_text(self) -> str:
        """Return what the embedder sees: title, newline, text (the benchmarks' convention)."""
        return f"{self.title}\n{self.text}" if self.title else self.text


ROW_SEPARATOR = "\x1f"
"""Between a replaced chunk's id and the generation of its Chroma row (no chunk id holds it)."""


def row_id(chunk_id: str, generation: int) -> str:
    """Return the Chroma row id a write of ``generation`` stores a replaced chunk under."""
    return f"{chunk_id}{ROW_SEPARATOR}g{generation}"


def chunk_of_row(row: str) -> str:
    """Return the chunk id a Chroma row id stands for."""
    return row.partition(ROW_SEPARATOR)[0]


def chunk_id(doc_id: str, position: int, n_chunks: int) -> str:
    """Return the stable id of a chunk: the document id itself when the document is one chunk."""
    return doc_id if n_chunks == 1 else f"{doc_id}#{position}"
