"""What `check --repair` reads back from a second copy when a table of the index is lost.

The index keeps two copies of the passages: its tables (chunks, documents, vectors; BM25 is
derived from the chunk texts) and Chroma's rows (each row's vector, text and metadata: the
chunk's document id, title, position, section and its document's fields). When a table is
damaged and Chroma is sound, the table is read back from Chroma; when Chroma is damaged and the
tables are sound, Chroma is written from them (repair.py). Only when both copies of the chunks
or their vectors are lost must the documents be indexed again, and then they are named.

What Chroma does not hold, and a documents table read back from it therefore lacks: each
document's content hash, the time it was indexed and the absolute path of its file (only the
path hits show, relative to the indexed folder). So `hopgraph sync` reads such documents again.
"""

from __future__ import annotations

import shutil
import tempfile
from collections import Counter
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from hopgraph.core.errors import IndexStateError
from hopgraph.graph_store.documents.schema import ROW_SEPARATOR, Chunk, Scalar
from hopgraph.graph_store.stores.chroma_parts import open_store
from hopgraph.graph_store.stores.chunk_table import read_chunks
from hopgraph.graph_store.stores.doc_table import DocumentRecord, read_documents
from hopgraph.graph_store.stores.manifest import Manifest, rebuild_hint
from hopgraph.graph_store.stores.vdb_chroma import GENERATION, ChromaLocation
from hopgraph.graph_store.stores.vector_table import VectorTable

from .check import Problem
from .generations import passages_location

TABLES = ("chunks", "documents", "vectors", "bm25")
CHUNK_KEYS = ("doc_id", "title", "position", "n_chunks", "section", GENERATION)
"""What Chroma's metadata holds of the chunk itself; the rest are its document's fields."""


@dataclass
class Lost:
    """Which tables of the committed generation are damaged, and the problems that say so."""

    tables: set[str] = field(default_factory=set)
    problems: list[Problem] = field(default_factory=list)


def lost_tables(directory: Path, manifest: Manifest, problems: Sequence[Problem]) -> Lost:
    """Return the tables ``problems`` name (a problem names a file or folder of one)."""
    places = {
        "chunks": [manifest.path(directory, "chunks")],
        "documents": [directory / manifest.files["documents"]] if manifest.files.get("documents")
        else [],
        "vectors": [directory / p for p in manifest.vectors],
        "bm25": [manifest.path(directory, "bm25"), *(directory / p for p in manifest.segments)],
    }  # fmt: skip
    lost = Lost()
    for problem in problems:
        named = [Path(w.strip()) for w in problem.where.split(", ")]  # check joins segments
        tables = {
            table
            for table, roots in places.items()
            for where in named
            for root in roots
            if where == root or where.is_relative_to(root)
        }
        if tables:
            lost.tables |= tables
            lost.problems.append(problem)
    return lost


@dataclass
class Salvage:
    """The passages as the repaired generation writes them: chunks, vectors, documents."""

    chunks: list[Chunk]
    vectors: np.ndarray
    records: list[DocumentRecord]
    read_back: list[str]
    """Which tables came from Chroma (the others from their own sound files)."""


def salvage(
    directory: Path, manifest: Manifest, lost: set[str], order: list[str] | None
) -> Salvage:
    """Read every passage from its sound table, or from Chroma where the table is lost.

    ``order``: the chunk ids in the generation's order, from a part that still holds it (the
    graph's nodes); else the vector table's or, with both lost, the ids sorted as a build
    writes them. Raises IndexStateError naming the documents when both copies are lost.
    """
    rows = None
    if lost & {"chunks", "vectors", "documents"}:
        rows = _chroma_rows(directory, manifest)
    if "chunks" in lost:
        assert rows is not None
        ids = order or sorted(rows)  # the graph's order, else the ids'
        missing = [i for i in ids if i not in rows]
        if missing or len(ids) != manifest.counts.get("chunks", len(ids)):
            raise IndexStateError(
                f"the chunk table of {directory} is lost and Chroma does not hold every chunk "
                f"({len(missing)} missing, e.g. {missing[:1]})",
                reindex_hint(directory, manifest),
            )
        chunks = [_chunk(i, *rows[i][1:]) for i in ids]
    else:
        chunks = read_chunks(directory, manifest)
    ids = [c.id for c in chunks]
    if "vectors" in lost:
        assert rows is not None
        vectors = np.stack([rows[i][0] for i in ids]).astype(np.float32)
    else:
        vectors = VectorTable.load(directory, manifest.vectors).matrix(ids)
    if "documents" in lost:
        assert rows is not None
        records = _records(chunks, rows, manifest.updated_at)
    else:
        records = read_documents(directory, manifest, chunks)
    read_back = sorted(lost & {"chunks", "vectors", "documents"})
    return Salvage(chunks, vectors, records, read_back)


