"""What every write shares: chunking and embedding, the tables, the commit of a change.

A write (``build``, ``changes``) puts the chunk and document tables, the vector table and BM25
into its generation's folder (``write_tables``: a forked child for a change), upserts its rows
into Chroma, brings the graphs up to date (graph_build) and commits the manifest that names it
all (``commit_change``).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np

from hopgraph.core.errors import InputError
from hopgraph.core.forked import Forked
from hopgraph.core.id_lists import ChunkIds
from hopgraph.core.settings import IndexSettings
from hopgraph.core.threads import in_process
from hopgraph.graph_store.documents.chunking import chunk_document
from hopgraph.graph_store.documents.schema import Chunk, Document, row_id
from hopgraph.graph_store.embedding.embedders import Embedder, embed_with_progress
from hopgraph.graph_store.stores.chroma_parts import upsert_rows
from hopgraph.graph_store.stores.chunk_table import ChunkScan, ids_of, open_chunks, write_chunks
from hopgraph.graph_store.stores.doc_table import (
    DOCUMENTS_FILE,
    DocumentChange,
    DocumentRecord,
    DocumentTable,
)
from hopgraph.graph_store.stores.kdb_bm25 import BM25Store
from hopgraph.graph_store.stores.manifest import (
    FORMAT_VERSION,
    TRIPLE_VECTORS,
    Manifest,
    now,
    package_versions,
)
from hopgraph.graph_store.stores.vector_table import VectorTable

from .generations import Generation, folder_name, passages_location
from .graph_build import Chunks, GraphSettings, GraphTasks, write_graphs
from .stored_vectors import read_vectors


@dataclass(frozen=True)
class WriteReport:
    """What a write did."""

    directory: Path
    documents: int
    chunks: int
    added_chunks: int
    removed_chunks: int
    seconds: float
    embed_seconds: float
    driver_peak_rss_mb: float | None = None
    """A cluster write's driver (this process) at its peak; None for one process's write."""
    task_peak_rss_mb: float | None = None
    """A cluster write's largest task at its peak (a partition's, or a Chroma rows task's)."""


def write_report(
    directory: Path,
    chunks: Chunks,
    added: int,
    removed: int,
    started: float,
    embed_seconds: float,
) -> WriteReport:
    """Return what a write did, timed from ``started``."""
    counts = counts_of(chunks)
    return WriteReport(
        directory=directory,
        documents=counts["documents"],
        chunks=counts["chunks"],
        added_chunks=added,
        removed_chunks=removed,
        seconds=time.perf_counter() - started,
        embed_seconds=embed_seconds,
    )


def chunk_documents(
    docs: Sequence[Document], settings: IndexSettings, embedder: Embedder
) -> list[Chunk]:
    """Chunk every document, checking that chunk ids stay unique."""
    chunks = [
        c for d in docs for c in chunk_document(d, settings.chunk_tokens, embedder.count_tokens)
    ]
    ids = [c.id for c in chunks]
    if len(set(ids)) != len(ids):
        raise ids_collide()
    return chunks


def ids_collide() -> InputError:
    """Return the error of two chunks with one id (a document id like ``other-id#N``)."""
    return InputError(
        "chunk ids collide with document ids (a document id looks like 'other-id#N')",
        "rename those documents",
    )


def embed_chunks(chunks: Sequence[Chunk], embedder: Embedder, show_progress: bool) -> np.ndarray:
    r"""Embed chunk texts ("title\\ntext") with a progress bar."""
    return embed_with_progress(embedder, [c.embed_text for c in chunks], show_progress)


def commit_change(
    directory: Path,
    old: Manifest,
    before: Chunks,
    after: Chunks,
    documents: DocumentTable | DocumentChange,
    show_progress: bool,
    added: Sequence[Chunk] = (),
    embeddings: np.ndarray | None = None,
    removed: Sequence[str] = (),
    replaced: Sequence[str] = (),
    tasks: GraphTasks | None = None,
) -> Manifest:
    """Commit a change of passages as the next generation: rows, tables and graphs.

    Added rows go into the live collection tagged with the new generation; removed ones are
    listed for purging after the commit. ``replaced``: added chunks whose ids ``before`` had
    (a changed document's): their new rows get new ids (Manifest.rows), so that the previous
    generation's readers, and a rollback, keep the old rows, purged after the commit. The
    graphs, when the index has them, are brought up to date from the previous generation's.
    """
    run = tasks.stores if tasks is not None and tasks.stores is not None else in_process
    with Generation(directory, old, run) as gen:
        manifest = successor_manifest(old, after)
        tables = write_tables(gen, manifest, after, documents, added, embeddings, (old, before))
        gone = {*removed, *replaced}
        manifest.rows = {c: r for c, r in old.rows.items() if c not in gone}
        manifest.rows.update({c: row_id(c, gen.number) for c in replaced})
        manifest.purge = {"passages": [old.row_of(c) for c in (*removed, *replaced)]}
        with tables:
            # after the tables' child is forked: Chroma holds the GIL for seconds at a million
            # rows, and the child writes meanwhile
            if added:
                assert embeddings is not None
                fields = document_fields(documents.records(c.doc_id for c in added), added)
                location = passages_location(directory, old)
                run(upsert_rows, [(location, added, embeddings, gen.number, fields, manifest.rows)])
            if old.graph:
                settings = GraphSettings.model_validate(old.graph["settings"])
                write_graphs(
                    gen,
                    directory,
                    old,
                    manifest,
                    before,
                    after,
                    settings,
                    show_progress,
                    False,
                    frozenset(replaced),
                    tasks,
                    tables.result,
                )
            manifest.segments, manifest.vectors, manifest.ann = tables.result()
        gen.commit(manifest)
    return manifest


