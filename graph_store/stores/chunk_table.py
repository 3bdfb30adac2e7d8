"""The chunk table of a generation: one JSON object per chunk and line (chunks.jsonl).

A process that serves an index reads it as a :class:`ChunkTable`: the ids and where each line
starts are in memory, and a chunk is read from the file (core.file_reads) and parsed when it is
looked up (a hit shown, a method's step). Its texts, titles and metadata are never all held as
Python objects: at a million chunks that was 1.5 GB of every serving process, and the whole of
a cluster router's growth. A generation's table is written once and never changed (a write
makes the next generation's), so a lookup reads the bytes the manifest committed.
"""

from __future__ import annotations

import heapq
import itertools
from array import array
from collections.abc import (
    Callable,
    Collection,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
    Sized,
    ValuesView,
)
from dataclasses import replace
from pathlib import Path
from typing import TypeVar

import orjson

from hopgraph.core.errors import IndexStateError
from hopgraph.core.file_reads import FileReads, verify_file
from hopgraph.core.id_lists import WIDE_END, ChunkIds, ChunkRows
from hopgraph.graph_store.documents.schema import Chunk

from .manifest import Manifest, tables_hint

NO_TEXT = {"text": ""}


def read_chunks(directory: Path, manifest: Manifest, texts: bool = True) -> list[Chunk]:
    """Read the chunk table of an index directory's committed generation.

    Without ``texts``, each chunk's text is left empty: for a process that needs the rest
    only (a cluster's driver, whose tasks read the texts).
    """
    return _checked(directory, manifest, lambda path: chunks_in(path, texts))


def scan_chunks(directory: Path, manifest: Manifest) -> ChunkScan:
    """Return the committed generation's chunks without texts, read anew on each pass."""
    path, count = manifest.path(directory, "chunks"), manifest.counts.get("chunks")
    if count is None:  # an older manifest: counted by a pass
        count = len(_checked(directory, manifest, lambda found: list(scan_ids(found))))
    return ChunkScan(path, count, documents=manifest.counts.get("documents"))


def open_chunks(directory: Path, manifest: Manifest) -> ChunkTable:
    """Open the committed generation's chunk table, read on demand (see :class:`ChunkTable`)."""
    return _checked(directory, manifest, ChunkTable.open)


def chunks_with_ids(
    directory: Path, manifest: Manifest, wanted: Collection[str]
) -> dict[str, Chunk]:
    """Read the committed table's chunks whose ids are ``wanted`` (with texts), in one pass.

    For a task that needs a few rows' texts: it keeps nothing of the others (an open
    :class:`ChunkTable` keeps every id and line start, 50 bytes a chunk of the whole corpus).
    """

    def read(path: Path) -> _Counted:
        found, count = {}, 0
        for line in _lines(path):
            count += 1
            if wanted and _line_id(line) in wanted:
                chunk = Chunk(**orjson.loads(line))
                found[chunk.id] = chunk
        return _Counted(found, count)

    return _checked(directory, manifest, read).found


class _Counted(Sized):
    """Some chunks of a table read in one pass, and how many rows the pass met."""

    def __init__(self, found: dict[str, Chunk], rows: int) -> None:
        self.found, self.rows = found, rows

    def __len__(self) -> int:
        return self.rows


Table = TypeVar("Table", bound=Sized)


def _checked(directory: Path, manifest: Manifest, read: Callable[[Path], Table]) -> Table:
    """Read the committed chunk table with ``read``; a damaged one or a wrong count is named."""
    path = manifest.path(directory, "chunks")
    fix = tables_hint(directory)
    try:
        table = read(path)
    except (OSError, ValueError, TypeError, KeyError) as err:
        raise IndexStateError(f"{path} is missing or damaged: {err}", fix) from err
    expected = manifest.counts.get("chunks")
    if expected is not None and len(table) != expected:
        raise IndexStateError(
            f"{path} is damaged: it holds {len(table)} chunks, the manifest says {expected}", fix
        )
    return table


ID_PREFIX = b'{"id":"'
"""How every line :func:`write_chunks` writes starts (orjson keeps the dataclass's order)."""


