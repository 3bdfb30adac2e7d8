"""A build's partitions: the corpus cut by document, and what one partition writes.

Each partition is a range of whole documents in id order, of about equal text. The driver
hands a task its documents, or, for a JSONL corpus, only where their lines are (catalog.py):
the task reads them itself. It chunks and embeds its documents and writes its own files into
the generation folder, under ``pNNNN/``: a vector-table segment (with its IVF when large
enough), a BM25 segment of term counts, and its parts of the chunk and document tables. It
returns what the driver's reduce needs and no vectors, texts nor ids: its counts, and the BM25
counts behind the global statistics (document frequencies and total length). A retried task
removes its folder and starts over, so a partition is written once whatever failed before.

Chroma's rows: one task a partition, each its own collection. Chroma keeps a collection's HNSW
in the memory of the process that writes it, and an embedded store takes one writer. So each
partition's rows go into a collection of their own (the partitioned location's part:
graph_store/stores/chroma_parts.py), written by a task of their own after the partition's
(:func:`write_rows`): in parallel, each holding 1/P of the HNSW, none on the driver. The driver
journalled the partitioned collection first, so a failed build drops every part.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import resource
import shutil
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

import numpy as np

from hopgraph.core.errors import InputError
from hopgraph.core.settings import IndexSettings
from hopgraph.graph_store.documents.catalog import Catalog, LineSlice, id_order, text_size
from hopgraph.graph_store.documents.schema import Document
from hopgraph.graph_store.embedding.embedders import embedder_for
from hopgraph.graph_store.index import writes
from hopgraph.graph_store.index.generations import drop_collection
from hopgraph.graph_store.stores.chunk_table import chunks_in, write_chunks
from hopgraph.graph_store.stores.doc_table import DocumentTable, records_of
from hopgraph.graph_store.stores.kdb_bm25 import Segment
from hopgraph.graph_store.stores.vdb_chroma import ChromaLocation, ChromaVectorStore
from hopgraph.graph_store.stores.vector_table import VECTORS_FILE, VectorSegment

VECTORS, BM25_SEGMENT, CHUNKS_PART = "vectors", "bm25-segment", "chunks.jsonl"
DOCUMENTS_PART = "documents.jsonl"
CHROMA_VECTORS = "chroma-vectors.npy"
"""The float32 vectors for Chroma when the table keeps float16 ones (removed by the reduce)."""


def cut(order: np.ndarray, sizes: Sequence[int] | np.ndarray, count: int) -> list[np.ndarray]:
    """Cut documents into ``count`` ranges in id order, of about equal text (``sizes``).

    ``order``: the documents' places in id order (``id_order``). Returns each range as the
    documents' places.
    """
    if count < 1:
        raise InputError(f"--partitions {count}: give 1 or more")
    if count > len(order):
        raise InputError(
            f"--partitions {count} is more than the corpus's {len(order)} documents",
            "a partition holds whole documents: give at most one per document",
        )
    totals = np.cumsum(np.asarray(sizes, dtype=np.int64)[order])
    cuts, last = [], 0
    for part in range(1, count):
        at = int(np.searchsorted(totals, totals[-1] * part / count, side="right"))
        at = min(max(at, last + 1), len(order) - (count - part))
        cuts.append(at)
        last = at
    return [order[a:b] for a, b in pairwise([0, *cuts, len(order)])]


def plan(docs: Sequence[Document], count: int) -> list[list[Document]]:
    """Cut ``docs`` into ``count`` ranges of whole documents in id order, of about equal text."""
    places = cut(id_order([d.id for d in docs]), [text_size(d) for d in docs], count)
    return [[docs[i] for i in part] for part in places]


def plan_catalog(catalog: Catalog, count: int) -> list[LineSlice]:
    """Cut a located corpus as :func:`plan` does; each part is the lines its task reads."""
    return [catalog.slice(part) for part in cut(catalog.order, catalog.sizes, count)]


Part = list[Document] | LineSlice
"""A partition's documents: given, or lines of the corpus file its task reads."""


@dataclass(frozen=True)
class Written:
    """What a partition's task wrote and tells the driver."""

    number: int
    path: str
    """Its folder, relative to the index: ``gNNNNNN/pNNNN``."""
    chunks: int
    """Its chunks (its part of the chunk table holds them, sorted by id)."""
    documents: int
    """Its documents that have chunks (its document table part holds them all, by id)."""
    df: dict[str, int]
    total_length: float
    embedder: dict[str, str | int]
    embed_seconds: float
    peak_rss_mb: float
    """The peak resident memory of the worker process that wrote it."""

    @property
    def vectors(self) -> str:
        """Return its vector segment's folder, relative to the index."""
        return f"{self.path}/{VECTORS}"

    @property
    def bm25(self) -> str:
        """Return its BM25 segment's folder, relative to the index."""
        return f"{self.path}/{BM25_SEGMENT}"


