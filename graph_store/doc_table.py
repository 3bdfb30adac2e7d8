"""The documents of an index: one record per document, written with every write.

A record keeps what the chunks do not: where the document came from, the hash of its content
(``hopgraph sync`` compares it to tell a changed file from an unchanged one), when it was
indexed and its metadata. An index written before this table gets records worked out from its
chunks, with no source and no hash (its next sync then counts every document as changed once).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import orjson

from hopgraph.core.errors import IndexStateError

from .documents import Chunk, Document, Scalar
from .manifest import Manifest

DOCUMENTS_FILE = "documents.jsonl"


@dataclass(frozen=True, slots=True)
class DocumentRecord:
    """One indexed document: id, title, source, content hash, indexed at, chunks, metadata."""

    id: str
    title: str
    source: str
    hash: str
    indexed_at: str
    chunks: int
    metadata: dict[str, Scalar] = field(default_factory=dict)

    def to_dict(self) -> dict:
        """Return the record as JSON-ready data."""
        return asdict(self)


def records_of(
    docs: Iterable[Document], chunks: Sequence[Chunk], stamp: str
) -> list[DocumentRecord]:
    """Return the records of newly indexed ``docs`` (``chunks``: theirs, for the counts)."""
    counts = Counter(c.doc_id for c in chunks)
    return [
        DocumentRecord(d.id, d.title, d.source, d.content_hash(), stamp, counts[d.id], d.metadata)
        for d in docs
    ]


def write_documents(path: Path, records: Iterable[DocumentRecord]) -> None:
    """Write the table, sorted by id, one JSON object per line."""
    rows = sorted(records, key=lambda r: r.id)
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))


def read_documents(
    directory: Path, manifest: Manifest, chunks: Sequence[Chunk]
) -> list[DocumentRecord]:
    """Return the index's document records (worked out from ``chunks`` when it has no table)."""
    name = manifest.files.get("documents")
    if name is None:
        counts = Counter(c.doc_id for c in chunks)
        titles = {c.doc_id: c.title for c in chunks}
        return [
            DocumentRecord(d, titles[d], "", "", manifest.updated_at, n)
            for d, n in sorted(counts.items())
        ]
    path = directory / name
    try:
        return [DocumentRecord(**orjson.loads(x)) for x in path.read_bytes().split(b"\n") if x]
    except (OSError, ValueError, TypeError) as err:
        raise IndexStateError(
            f"{path} is missing or damaged: {err}", "rebuild the index from its sources"
        ) from err
