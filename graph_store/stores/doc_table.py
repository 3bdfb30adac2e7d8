"""The documents of an index: one record per document, written with every write.

A record keeps what the chunks do not: where the document came from, the hash of its content
(``hopgraph sync`` compares it to tell a changed file from an unchanged one), when it was
indexed and its metadata. An index written before this table gets records worked out from its
chunks, with no source and no hash (its next sync then counts every document as changed once).
"""

from __future__ import annotations

import os
from bisect import bisect_left
from collections import Counter
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path, PurePath

import orjson

from hopgraph.core.errors import IndexStateError, InputError
from hopgraph.core.file_reads import FileReads, verify_file
from hopgraph.graph_store.documents.filters import Where, conditions
from hopgraph.graph_store.documents.schema import Chunk, Document, Scalar

from .manifest import Manifest, tables_hint

DOCUMENTS_FILE = "documents.jsonl"


@dataclass(frozen=True, slots=True)
class DocumentRecord:
    """One indexed document: id, title, source, content hash, indexed at, chunks, metadata.

    ``source`` is the file's absolute path (sync's scope test); ``root`` the folder that was
    indexed (a table written before it has none: the file's own folder).
    """

    id: str
    title: str
    source: str
    hash: str
    indexed_at: str
    chunks: int
    metadata: dict[str, Scalar] = field(default_factory=dict)
    root: str = ""

    def to_dict(self) -> dict:
        """Return the record as JSON-ready data."""
        return asdict(self)

    @property
    def shown_source(self) -> str:
        """Return the source as hits show and filters read it: relative to the indexed folder.

        So ``--where 'source^=guide/'`` means the same wherever the folder lies on disk.
        """
        if not self.source:
            return ""
        root = self.root or os.path.dirname(self.source)
        try:
            return PurePath(self.source).relative_to(root).as_posix()
        except ValueError:  # not below it (a record edited by hand): as stored
            return self.source

    def fields(self) -> dict[str, Scalar]:
        """Return what every chunk of the document carries as metadata: source, user fields."""
        return {**self.metadata, "source": self.shown_source}


def records_of(
    docs: Iterable[Document], chunks: Sequence[Chunk], stamp: str
) -> list[DocumentRecord]:
    """Return the records of newly indexed ``docs`` (``chunks``: theirs, for the counts)."""
    counts = Counter(c.doc_id for c in chunks)
    return [
        DocumentRecord(
            d.id, d.title, d.source, d.content_hash(), stamp, counts[d.id], d.metadata, d.root
        )
        for d in docs
    ]


class DocumentTable:
    """The records of an index's documents as the lines of its table, sorted by id.

    Lines are parsed into records only when asked: a write at a million documents copies the
    lines it does not change instead of decoding and encoding a million records again.
    """

    def __init__(self, ids: list[str], lines: list[bytes]) -> None:
        self.ids = ids
        self.lines = lines

    @classmethod
    def of(cls, records: Iterable[DocumentRecord]) -> DocumentTable:
        """Return the table of ``records``."""
        rows = sorted(records, key=lambda r: r.id)
        return cls([r.id for r in rows], [orjson.dumps(r) for r in rows])

    @classmethod
    def changed(
        cls, directory: Path, manifest: Manifest, chunks: Collection[Chunk]
    ) -> DocumentTable | DocumentChange:
        """Return the table a write changes: the index's file, never held whole.

        See :class:`DocumentChange`; an index without a table gets one worked out from
        ``chunks``.
        """
        name = manifest.files.get("documents")
        if name is None:
            return cls.read(directory, manifest, chunks)
        return DocumentChange(directory / name, tables_hint(directory))

    @classmethod
    def read(cls, directory: Path, manifest: Manifest, chunks: Collection[Chunk]) -> DocumentTable:
        """Read the index's table (worked out from ``chunks`` when it has none)."""
        name = manifest.files.get("documents")
        if name is None:
            counts = Counter(c.doc_id for c in chunks)
            titles = {c.doc_id: c.title for c in chunks}
            return cls.of(
                DocumentRecord(d, titles[d], "", "", manifest.updated_at, n)
                for d, n in counts.items()
            )
        return cls.read_file(directory / name, tables_hint(directory))

    @classmethod
    def read_file(cls, path: Path, hint: str = "") -> DocumentTable:
        """Read a table file (``hint``: how to mend it, if it is damaged)."""
        try:
            lines = [line for line in verify_file(path).read_bytes().split(b"\n") if line]
            ids = [orjson.loads(line)["id"] for line in lines]
        except (OSError, ValueError, TypeError, KeyError) as err:
            raise IndexStateError(f"{path} is missing or damaged: {err}", hint) from err
        if ids != sorted(ids):
            raise IndexStateError(f"{path} is damaged: not sorted by id", hint)
        return cls(ids, lines)

    def records(self, ids: Iterable[str] | None = None) -> list[DocumentRecord]:
        """Return every record, or those of ``ids`` (that are in the table)."""
        if ids is None:
            lines = self.lines
        else:
            wanted = sorted(set(ids))
            places = [bisect_left(self.ids, i) for i in wanted]
            lines = [
                self.lines[at]
                for at, i in zip(places, wanted, strict=True)
                if at < len(self.ids) and self.ids[at] == i
            ]
        try:
            return [DocumentRecord(**orjson.loads(line)) for line in lines]
        except (ValueError, TypeError) as err:
            raise IndexStateError(f"the documents table is damaged: {err}") from err

    def without(self, ids: Iterable[str]) -> DocumentTable:
        """Return the table less the documents ``ids``."""
        gone = set(ids)
        kept = [i for i, doc_id in enumerate(self.ids) if doc_id not in gone]
        return DocumentTable([self.ids[i] for i in kept], [self.lines[i] for i in kept])

    def with_records(self, records: Iterable[DocumentRecord]) -> DocumentTable:
        """Return the table with ``records`` (of documents not in it) merged in, by id."""
        new = DocumentTable.of(records)
        ids: list[str] = []
        lines: list[bytes] = []
        done = 0
        for doc_id, line in zip(new.ids, new.lines, strict=True):
            at = bisect_left(self.ids, doc_id)
            ids += self.ids[done:at]
            lines += self.lines[done:at]
            ids.append(doc_id)
            lines.append(line)
            done = at
        return DocumentTable(ids + self.ids[done:], lines + self.lines[done:])

    def write(self, path: Path) -> None:
        """Write the table, one JSON object per line."""
        path.write_bytes(b"\n".join(self.lines) + b"\n" if self.lines else b"")

    def scan(self) -> Iterator[DocumentRecord]:
        """Yield every record in id order."""
        return iter(self.records())

    def __len__(self) -> int:
        return len(self.ids)


