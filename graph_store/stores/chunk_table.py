"""The chunk table of a generation: one JSON object per chunk and line (chunks.jsonl)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from pathlib import Path

import orjson

from hopgraph.core.errors import IndexStateError
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
