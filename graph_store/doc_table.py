"""The documents of an index: one record per document, written with every write.

A record keeps what the chunks do not: where the document came from, the hash of its content
(``hopgraph sync`` compares it to tell a changed file from an unchanged one), when it was
indexed and its metadata. An index written before this table gets records worked out from its
chunks, with no source and no hash (its next sync then counts every document as changed once).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import orjson

from hopgraph.core.errors import IndexStateError, InputError

from .documents import Chunk, Document, Scalar
from .manifest import Manifest, rebuild_hint

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

    def fields(self) -> dict[str, Scalar]:
        """Return what every chunk of the document carries as metadata: source, user fields."""
        return {**self.metadata, "source": self.source}


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
            f"{path} is missing or damaged: {err}",
            rebuild_hint(directory),
        ) from err


BUILT_IN_FIELDS = ("doc_id", "title", "source", "section")
"""Fields every chunk has besides its document's own metadata."""


def as_text(value: Scalar) -> str:
    """Return a metadata value as ``--where`` writes it (``true`` / ``false`` for booleans)."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def matching(
    records: Sequence[DocumentRecord], chunks: Iterable[Chunk], where: Mapping[str, str]
) -> set[str]:
    """Return the ids of the chunks whose fields equal every ``where`` value (as text).

    The fields are the built-in ones (:data:`BUILT_IN_FIELDS`) and the document's metadata. A
    key no document has is an error that lists the keys there are.
    """
    known = set(BUILT_IN_FIELDS).union(*(r.metadata.keys() for r in records))
    unknown = sorted(set(where) - known)
    if unknown:
        raise InputError(
            f"no document has the field(s) {', '.join(map(repr, unknown))}",
            f"filter on one of: {', '.join(sorted(known))}",
        )
    by_id = {r.id: r for r in records}
    doc_wanted = {k: v for k, v in where.items() if k != "section"}
    docs = {
        d
        for d, r in by_id.items()
        if all(_field(r, key) == value for key, value in doc_wanted.items())
    }
    section = where.get("section")
    return {c.id for c in chunks if c.doc_id in docs and (section is None or c.section == section)}


def _field(record: DocumentRecord, key: str) -> str | None:
    if key == "doc_id":
        return record.id
    if key in ("title", "source"):
        return getattr(record, key)
    value = record.metadata.get(key)
    return None if value is None else as_text(value)
