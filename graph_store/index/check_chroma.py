"""Chroma's part of `hopgraph check`: its files, its rows against the index's own tables, answers.

Chroma keeps a copy of what the index knows (every chunk's vector, text and document id), and
its own library reads damaged files without complaint more often than not: a byte flipped in
a vector, or an HNSW file cut short, gave answers and no error. So the check reads for itself:

- the files (an embedded store): SQLite's ``PRAGMA quick_check`` of chroma.sqlite3, and each
  HNSW segment's header against the sizes of its other files and the collection's settings;
- every row the generation reads, against the vector table (vector), the chunk table (text)
  and the document table (document id);
- a sample of chunks searched by their own vector: each must come back first.

An index whose last write sealed its store (graph_store.stores.chroma_seal) is checked against the
seal instead, without opening the store: that sees every changed byte, read or not.

It runs in a forked child process (graph_store.stores.chroma_child): a native library that crashes
on a damaged file takes the child down, not the check, which names it.
"""

from __future__ import annotations

import math
import pickle
import shutil
import sqlite3
import struct
import tempfile
from contextlib import closing
from pathlib import Path
from typing import Any

import numpy as np

from hopgraph.core.errors import IndexStateError
from hopgraph.graph_store.documents.schema import Chunk
from hopgraph.graph_store.stores import chroma_seal
from hopgraph.graph_store.stores.chunk_table import read_chunks
from hopgraph.graph_store.stores.manifest import Manifest, read_manifest
from hopgraph.graph_store.stores.vdb_chroma import HNSW, ChromaLocation, ChromaVectorStore
from hopgraph.graph_store.stores.vector_table import VectorTable

from .generations import passages_location, write_under_way

HNSW_FILES = ("header.bin", "data_level0.bin", "length.bin", "link_lists.bin")
"""An HNSW segment's files (length.bin holds the vectors' norms in Chroma's hnswlib)."""
SAMPLE_QUERIES = 16
TOLERANCE = 1e-4
"""Largest difference allowed between a stored vector and the vector table's."""


def chroma_problems(directory: Path) -> list[str]:
    """Return what is wrong with the Chroma store of the index at ``directory`` (in process)."""
    manifest = read_manifest(directory)
    if manifest.chroma_files and not write_under_way(directory, manifest):
        return chroma_seal.broken(directory, manifest)  # opening the store would change it
    location = passages_location(directory, manifest)
    if location.path is not None:
        found = store_file_problems(location, manifest)
        if found:
            return found  # the client would read what is damaged, or mend it without a word
    try:
        chunks = read_chunks(directory, manifest)
        table = VectorTable.load(directory, manifest.vectors)
        expected = table.matrix([c.id for c in chunks])
    except (IndexStateError, OSError, ValueError):
        return []  # nothing to compare with: the check names the damaged table itself
    if location.parts:
        return partitioned_problems(location, manifest, chunks, expected)
    store = ChromaVectorStore(location)
    try:
        return row_problems(store, manifest, chunks, expected) or query_problems(
            store, manifest, chunks, expected
        )
    finally:
        store.close()


def store_file_problems(location: ChromaLocation, manifest: Manifest) -> list[str]:
    """Check the files of an embedded store, each folder for the collections it holds.

    A partitioned store's partitions have a folder each; the triple vectors (the GEAR methods')
    live in the store's own folder.
    """
    held: dict[Path, list[str]] = {}
    for part in location.each():
        assert part.path is not None
        held.setdefault(part.path, []).append(part.collection)
    if (manifest.graph or {}).get("settings", {}).get("embed_triples"):
        assert location.path is not None
        held.setdefault(location.path, []).append(location.triples().collection)
    return [p for folder, names in held.items() for p in file_problems(folder, names, manifest)]