class LineSpans:
    """Where each row's line lies in a file: 4 bytes a row (its length) and 8 every block.

    A row's span runs to the next row's start (a blank line after it is its). Half of an
    8-byte start a row: at 3M chunks, 12 MB of a router's growth.
    """

    BLOCK = 256
    """Rows a start is kept for: a span is its block's start and the lengths before it."""

    def __init__(self) -> None:
        self._lengths, self._starts = array("I"), array("q")
        self._last: int | None = None

    def add(self, start: int) -> None:
        """Note the next row's start (the rows come in file order)."""
        if self._last is not None:
            self._end_last(start)
        if len(self._lengths) % self.BLOCK == 0:
            self._starts.append(start)
        self._last = start

    def close(self, end: int) -> None:
        """Note where the last row ends (the file's end)."""
        if self._last is not None:
            self._end_last(end)
            self._last = None

    def _end_last(self, end: int) -> None:
        assert self._last is not None
        if end - self._last > WIDE_END:  # a length in 4 bytes
            raise ValueError(f"a line of {end - self._last} bytes: a chunk is far smaller")
        self._lengths.append(end - self._last)

    def __len__(self) -> int:
        return len(self._lengths)

    def span(self, row: int) -> tuple[int, int]:
        """Return where row ``row``'s line starts and where the next row's does."""
        first = row - row % self.BLOCK
        start = self._starts[row // self.BLOCK] + sum(self._lengths[first:row])
        return start, start + self._lengths[row]


class ChunkTable(Mapping[str, Chunk]):
    """A chunk table file as a mapping from chunk id to chunk, each read when looked up.

    Held in memory: the ids (:class:`ChunkIds`) and each line's span (:class:`LineSpans`),
    about 20 bytes a chunk beside the ids' own, against 1.5 kB as objects. :meth:`scan` reads
    every chunk in turn without keeping them, for the few passes that need the whole corpus (a
    filter, a title index made from the chunks).
    """

    def __init__(self, path: Path, ids: Iterable[str], spans: LineSpans):
        self.path, self._spans = path, spans
        self.ids = ids if isinstance(ids, ChunkIds) else ChunkIds(ids)
        self.rows = ChunkRows(self.ids)
        self._file = FileReads(path)

    @classmethod
    def open(cls, path: Path) -> ChunkTable:
        """Read each line's id and start from the file at ``path`` (one pass, no text kept)."""
        spans = LineSpans()
        verify_file(path)  # every line's id is read: every byte is used

        def ids() -> Iterator[str]:  # each id as its line is read, into ChunkIds
            at = 0
            with path.open("rb") as lines:
                for line in lines:
                    if line != b"\n":
                        spans.add(at)
                        yield _line_id(line)
                    at += len(line)
            spans.close(at)

        return cls(path, ChunkIds(ids()), spans)

    def __getitem__(self, chunk_id: str) -> Chunk:
        return self.at(self.rows[chunk_id])

    def __contains__(self, chunk_id: object) -> bool:
        return chunk_id in self.rows

    def __iter__(self) -> Iterator[str]:
        return iter(self.ids)

    def __len__(self) -> int:
        return len(self.ids)

    def values(self) -> ValuesView[Chunk]:
        """Every chunk in row order, read in turn (see :meth:`scan`)."""
        return _Scan(self)

    def at(self, row: int) -> Chunk:
        """Return the chunk at ``row``, parsed from its line."""
        line = self._bytes(row)
        try:
            return Chunk(**orjson.loads(line))
        except (ValueError, TypeError) as err:
            raise IndexStateError(
                f"{self.path} is damaged at chunk row {row}: {err}", tables_hint(self.path.parent)
            ) from err

    def line(self, chunk_id: str) -> bytes:
        """Return a chunk's line as written (its newline included), unparsed."""
        return self._bytes(self.rows[chunk_id]).rstrip(b"\n") + b"\n"  # a blank line after: not its

    def _bytes(self, row: int) -> bytes:
        """Return the bytes from ``row``'s line start to the next line's."""
        return self._file.read(*self._spans.span(row))

    def scan(self, texts: bool = True) -> Iterator[Chunk]:
        """Yield every chunk in row order (without ``texts``: each text left empty)."""
        for row in range(len(self._spans)):
            chunk = self.at(row)
            yield chunk if texts else replace(chunk, text="")


class _Scan(ValuesView[Chunk]):
    """A chunk table's values, read in row order instead of looked up id by id."""

    _mapping: ChunkTable

    def __iter__(self) -> Iterator[Chunk]:
        return self._mapping.scan()


def _line_id(line: bytes) -> str:
    """Return a chunk line's id: sliced where orjson wrote it, else parsed."""
    if line.startswith(ID_PREFIX):
        end = line.find(b'"', len(ID_PREFIX))
        raw = line[len(ID_PREFIX) : end]
        if end > 0 and b"\\" not in raw:
            return raw.decode("utf-8")
    found = orjson.loads(line)["id"]
    if not isinstance(found, str):
        raise ValueError(f"a chunk id is not a string: {found!r}")
    return found


class ChunkScan(Sized, Iterable[Chunk]):
    """A chunk table's chunks without texts, read in row order on each pass; none held.

    For a process whose memory must not grow with the corpus (a cluster's driver, whose tasks
    read the rows): its length is the manifest's count, a pass that finds another count fails.
    :meth:`changed` gives a write's next chunks the same way: the table's, less the ``removed``
    ids, merged in id order with the ``added`` chunks (held, with their texts), as a write's
    ``sorted`` of them would be when the table is in id order (:meth:`in_id_order`).
    """

    def __init__(
        self,
        path: Path,
        count: int,
        added: Sequence[Chunk] = (),
        removed: Collection[str] = frozenset(),
        documents: int | None = None,
    ) -> None:
        self.path, self.count, self.documents = path, count, documents
        self.added = sorted(added, key=lambda c: c.id)
        self.removed = frozenset(removed)

    def changed(
        self, added: Sequence[Chunk], removed: Collection[str], documents: int
    ) -> ChunkScan:
        """Return the chunks after a write that adds ``added`` and removes ``removed`` ids.

        An added chunk may take a removed one's id (a sync's replaced chunk). ``documents``:
        how many documents they belong to (the manifest's count).
        """
        gone = frozenset(removed)
        count = self.count + len(added) - len(gone)
        return ChunkScan(self.path, count, [*self.added, *added], self.removed | gone, documents)

    def in_id_order(self) -> bool:
        """Tell whether the table's ids ascend (a pass): what :meth:`changed` merges with."""
        last = None
        for chunk_id in scan_ids(self.path):
            if last is not None and chunk_id <= last:
                return False
            last = chunk_id
        return True

    def __len__(self) -> int:
        return self.count

    def __iter__(self) -> Iterator[Chunk]:
        table = (Chunk(**(orjson.loads(line) | NO_TEXT)) for line in _lines(self.path))
        kept = (c for c in table if c.id not in self.removed) if self.removed else table
        return self._counted(heapq.merge(kept, self.added, key=lambda c: c.id))

    def ids(self) -> Iterator[str]:
        """Yield each chunk's id in row order (the table's lines not parsed)."""
        table = scan_ids(self.path)
        kept = (i for i in table if i not in self.removed) if self.removed else table
        return self._counted(heapq.merge(kept, [c.id for c in self.added]))

    def _counted(self, rows: Iterator[Item]) -> Iterator[Item]:
        found, hint = 0, tables_hint(self.path.parent)
        try:
            for found, row in enumerate(rows, 1):  # noqa: B007 (the count is read after)
                yield row
        except (OSError, ValueError, TypeError, KeyError) as err:
            raise IndexStateError(f"{self.path} is missing or damaged: {err}", hint) from err
        if found != self.count:
            raise IndexStateError(
                f"{self.path} is damaged: it holds {found} chunks, the manifest says {self.count}",
                hint,
            )


Item = TypeVar("Item")


def _lines(path: Path) -> Iterator[bytes]:
    """Yield a table file's chunk lines (blank lines skipped), read through a buffer."""
    with verify_file(path).open("rb") as lines:  # every line is read: every byte is used
        yield from (line for line in lines if line != b"\n")


def scan_ids(path: Path) -> Iterator[str]:
    """Yield the chunk ids of a table file in row order, each sliced from its line."""
    return (_line_id(line) for line in _lines(path))


def ids_of(chunks: Iterable[Chunk]) -> Iterator[str]:
    """Yield the chunks' ids in order (a :class:`ChunkScan`'s without parsing its lines)."""
    return chunks.ids() if isinstance(chunks, ChunkScan) else (c.id for c in chunks)


def chunks_in(
    path: Path, texts: bool = True, start: int = 0, stop: int | None = None
) -> list[Chunk]:
    """Read a chunk table file (or a partition's part of one), line by line (see read_chunks).

    ``start`` / ``stop``: only those rows (a cluster's task reads a range).
    """
    rows = itertools.islice(_lines(path), start, stop)  # no second copy of the whole table
    if texts:
        return [Chunk(**orjson.loads(line)) for line in rows]
    return [Chunk(**(orjson.loads(line) | NO_TEXT)) for line in rows]


def chunk_ids(directory: Path, manifest: Manifest) -> ChunkIds:
    """Read only the chunk ids of the committed generation's table, in its order.

    Held compactly as they are read (:class:`ChunkIds`): no list of every id as Python strings,
    which a task opening the vectors would turn into that form anyway.
    """
    path = manifest.path(directory, "chunks")
    try:
        return ChunkIds(scan_ids(path))
    except (OSError, ValueError, TypeError, KeyError) as err:
        raise IndexStateError(
            f"{path} is missing or damaged: {err}", tables_hint(directory)
        ) from err


def write_chunks(
    path: Path,
    chunks: Sequence[Chunk],
    previous: ChunkTable | None = None,
    fresh: Collection[str] = (),
) -> None:
    """Write a chunk table, one JSON object per line (orjson: 5x json.dumps of asdict).

    ``previous``: the last generation's table, whose lines are copied for every chunk but the
    ``fresh`` ones (a write's new and changed chunks): a write's driver reads the chunks it
    keeps without their texts (changes.py), a million chunks' texts being 400 MB it never
    needs. Written through a buffer, so no process holds the whole file.
    """
    with path.open("wb", buffering=1 << 20) as out:
        for chunk in chunks:
            if previous is not None and chunk.id not in fresh:
                out.write(previous.line(chunk.id))
            else:
                out.write(orjson.dumps(chunk) + b"\n")


class WriteTexts:
    """The texts of a write's chunks: a new chunk has its own, a kept one is in the last table."""

    def __init__(
        self, directory: Path, manifest: Manifest, added: Sequence[Chunk], held: bool
    ) -> None:
        """``held``: every chunk given has its text already (a fresh build's)."""
        self.directory, self.manifest, self.held = directory, manifest, held
        self.fresh = {c.id: c for c in added}
        self._table: ChunkTable | None = None

    def lookup(self) -> ChunkTable | None:
        """Return where the kept chunks' texts are looked up; ``None``: in the chunks given."""
        return None if self.held else self.table()

    def table(self) -> ChunkTable:
        """Return the last generation's table (opened once)."""
        if self._table is None:
            self._table = open_chunks(self.directory, self.manifest)
        return self._table

    def before(self, chunks: Sequence[Chunk]) -> list[Chunk]:
        """Return chunks of the last generation with the texts they had there.

        A replaced chunk's id is a new chunk's too: its old text is the table's.
        """
        if self.held or not chunks:
            return list(chunks)
        if self._table is None:  # one pass keeping these: no table of every id (a delete's
            found = chunks_with_ids(self.directory, self.manifest, {c.id for c in chunks})
            return [found[c.id] for c in chunks]  # driver grew 1.65x from 1M to 3M with it)
        return [self._table[c.id] for c in chunks]

    def of(self, chunks: Sequence[Chunk]) -> list[Chunk]:
        """Return ``chunks`` with their texts (a new chunk's own, a kept one's from the table)."""
        if self.held:
            return list(chunks)
        return [self.fresh.get(c.id) or self.table()[c.id] for c in chunks]


def changed_chunks(
    before: Iterable[Chunk], chunks: Iterable[Chunk], replaced: frozenset[str]
) -> tuple[list[Chunk], list[Chunk]]:
    """Return the chunks a write removed and added (a ``replaced`` id: in both).

    A :class:`ChunkScan` of the write's chunks says which: the table is not read for them.
    """
    if isinstance(chunks, ChunkScan):  # a replaced id: removed and added again
        gone = chunks.removed
        return [c for c in before if c.id in gone] if gone else [], list(chunks.added)
    kept = {c.id for c in chunks} - replaced
    known = {c.id for c in before} - replaced
    return [c for c in before if c.id not in kept], [c for c in chunks if c.id not in known]