SCAN_FROM = 1000
"""Records asked for at once from which a change reads its file through instead of looking
each one up (a lookup is about 20 reads)."""


class DocumentChange:
    """A write's next document table: the last one's file less ``removed``, plus ``added``.

    Only the change is held: the last table's lines are read from its file when the next one
    is written, and records are looked up there (:class:`DocumentLookup`). Held whole, a
    million documents' lines were 240 MB of a write's driver.
    """

    def __init__(
        self,
        path: Path,
        hint: str = "",
        removed: frozenset[str] = frozenset(),
        added: Mapping[str, DocumentRecord] | None = None,
    ) -> None:
        self.path, self.hint, self.removed = path, hint, removed
        self.added = dict(added or {})

    def without(self, ids: Iterable[str]) -> DocumentChange:
        """Return the change with the documents ``ids`` removed too."""
        gone = frozenset(ids)
        kept = {i: r for i, r in self.added.items() if i not in gone}
        return DocumentChange(self.path, self.hint, self.removed | gone, kept)

    def with_records(self, records: Iterable[DocumentRecord]) -> DocumentChange:
        """Return the change with ``records`` (of documents not in the table) added."""
        added = self.added | {r.id: r for r in records}
        return DocumentChange(self.path, self.hint, self.removed, added)

    def records(self, ids: Iterable[str] | None = None) -> list[DocumentRecord]:
        """Return every record, or those of ``ids`` (that are in the table), in id order."""
        if ids is None:
            return list(self.scan())
        wanted = sorted(set(ids))
        if len(wanted) >= SCAN_FROM:
            keep = set(wanted)
            return [r for r in self.scan() if r.id in keep]
        lookup = DocumentLookup(self.path, self.hint)
        try:
            found = (self.added.get(i) or self._stored(lookup, i) for i in wanted)
            return [r for r in found if r is not None]
        finally:
            lookup.close()

    def _stored(self, lookup: DocumentLookup, doc_id: str) -> DocumentRecord | None:
        return None if doc_id in self.removed else lookup.get(doc_id)

    def scan(self) -> Iterator[DocumentRecord]:
        """Yield every record in id order, each line parsed in turn."""
        for line in self._lines():
            try:
                yield DocumentRecord(**orjson.loads(line))
            except (ValueError, TypeError) as err:
                raise IndexStateError(f"{self.path} is damaged: {err}", self.hint) from err

    def write(self, path: Path) -> None:
        """Write the next table, the last one's lines merged with the added records by id."""
        with path.open("wb", buffering=1 << 20) as out:
            for line in self._lines():
                out.write(line + b"\n")

    def _lines(self) -> Iterator[bytes]:
        """Yield the next table's lines in id order (the last table's checked for its order)."""
        added = sorted(self.added.items())
        at, last = 0, ""
        for doc_id, line in self._stored_lines():
            if doc_id < last:
                raise IndexStateError(f"{self.path} is damaged: not sorted by id", self.hint)
            last = doc_id
            while at < len(added) and added[at][0] < doc_id:
                yield orjson.dumps(added[at][1])
                at += 1
            if doc_id not in self.removed and doc_id not in self.added:
                yield line
        for _, record in added[at:]:
            yield orjson.dumps(record)

    def _stored_lines(self) -> Iterator[tuple[str, bytes]]:
        """Yield the last table's lines with their ids."""
        try:
            with verify_file(self.path).open("rb") as lines:
                for raw in lines:
                    line = raw.rstrip(b"\n")
                    if line:
                        yield str(orjson.loads(line)["id"]), line
        except (OSError, ValueError, TypeError, KeyError) as err:
            raise IndexStateError(f"{self.path} is missing or damaged: {err}", self.hint) from err