def _read_database(database: Path) -> tuple[list[str], dict[str, str]]:
    """Return SQLite's quick_check verdict and each collection's vector segment, read-only.

    A write killed mid-transaction leaves a hot rollback journal, which SQLite must play back
    before it reads, and a read-only connection cannot ("attempt to write a readonly
    database"). The next write plays it back (its recovery opens the store); `check` reads a
    copy of the database and its journal instead, leaving the index's files as they are.
    """
    journal = database.with_name(database.name + "-journal")
    if journal.is_file() and journal.stat().st_size:
        with tempfile.TemporaryDirectory(prefix="hopgraph-check-") as tmp:
            copy = Path(tmp) / database.name
            shutil.copyfile(database, copy)
            shutil.copyfile(journal, copy.with_name(journal.name))
            return _query(f"file:{copy}")
    return _query(f"file:{database}?mode=ro")


def _query(uri: str) -> tuple[list[str], dict[str, str]]:
    with closing(sqlite3.connect(uri, uri=True)) as db:
        verdict = [row[0] for row in db.execute("PRAGMA quick_check")]
        segments = dict(
            db.execute(
                "SELECT c.name, s.id FROM segments s JOIN collections c "
                "ON s.collection = c.id WHERE s.scope = 'VECTOR'"
            ).fetchall()
        )
    return verdict, segments


def file_problems(folder: Path, names: list[str], manifest: Manifest) -> list[str]:
    """Check chroma.sqlite3's pages and the HNSW segment files of the collections ``names``."""
    database = folder / "chroma.sqlite3"
    if not database.is_file():
        return [f"{database} is missing"]
    try:
        verdict, segments = _read_database(database)
    except sqlite3.DatabaseError as err:
        return [f"{database} is damaged: {err}"]
    if verdict != ["ok"]:
        return [f"{database} is damaged: {'; '.join(verdict[:3])}"]
    lost = [name for name in names if name not in segments]
    if lost:
        return [f"{database} has no vector segment for collection {', '.join(lost)}"]
    dimension = int(manifest.embedder["dimension"])
    return [p for name in names for p in hnsw_problems(folder / segments[name], dimension)]


def partitioned_problems(
    location: ChromaLocation, manifest: Manifest, chunks: list[Chunk], expected: np.ndarray
) -> list[str]:
    """Check a partitioned store a partition at a time (no process holds every HNSW).

    Each partition's rows are compared with the tables as they are read; each partition's
    index must find a spread of its own rows by their own vectors; every chunk must have a row.
    """
    position = {manifest.row_of(c.id): i for i, c in enumerate(chunks)}
    problems: dict[str, str] = {}
    seen = np.zeros(len(chunks), dtype=bool)
    for part in location.each():
        store = ChromaVectorStore(part)
        try:
            held: list[int] = []
            for rows, vectors, texts, metas in store.records():
                for row, vector, text, meta in zip(rows, vectors, texts, metas, strict=True):
                    at = position.get(row)
                    if at is None:
                        continue  # another generation's row, not yet purged
                    seen[at] = True
                    held.append(at)
                    _compare(problems, chunks[at], vector, expected[at], text, meta)
            lost = query_problems(store, manifest, [chunks[i] for i in held], expected[held])
            if lost:
                problems.setdefault("query", f"partition {part.collection}: {lost[0]}")
        finally:
            store.close()
    if not seen.all():
        missing = chunks[int(np.argmin(seen))].id
        problems.setdefault("missing", f"no row for chunk {missing!r} in any partition")
    return list(problems.values())


def _compare(
    problems: dict[str, str],
    chunk: Chunk,
    vector: np.ndarray,
    expected: np.ndarray,
    text: str,
    meta: dict | None,
) -> None:
    """Note the first row whose vector, text or document differs from the tables'."""
    if float(np.abs(np.asarray(vector, dtype=np.float32) - expected).max()) > TOLERANCE:
        problems.setdefault("vector", f"the vector of {chunk.id!r} is not the table's")
    if text != chunk.text or (meta or {}).get("doc_id") != chunk.doc_id:
        problems.setdefault("text", f"the text or document of {chunk.id!r} differs")