def write_partition(
    number: int, part: Part, root: str, folder: str, settings: IndexSettings, stamp: str
) -> Written:
    """Chunk, embed and write one partition into ``root / folder``; return what it wrote."""
    path = f"{folder}/p{number:04d}"
    where = Path(root) / path
    shutil.rmtree(where, ignore_errors=True)  # a retry starts over
    docs = part.documents() if isinstance(part, LineSlice) else part
    embedder = embedder_for(settings)
    chunks = sorted(writes.chunk_documents(docs, settings, embedder), key=lambda c: c.id)
    started = time.perf_counter()
    vectors = writes.embed_chunks(chunks, embedder, False)
    embed_seconds = time.perf_counter() - started
    ids = [c.id for c in chunks]
    VectorSegment(f"{path}/{VECTORS}", ids, vectors).save(Path(root), settings.vector_dtype)
    if settings.vector_dtype != "float32":  # Chroma keeps the vectors as embedded
        np.save(where / CHROMA_VECTORS, np.asarray(vectors, dtype=np.float32))
    del vectors
    segment = Segment.build(chunks)
    segment.save(where / BM25_SEGMENT)
    write_chunks(where / CHUNKS_PART, chunks)
    records = records_of(docs, chunks, stamp)
    DocumentTable.of(records).write(where / DOCUMENTS_PART)
    return Written(
        number,
        path,
        len(ids),
        sum(1 for r in records if r.chunks),
        segment.document_frequencies(np.ones(len(chunks), dtype=bool)),
        float(segment.lengths.sum()),
        {"name": embedder.name, "dimension": embedder.dimension},
        embed_seconds,
        peak_rss_mb(),
    )


def peak_rss_mb() -> float:
    """Return this process's own peak resident memory in MB (since :func:`reset_peak_rss`).

    Linux's VmHWM, the peak of this program's memory: ``ru_maxrss`` carries its parent's peak
    across ``exec``, so a build started by a process that had made a million passages read
    915 MB where its own peak was a fraction of it. Elsewhere, ``ru_maxrss``.
    """
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/status").read_text(encoding="ascii").splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 1024**2 if sys.platform == "darwin" else peak / 1024


def reset_peak_rss() -> None:
    """Start this process's peak RSS afresh (Linux), so a reused worker reports each task's own.

    Writing 5 to /proc/self/clear_refs resets VmHWM; elsewhere nothing is reset and
    :func:`peak_rss_mb` gives the process's lifetime peak.
    """
    with contextlib.suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5", encoding="ascii")


def release_heap() -> None:
    """Give back to the system what this process freed but the C heap still holds (Linux).

    A worker runs many tasks in turn: the small blocks one frees stay in glibc's heap for reuse,
    so the next task on that worker starts, and peaks, above what it holds itself. Python's
    cycles are collected first, then ``malloc_trim`` returns the heap's free pages; elsewhere
    (another C library) only the collection.
    """
    gc.collect()
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL("libc.so.6").malloc_trim(0)


def rss_mb() -> float:
    """Return this process's resident memory now, in MB (Linux; 0 elsewhere)."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * resource.getpagesize() / 1024**2
    except OSError:
        return 0.0


def write_rows(root: str, path: str, location: ChromaLocation, generation: int) -> float:
    """Create ``location``'s collection and upsert the partition at ``path`` into it.

    Returns the task's peak RSS (MB). A retried task (its worker died) drops what the last try
    created and starts over.
    """
    reset_peak_rss()
    drop_collection(location)
    store = ChromaVectorStore(location, create=True)
    try:
        where = Path(root) / path
        chunks = chunks_in(where / CHUNKS_PART)
        kept = where / CHROMA_VECTORS
        vectors = np.load(kept if kept.is_file() else where / VECTORS / VECTORS_FILE)
        records = DocumentTable.read_file(where / DOCUMENTS_PART).records()
        fields = writes.document_fields(records, chunks)
        store.upsert(chunks, np.asarray(vectors, dtype=np.float32), generation, fields)
    finally:
        store.close()
    return peak_rss_mb()
