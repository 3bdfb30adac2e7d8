"""The chunk table of a generation: one JSON object per chunk and line (chunks.jsonl).

A process that serves an index reads it as a :class:`ChunkTable`: the ids and where each line
starts are in memory, and a chunk is read from the file (core.file_reads) and parsed when it is
looked up (a hit shown, a method's step). Its texts, titles and metadata are never all held as
Python objects: at a million chunks that was 1.5 GB of every serving process, and the whole of
a cluster router's growth. A generation's table is written once and never changed (a write
makes the next generation's), so a lookup reads the bytes the manifest committed.
"""

from __future__ import annotations

import itertools
from array import array
from collections.abc import Iterator, Mapping, Sequence, ValuesView
from pathlib import Path

import numpy as np
import orjson

from hopgraph.core.errors import IndexStateError
from hopgraph.core.file_reads import FileReads
from hopgraph.graph_store.documents.schema import Chunk

from .manifest import Manifest, tables_hint

NO_TEXT = {"text": ""}


def read_chunks(directory: Path, manifest: Manifest, texts: bool = True) -> list[Chunk]:
    """Read the chunk table of an index directory's committed generation.

    Without ``texts``, each chunk's text is left empty: for a process that needs the rest
    only (a cluster's driver, whose tasks read the texts).
    """
    path = manifest.path(directory, "chunks")
    fix = tables_hint(directory)
    try:
        chunks = chunks_in(path, texts)
    except (OSError, ValueError, TypeError) as err:
        raise IndexStateError(f"{path} is missing or damaged: {err}", fix) from err
    expected = manifest.counts.get("chunks")
    if expected is not None and len(chunks) != expected:
        raise IndexStateError(
            f"{path} is damaged: it holds {len(chunks)} chunks, the manifest says {expected}", fix
        )
    return chunks


def open_chunks(directory: Path, manifest: Manifest) -> ChunkTable:
    """Open the committed generation's chunk table, read on demand (see :class:`ChunkTable`)."""
    path = manifest.path(directory, "chunks")
    fix = tables_hint(directory)
    try:
        table = ChunkTable.open(path)
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


class ChunkTable(Mapping[str, Chunk]):
    """A chunk table file as a mapping from chunk id to chunk, each read when looked up.

    Held in memory: the ids in row order, each id's row and each line's start (about 130 bytes
    a chunk, against 1.5 kB as objects). :meth:`scan` reads every chunk in turn without keeping
    them, for the few passes that need the whole corpus (the title index, a filter).
    """

    def __init__(self, path: Path, ids: list[str], starts: np.ndarray):
        self.path, self.ids, self._starts = path, ids, starts
        self._file = FileReads(path)
        self.rows: dict[str, int] = {chunk_id: row for row, chunk_id in enumerate(ids)}

    @classmethod
    def open(cls, path: Path) -> ChunkTable:
        """Read each line's id and start from the file at ``path`` (one pass, no text kept)."""
        ids: list[str] = []
        starts = array("q")
        at = 0
        with path.open("rb") as lines:
            for line in lines:
                if line != b"\n":
                    ids.append(_line_id(line))
                    starts.append(at)
                at += len(line)
        starts.append(at)
        return cls(path, ids, np.frombuffer(starts, dtype=np.int64).copy())

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
        line = self._file.read(int(self._starts[row]), int(self._starts[row + 1]))
        try:
            return Chunk(**orjson.loads(line))
        except (ValueError, TypeError) as err:
            raise IndexStateError(
                f"{self.path} is damaged at chunk row {row}: {err}", tables_hint(self.path.parent)
            ) from err

    def scan(self, texts: bool = True) -> Iterator[Chunk]:
        """Yield every chunk in row order (without ``texts``: each text left empty)."""
        for row in range(len(self.ids)):
            chunk = self.at(row)
            yield chunk if texts else Chunk(**{**_fields(chunk), "text": ""})


class _Scan(ValuesView[Chunk]):
    """A chunk table's values, read in row order instead of looked up id by id."""

    _mapping: ChunkTable

    def __iter__(self) -> Iterator[Chunk]:
        return self._mapping.scan()


def _fields(chunk: Chunk) -> dict[str, object]:
    return {name: getattr(chunk, name) for name in Chunk.__slots__}


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


def chunks_in(
    path: Path, texts: bool = True, start: int = 0, stop: int | None = None
) -> list[Chunk]:
    """Read a chunk table file (or a partition's part of one), line by line (see read_chunks).

    ``start`` / ``stop``: only those rows (a cluster's task reads a range).
    """
    with path.open("rb") as lines:  # no second copy of the whole table
        rows = itertools.islice((line for line in lines if line != b"\n"), start, stop)
        if texts:
            return [Chunk(**orjson.loads(line)) for line in rows]
        return [Chunk(**(orjson.loads(line) | NO_TEXT)) for line in rows]


def chunk_ids(directory: Path, manifest: Manifest) -> list[str]:
    """Read only the chunk ids of the committed generation's table, in its order."""
    path = manifest.path(directory, "chunks")
    try:
        with path.open("rb") as lines:
            return [orjson.loads(line)["id"] for line in lines if line != b"\n"]
    except (OSError, ValueError, TypeError, KeyError) as err:
        raise IndexStateError(
            f"{path} is missing or damaged: {err}", tables_hint(directory)
        ) from err


def write_chunks(path: Path, chunks: Sequence[Chunk]) -> None:
    """Write a chunk table, one JSON object per line (orjson: 5x json.dumps of asdict)."""
    # each line joined to its newline at once: collecting orjson's outputs first is 2x slower
    path.write_bytes(b"".join(orjson.dumps(c) + b"\n" for c in chunks))