def hnsw_problems(segment: Path, dimension: int) -> list[str]:
    """Check an HNSW segment's header against its files and the collection's settings.

    The header (format 1, 100 bytes): version, offsetLevel0, max_elements, cur_element_count,
    size_data_per_element, label_offset, offsetData, maxlevel, enterpoint_node, maxM, maxM0,
    M, mult, ef_construction.
    """
    if not segment.is_dir():
        return []  # not written yet: Chroma builds it from its log
    missing = [name for name in HNSW_FILES if not (segment / name).is_file()]
    if missing:
        return [f"{segment} lacks {', '.join(missing)}"]
    raw = (segment / "header.bin").read_bytes()
    if len(raw) != 100:
        return [f"{segment / 'header.bin'} is {len(raw)} bytes, not 100"]
    version, *sizes = struct.unpack_from("<I6Q", raw)
    level0, most, count, per_element, label_at, data_at = sizes
    max_level, entry = struct.unpack_from("<iI", raw, 52)
    max_m, max_m0, m = struct.unpack_from("<3Q", raw, 60)
    (mult,) = struct.unpack_from("<d", raw, 84)
    (ef_construction,) = struct.unpack_from("<Q", raw, 92)
    expected_m = HNSW["max_neighbors"]
    data_size = (segment / "data_level0.bin").stat().st_size
    norms_size = (segment / "length.bin").stat().st_size
    checks = {
        "format version": version == 1 and level0 == 0,
        "element count": count <= most,
        "neighbour settings": (max_m, max_m0, m) == (expected_m, 2 * expected_m, expected_m),
        "layout": data_at == 4 + 4 * max_m0
        and label_at == data_at + 4 * dimension
        and per_element == label_at + 8,
        "level factor": m > 1 and math.isclose(mult, 1 / math.log(m), rel_tol=1e-9),
        "construction setting": ef_construction == HNSW["ef_construction"],
        "entry point": (max_level == -1 and entry == 0xFFFFFFFF)
        if count == 0
        else (0 <= max_level < 64 and entry < count),
        # Chroma writes either the elements or the whole capacity
        "data_level0.bin size": data_size in (count * per_element, most * per_element),
        "length.bin size": norms_size in (4 * count, 4 * most),
    }
    wrong = [name for name, holds in checks.items() if not holds]
    if wrong:
        return [f"HNSW segment {segment} is damaged: its {', '.join(wrong)} do not agree"]
    return _element_problems(segment, count, per_element, data_at, label_at, max_m0, max_m)


def _element_problems(
    segment: Path,
    count: int,
    per_element: int,
    data_at: int,
    label_at: int,
    max_m0: int,
    max_m: int,
) -> list[str]:
    """Check the stored elements: neighbour lists within bounds, vectors of unit length."""
    if count == 0:
        return []  # past the elements the files hold whatever memory held: nothing to check
    labels = _label_problems(segment, count) or _upper_level_problems(segment, count, max_m)
    if labels:
        return labels
    data = np.fromfile(segment / "data_level0.bin", dtype=np.uint8, count=count * per_element)
    used = data.reshape(count, per_element)
    sizes = used[:, :4].copy().view("<u4")[:, 0] & 0xFFFF
    neighbours = used[:, 4:data_at].copy().view("<u4")
    listed = np.where(np.arange(max_m0)[None, :] < sizes[:, None], neighbours, 0)
    if (sizes > max_m0).any() or (listed >= count).any():
        return [f"HNSW segment {segment} is damaged: a neighbour list points past its elements"]
    norms = np.linalg.norm(used[:, data_at:label_at].copy().view("<f4"), axis=1)
    recorded = np.fromfile(segment / "length.bin", dtype="<f4", count=count)
    # cosine space: Chroma stores unit vectors, and their norms (1) in length.bin
    if not (np.allclose(norms, 1.0, atol=1e-3) and np.allclose(recorded, 1.0, atol=1e-3)):
        return [f"HNSW segment {segment} is damaged: a stored vector is not of unit length"]
    return []