def document_fields(records: Sequence[DocumentRecord], chunks: Sequence[Chunk]) -> dict[str, dict]:
    """Return the metadata of the ``chunks``' documents for their Chroma rows."""
    wanted = {c.doc_id for c in chunks}
    return {r.id: r.fields() for r in records if r.id in wanted}


def counts_of(chunks: Chunks) -> dict[str, int]:
    """Return the manifest's counts of chunks: documents and chunks (a scan's, as it says)."""
    if isinstance(chunks, ChunkScan) and chunks.documents is not None:
        return {"documents": chunks.documents, "chunks": len(chunks)}
    return {"documents": len({c.doc_id for c in chunks}), "chunks": len(chunks)}


def successor_manifest(old: Manifest, chunks: Chunks | None) -> Manifest:
    """Return the next generation's manifest: the old one with new counts, nothing purged.

    ``chunks``: the next generation's; ``None``: the same as the old one's (a graph build).
    """
    manifest = old.model_copy(deep=True)
    manifest.format_version = FORMAT_VERSION
    manifest.files = {part: str(old.path(Path(), part)) for part in ("chunks", "bm25", "graph")}
    for part in ("documents", TRIPLE_VECTORS):  # the triple table: until the graphs' write
        if part in old.files:
            manifest.files[part] = old.files[part]
    if chunks is not None:
        manifest.counts = counts_of(chunks)
    manifest.versions = package_versions()
    manifest.updated_at = now()
    manifest.purge = {}
    return manifest


class Tables(NamedTuple):
    """What a write's tables' work gives back: the BM25 and the vector segments to keep."""

    bm25: list[str]
    vectors: list[str]
    ann: dict[str, str]


def write_tables(
    gen: Generation,
    manifest: Manifest,
    chunks: Chunks,
    documents: DocumentTable | DocumentChange,
    added: Sequence[Chunk],
    embeddings: np.ndarray | None,
    previous: tuple[Manifest, Chunks] | None = None,
) -> Forked[Tables]:
    """Write the chunk and document tables, the vectors and BM25 into the generation's folder.

    ``added``: the write's new chunks (all of them for a build), ``embeddings`` their vectors;
    only theirs need texts. ``previous``: the last generation's manifest and chunks (the kept
    chunks' lines are copied from its table); BM25 and the vector table then get
    a segment of the added chunks only (when that generation has segments to keep). The added
    vectors are saved here, and ``manifest`` points at the segments the graphs read them from;
    for a change, a forked child writes the rest (merging segments when there are too many)
    while the write updates its graphs. Its result gives the segments to commit.
    """
    name = folder_name(gen.number)
    root = gen.folder.parent
    manifest.vectors = appended_vectors(
        root, f"{name}/vectors", chunks, added, embeddings, previous, manifest.settings.vector_dtype
    )
    known = previous[0].ann if previous is not None else {}

    def work() -> Tables:
        # the kept chunks' lines come from the last table: a write reads them without texts
        kept = open_chunks(root, previous[0]) if previous is not None else None
        write_chunks(gen.folder / "chunks.jsonl", chunks, kept, {c.id for c in added})
        documents.write(gen.folder / DOCUMENTS_FILE)
        segment = f"{name}/bm25-segment"
        if previous is not None and previous[0].segments:
            assert kept is not None
            store = BM25Store.load(previous[0].path(root, "bm25"), root, kept)
            store = store.updated(chunks, added, root, segment)
        else:
            store = BM25Store.build(chunks, root, segment)
        store.save(gen.folder / "bm25")
        bm25 = list(store.paths)
        del store, kept  # their ids go before the vectors' own are read
        vectors = VectorTable.load(root, manifest.vectors)
        merged = vectors.compacted(ChunkIds(ids_of(chunks)), root, f"{name}/vectors-merged")
        ann = VectorTable.ann_files(root, merged.paths, known)
        return Tables(bm25, merged.paths, ann)

    tables = Forked("writing the chunk and document tables and BM25", work, previous is not None)
    manifest.files.update(
        {
            "chunks": f"{name}/chunks.jsonl",
            "bm25": f"{name}/bm25",
            "documents": f"{name}/{DOCUMENTS_FILE}",
        }
    )
    return tables


def appended_vectors(
    root: Path,
    path: str,
    chunks: Chunks,
    added: Sequence[Chunk],
    embeddings: np.ndarray | None,
    previous: tuple[Manifest, Chunks] | None,
    dtype: str,
) -> list[str]:
    """Save the added chunks' vectors as a segment of the vector table; return its segments.

    A write opens none of the previous segments (the tables' child does, to merge them).
    """
    new = [c.id for c in added]
    vectors = embeddings if embeddings is not None else np.zeros((0, 0), dtype=np.float32)
    if previous is None:
        return VectorTable.build(new, vectors, root, path, dtype).paths
    old = previous[0]
    if old.vectors:
        return VectorTable.appended_to(root, old.vectors, new, vectors, path)
    # Written before the vector table: its vectors (the added ones upserted) come from Chroma once.
    listed = list(chunks)
    return VectorTable.build(
        [c.id for c in listed], read_vectors(root, old, listed), root, path, dtype
    ).paths