LAST_READ = 16384
"""Bytes of a lookup's last lines read at once instead of halved further."""


class DocumentLookup:
    """Single records of a table file, found by binary search over its lines (memory-mapped).

    A query's hits need the records of a few documents: reading the whole table took 1.6 s
    at 100,000 documents, a lookup reads a few pages (core.file_reads: none of them kept).
    """

    def __init__(self, path: Path, hint: str = "") -> None:
        self.path, self.hint = path, hint
        try:
            self.file = FileReads(path)
        except OSError as err:
            raise IndexStateError(f"{path} is missing or damaged: {err}", hint) from err

    def get(self, doc_id: str) -> DocumentRecord | None:
        """Return the record of ``doc_id``, or ``None`` when the table has none."""
        low, high = 0, self.file.size  # byte offsets: the answer's line starts in [low, high)
        while low < high:
            if high - low <= LAST_READ:  # the rest in one read
                return self._among(self.file.read(low, high), doc_id)
            start, end = self.file.line_around((low + high) // 2)
            line = self.file.read(start, end)
            if not line.strip():  # the final newline
                high = start
                continue
            found = self._id(line)
            if found == doc_id:
                return self._record(line)
            if found < doc_id:
                low = end + 1
            else:
                high = start
        return None

    def _among(self, block: bytes, doc_id: str) -> DocumentRecord | None:
        """Find ``doc_id``'s record among whole lines, sorted by id."""
        lines = [line for line in block.split(b"\n") if line.strip()]
        low, high = 0, len(lines)
        while low < high:  # a few lines' ids parsed, not every one's
            middle = (low + high) // 2
            found = self._id(lines[middle])
            if found == doc_id:
                return self._record(lines[middle])
            low, high = (middle + 1, high) if found < doc_id else (low, middle)
        return None

    def close(self) -> None:
        """Close the file."""
        self.file.close()

    def _id(self, line: bytes) -> str:
        try:
            return str(orjson.loads(line)["id"])
        except (ValueError, TypeError, KeyError) as err:
            raise IndexStateError(f"{self.path} is damaged: {err}", self.hint) from err

    def _record(self, line: bytes) -> DocumentRecord:
        try:
            return DocumentRecord(**orjson.loads(line))
        except (ValueError, TypeError) as err:
            raise IndexStateError(f"{self.path} is damaged: {err}", self.hint) from err


def read_documents(
    directory: Path, manifest: Manifest, chunks: Collection[Chunk]
) -> list[DocumentRecord]:
    """Return the index's document records (worked out from ``chunks`` when it has no table)."""
    return DocumentTable.read(directory, manifest, chunks).records()


BUILT_IN_FIELDS = ("doc_id", "title", "source", "section")
"""Fields every chunk has besides its document's own metadata."""


def as_text(value: Scalar) -> str:
    """Return a metadata value as ``--where`` writes it (``true`` / ``false`` for booleans)."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def matching(records: Sequence[DocumentRecord], chunks: Iterable[Chunk], where: Where) -> set[str]:
    """Return the ids of the chunks that pass every condition of ``where`` (documents.filters).

    The fields are the built-in ones (:data:`BUILT_IN_FIELDS`) and the document's metadata. A
    key no document has is an error that lists the keys there are.
    """
    tests = conditions(where)
    known = set(BUILT_IN_FIELDS).union(*(r.metadata.keys() for r in records))
    unknown = sorted({c.field for c in tests} - known)
    if unknown:
        raise InputError(
            f"no document has the field(s) {', '.join(map(repr, unknown))}",
            f"filter on one of: {', '.join(sorted(known))}",
        )
    doc_tests = [c for c in tests if c.field != "section"]
    docs = {r.id for r in records if all(c.holds(_field(r, c.field)) for c in doc_tests)}
    section_tests = [c for c in tests if c.field == "section"]
    return {
        c.id
        for c in chunks
        if c.doc_id in docs and all(t.holds(c.section_path) for t in section_tests)
    }


def _field(record: DocumentRecord, key: str) -> str | None:
    if key == "doc_id":
        return record.id
    if key == "title":
        return record.title
    if key == "source":
        return record.shown_source
    value = record.metadata.get(key)
    return None if value is None else as_text(value)