Row = tuple[np.ndarray, str, dict]


def _chroma_rows(directory: Path, manifest: Manifest) -> dict[str, Row]:
    """Return the generation's Chroma rows by chunk id: (vector, text, metadata).

    A chunk replaced under its id has its own row (Manifest.rows); rows the generation removed
    and a crash left unpurged, or a later write added, are not the generation's.
    """
    mapped = {row: chunk for chunk, row in manifest.rows.items()}
    purged = set(manifest.purge.get("passages", []))
    out: dict[str, Row] = {}
    with ExitStack() as held:
        store = open_store(_unopened_copy(passages_location(directory, manifest), held))
        held.callback(store.close)
        for ids, vectors, texts, metadatas in store.records():
            for row, vector, text, meta in zip(ids, vectors, texts, metadatas, strict=True):
                generation = int(meta.get(GENERATION, 0))
                if row in purged or generation > manifest.generation:
                    continue
                chunk = mapped.get(row, row)
                if ROW_SEPARATOR in chunk:
                    continue  # a replaced row of another generation
                if chunk in manifest.rows and manifest.rows[chunk] != row:
                    continue  # the old row of a chunk replaced since
                out[chunk] = (np.asarray(vector, dtype=np.float32), text, meta)
    return out


def _unopened_copy(location: ChromaLocation, held: ExitStack) -> ChromaLocation:
    """Return a copy of an embedded store to read (a server's store: itself).

    Opening an embedded store changes its files (it replays its log), which the commit's seal
    would then no longer match: a repair killed after reading would leave the store looking
    damaged, with the table it mends still lost. The copy is opened instead, and removed after.
    """
    if location.path is None:
        return location
    folder = Path(held.enter_context(tempfile.TemporaryDirectory(prefix="hopgraph-salvage-")))
    shutil.copytree(location.path, folder / location.path.name)
    return replace(location, path=folder / location.path.name)


def _chunk(chunk_id: str, text: str, meta: dict) -> Chunk:
    """Return the chunk a Chroma row holds (its section from the path users see)."""
    title = str(meta.get("title", ""))
    section = _section(title, str(meta.get("section", "")))
    place = int(meta.get("position", 0)), int(meta.get("n_chunks", 1))
    return Chunk(chunk_id, str(meta["doc_id"]), title, text, *place, section)


def _section(title: str, path: str) -> str:
    """Invert Chunk.section_path: the headings below the page's title."""
    title = " ".join(title.split())
    if not title or path == title:
        return ""
    return path.removeprefix(title + " > ")


def _records(chunks: Sequence[Chunk], rows: dict[str, Row], stamp: str) -> list[DocumentRecord]:
    """Return each document's record from its first chunk's Chroma row (module docstring)."""
    counts = Counter(c.doc_id for c in chunks)
    first: dict[str, Chunk] = {}
    for chunk in chunks:
        first.setdefault(chunk.doc_id, chunk)
    out = []
    for doc_id, chunk in sorted(first.items()):
        meta = rows[chunk.id][2]
        fields: dict[str, Scalar] = {k: v for k, v in meta.items() if k not in CHUNK_KEYS}
        source = str(fields.pop("source", ""))
        # root "." keeps the source as hits showed it (DocumentRecord.shown_source)
        out.append(DocumentRecord(doc_id, chunk.title, source, "", stamp, counts[doc_id],
                                  fields, "." if source else ""))  # fmt: skip
    return out


def reindex_hint(directory: Path, manifest: Manifest) -> str:
    """Say what must be indexed again, naming the documents, and the rebuild that does it."""
    try:
        names = sorted({r.source or r.id for r in read_documents(directory, manifest, [])})
    except Exception:  # its table is lost too: the rebuild hint says what it can
        names = []
    shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
    which = f"its {len(names)} documents ({shown})" if names else "every document it held"
    return f"index {which} again; {rebuild_hint(directory)}"