def _upper_level_problems(segment: Path, count: int, max_m: int) -> list[str]:
    """Walk link_lists.bin: per element, a byte size then that many bytes of levels' lists.

    Each level's list is a neighbour count and ``max_m`` ids: the sizes are multiples of its
    length, the counts at most ``max_m``, the ids those of elements; the walk ends at the end.
    """
    words = np.fromfile(segment / "link_lists.bin", dtype="<u4")
    level = 4 + 4 * max_m
    at = 0
    for _ in range(count):
        if at >= len(words):
            return [f"HNSW segment {segment} is damaged: link_lists.bin ends early"]
        size, at = int(words[at]), at + 1
        if size % level or at + size // 4 > len(words):
            return [f"HNSW segment {segment} is damaged: link_lists.bin has a bad list size"]
        lists = words[at : at + size // 4].reshape(-1, 1 + max_m)
        at += size // 4
        width = np.arange(max_m)[None, :]
        if (lists[:, 0] > max_m).any() or (
            np.where(width < lists[:, :1], lists[:, 1:], 0) >= count
        ).any():
            return [
                f"HNSW segment {segment} is damaged: an upper-level list points past its elements"
            ]
    if at != len(words):
        return [f"HNSW segment {segment} is damaged: link_lists.bin is longer than its lists"]
    return []


class _PlainData(pickle.Unpickler):
    """Unpickle dicts, strings and numbers only: the labels file names no other type."""

    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"it names {module}.{name}, not plain data")


def _label_problems(segment: Path, count: int) -> list[str]:
    """Check index_metadata.pickle: each element's label and row id, both ways round."""
    path = segment / "index_metadata.pickle"
    try:
        with path.open("rb") as file:
            meta = _PlainData(file).load()
        to_label, to_id = meta["id_to_label"], meta["label_to_id"]
        total = meta["total_elements_added"]
    except (OSError, EOFError, pickle.UnpicklingError, KeyError, TypeError, ValueError) as err:
        return [f"{path} is missing or damaged: {type(err).__name__}: {err}"]
    both_ways = all(to_id.get(label) == row for row, label in to_label.items())
    if not (both_ways and len(to_label) == len(to_id) <= count == total):
        return [f"{path} is damaged: its labels and row ids do not agree with each other"]
    return []


def row_problems(
    store: ChromaVectorStore, manifest: Manifest, chunks: list[Chunk], expected: np.ndarray
) -> list[str]:
    """Compare every row the generation reads with the vector, chunk and document tables."""
    rows = [manifest.row_of(c.id) for c in chunks]
    problems: dict[str, str] = {}
    for start in range(0, len(rows), 2000):
        batch = rows[start : start + 2000]
        got = store.collection.get(ids=batch, include=["embeddings", "documents", "metadatas"])
        held = {
            row: (np.asarray(vector, dtype=np.float32), text, meta)
            for row, vector, text, meta in zip(
                got["ids"], got["embeddings"], got["documents"], got["metadatas"], strict=True
            )
        }
        for offset, row in enumerate(batch):
            chunk = chunks[start + offset]
            if row not in held:
                problems.setdefault("missing", f"no row for chunk {chunk.id!r}")
                continue
            vector, text, meta = held[row]
            _compare(problems, chunk, vector, expected[start + offset], text, meta)
    return list(problems.values())


def query_problems(
    store: ChromaVectorStore, manifest: Manifest, chunks: list[Chunk], expected: np.ndarray
) -> list[str]:
    """Search a spread of chunks by their own vectors: each must come back among the first."""
    if not chunks:
        return []
    picks = sorted({round(i) for i in np.linspace(0, len(chunks) - 1, SAMPLE_QUERIES)})
    found = store.collection.query(
        query_embeddings=expected[picks], n_results=min(10, len(chunks)), include=[]
    )["ids"]
    lost = [
        chunks[p].id
        for p, ids in zip(picks, found, strict=True)
        if manifest.row_of(chunks[p].id) not in ids
    ]
    if lost:
        return [f"its index does not find {len(lost)} of {len(picks)} chunks by their own vector"]
    return []


def findings(directory: Path) -> list[str]:
    """Return :func:`chroma_problems`, or the failure of reading Chroma as the one finding."""
    try:
        return chroma_problems(directory)
    except Exception as err:  # a damaged store fails in Chroma's own way: that is the finding
        message = getattr(err, "message", None)  # Chroma's errors have it as a method
        message = message() if callable(message) else message
        message = message or f"{type(err).__name__}: {err}"
        return [f"reading it failed: {message}"]
