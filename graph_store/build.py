"""The write side of an index directory: build, add documents, delete documents, build graphs.

Each write is one generation (hopgraph.graph_store.generations): it adds files in its own folder and
rows tagged with its number to Chroma, in place, and commits by replacing the manifest. So a
write costs what it changes: ``add`` embeds and stores only the new chunks, and the graphs are
brought up to date from the previous generation's (graph_build). An error or a kill at any
moment leaves the previous generation as it was, and the next write cleans up after it.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from hopgraph.core.errors import IndexStateError, InputError
from hopgraph.core.settings import CONFIG_FILE, IndexSettings

from .atomic import paused_gc, write_lock
from .chunk_table import read_chunks, write_chunks
from .chunking import chunk_document
from .doc_table import DOCUMENTS_FILE, DocumentRecord, DocumentTable, records_of
from .documents import Chunk, Document, row_id
from .embedding import Embedder, embed_with_progress, embedder_for
from .forked import Forked
from .generations import (
    CHROMA_DIR,
    Generation,
    drop_collection,
    folder_name,
    passages_location,
    written_by_a_build,
)
from .graph_build import GraphSettings, write_graphs
from .index import read_vectors
from .kdb_bm25 import BM25Store
from .loaders import check_unique_ids, quote_ids
from .manifest import (
    FORMAT_VERSION,
    MANIFEST,
    TRIPLE_VECTORS,
    Manifest,
    now,
    package_versions,
    read_manifest,
)
from .vdb_chroma import ChromaLocation, ChromaVectorStore
from .vector_table import VectorTable


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


def chunk_documents(
    docs: Sequence[Document], settings: IndexSettings, embedder: Embedder
) -> list[Chunk]:
    """Chunk every document, checking that chunk ids stay unique."""
    chunks = [
        c for d in docs for c in chunk_document(d, settings.chunk_tokens, embedder.count_tokens)
    ]
    ids = [c.id for c in chunks]
    if len(set(ids)) != len(ids):
        raise InputError(
            "chunk ids collide with document ids (a document id looks like 'other-id#N')",
            "rename those documents",
        )
    return chunks


def embed_chunks(chunks: Sequence[Chunk], embedder: Embedder, show_progress: bool) -> np.ndarray:
    r"""Embed chunk texts ("title\\ntext") with a progress bar."""
    return embed_with_progress(embedder, [c.embed_text for c in chunks], show_progress)


@paused_gc()
def build_index(
    docs: Sequence[Document],
    directory: str | Path,
    settings: IndexSettings,
    show_progress: bool = True,
    replace: bool = False,
) -> WriteReport:
    """Build a fresh index of ``docs`` in ``directory``.

    An index already there is replaced only when ``replace`` is set (``--force``); the lock is
    held from the start, embedding included, so no other write can slip in and be lost.
    """
    directory = Path(directory)
    if not docs:
        raise InputError("the corpus is empty", "give at least one document")
    check_unique_ids(docs, "corpus")
    _refuse_foreign_directory(directory)
    started = time.perf_counter()
    with write_lock(directory, create=True):
        old = _readable_manifest(directory)
        if (old is not None or (directory / MANIFEST).exists()) and not replace:
            held = f" ({old.counts['documents']} documents)" if old else ""
            raise InputError(
                f"{directory} already holds an index{held}",
                "`hopgraph add` adds documents to it; `hopgraph index --force` replaces it",
            )
        embedder = embedder_for(settings)
        chunks = sorted(chunk_documents(docs, settings, embedder), key=lambda c: c.id)
        t0 = time.perf_counter()
        embeddings = embed_chunks(chunks, embedder, show_progress)
        embed_seconds = time.perf_counter() - t0
        location = _new_location(settings, directory)
        with Generation(directory, old) as gen:
            embedder_info = {"name": embedder.name, "dimension": embedder.dimension}
            manifest = _manifest(settings, embedder_info, location, chunks, created=None)
            records = records_of(docs, chunks, manifest.updated_at)
            vectors = gen.create_collection(location)
            try:
                vectors.upsert(chunks, embeddings, gen.number, document_fields(records, chunks))
            finally:
                vectors.close()
            documents = DocumentTable.of(records)
            tables = _write_tables(gen, manifest, chunks, documents, chunks, embeddings)
            manifest.segments, manifest.vectors, manifest.ann = tables.result()
            manifest.timings = {
                "build_seconds": time.perf_counter() - started,
                "embed_seconds": embed_seconds,
            }
            replaced = passages_location(directory, old) if old else None
            if replaced is not None and _same_place(replaced, location):
                manifest.purge = {"collections": [old.collection, replaced.triples().collection]}
            gen.commit(manifest)
        if replaced is not None and not _same_place(replaced, location):
            drop_collection(replaced)  # elsewhere (another server): dropped once committed
            drop_collection(replaced.triples())
    return _write_report(
        directory,
        chunks,
        added=len(chunks),
        removed=0,
        started=started,
        embed_seconds=embed_seconds,
    )


@paused_gc()
def add_documents(
    directory: str | Path, docs: Sequence[Document], show_progress: bool = True
) -> WriteReport:
    """Add new documents to an index; only their chunks are embedded."""
    directory = Path(directory)
    if not docs:
        raise InputError("no documents to add")
    check_unique_ids(docs, "new documents")
    started = time.perf_counter()
    with write_lock(directory):
        old = read_manifest(directory)
        existing = read_chunks(directory, old)
        present = sorted({c.doc_id for c in existing} & {d.id for d in docs})
        if present:
            raise InputError(
                f"{len(present)} document id(s) are already in the index: {quote_ids(present)}",
                "`hopgraph sync SOURCE` replaces changed documents and adds new ones; "
                "or give new ids",
            )
        documents = DocumentTable.read(directory, old, existing)
        new_chunks, embeddings, embed_seconds = _embed_new(
            directory, old, existing, docs, show_progress
        )
        chunks = _add(
            directory, old, existing, documents, docs, new_chunks, embeddings, show_progress
        )
    return _write_report(
        directory,
        chunks,
        added=len(new_chunks),
        removed=0,
        started=started,
        embed_seconds=embed_seconds,
    )


def _embed_new(
    directory: Path,
    old: Manifest,
    existing: Sequence[Chunk],
    docs: Sequence[Document],
    show_progress: bool,
) -> tuple[list[Chunk], np.ndarray, float]:
    """Chunk and embed ``docs`` for an index whose chunks are ``existing``.

    Returns their chunks, the chunks' vectors and the embedding time.
    """
    embedder = embedder_for(old.settings)
    _check_same_model(directory, old, existing, embedder)
    new_chunks = chunk_documents(docs, old.settings, embedder)
    taken = {c.id for c in existing}
    if any(c.id in taken for c in new_chunks):
        raise InputError("a new chunk id collides with an existing one", "rename the documents")
    t0 = time.perf_counter()
    embeddings = embed_chunks(new_chunks, embedder, show_progress)
    return new_chunks, embeddings, time.perf_counter() - t0


def _check_same_model(
    directory: Path, old: Manifest, existing: Sequence[Chunk], embedder: Embedder
) -> None:
    """Refuse vectors of another model than the index's (nothing is written yet)."""
    held = old.embedder["dimension"]
    if embedder.dimension != held:
        raise IndexStateError(
            f"model {embedder.name!r} now gives {embedder.dimension}-d vectors, the index holds "
            f"{held}-d ones",
            "serve the index's model again, or rebuild the index with the new one",
        )
    fresh = getattr(embedder, "embed_fresh", None)  # an endpoint: its model may have changed
    if fresh is None or not existing:
        return
    probe = existing[0]
    similarity = float(read_vectors(directory, old, [probe])[0] @ fresh([probe.embed_text])[0])
    if similarity < 0.99:
        raise IndexStateError(
            f"the vectors {old.settings.embeddings_url} gives as model {embedder.name!r} are not "
            f"the index's (cosine {similarity:.2f} with chunk {probe.id!r} as stored)",
            "serve the index's model at that address again, or rebuild the index with the new "
            "one (`hopgraph index SOURCE --force`)",
        )


def _add(
    directory: Path,
    old: Manifest,
    existing: list[Chunk],
    documents: DocumentTable,
    docs: Sequence[Document],
    new_chunks: list[Chunk],
    embeddings: np.ndarray,
    show_progress: bool,
) -> list[Chunk]:
    """Commit ``docs`` (chunked and embedded) as the next generation; return all chunks."""
    chunks = sorted(existing + new_chunks, key=lambda c: c.id)
    documents = documents.with_records(records_of(docs, new_chunks, now()))
    _commit_change(
        directory, old, existing, chunks, documents, show_progress, new_chunks, embeddings
    )
    return chunks


@paused_gc()
def delete_documents(directory: str | Path, doc_ids: Sequence[str]) -> WriteReport:
    """Remove documents (all their chunks) from every store of the index."""
    directory = Path(directory)
    wanted = set(doc_ids)
    if not wanted:
        raise InputError("no document ids to delete")
    started = time.perf_counter()
    with write_lock(directory):
        old = read_manifest(directory)
        existing = read_chunks(directory, old)
        missing = sorted(wanted - {c.doc_id for c in existing})
        if missing:
            raise InputError(
                f"{len(missing)} document id(s) are not in the index: {quote_ids(missing)}",
                "`hopgraph docs --index DIR` lists the documents; ids are case-sensitive",
            )
        documents = DocumentTable.read(directory, old, existing)
        chunks, removed = _delete(directory, old, existing, documents, wanted)
    return _write_report(
        directory, chunks, added=0, removed=len(removed), started=started, embed_seconds=0.0
    )


def _delete(
    directory: Path,
    old: Manifest,
    existing: list[Chunk],
    documents: DocumentTable,
    wanted: set[str],
) -> tuple[list[Chunk], list[str]]:
    """Commit the removal of the documents ``wanted``; return the chunks kept and removed ids."""
    removed = [c.id for c in existing if c.doc_id in wanted]
    chunks = [c for c in existing if c.doc_id not in wanted]
    if not chunks:
        raise InputError(
            "deleting these documents would leave the index empty",
            "remove the index directory instead",
        )
    kept = documents.without(wanted)
    _commit_change(directory, old, existing, chunks, kept, False, removed=removed)
    return chunks, removed


@dataclass(frozen=True)
class SyncReport:
    """What a sync did: document ids added, changed (replaced) and removed; unchanged count."""

    directory: Path
    added: list[str]
    changed: list[str]
    removed: list[str]
    missing: list[str]
    """Documents whose source is gone from the scope but that were kept (no prune)."""
    unchanged: int
    documents: int
    chunks: int
    seconds: float
    embed_seconds: float


@paused_gc()
def sync_documents(
    directory: str | Path,
    docs: Sequence[Document],
    scope: Path | None = None,
    prune: bool = False,
    keep_sources: frozenset[str] = frozenset(),
    show_progress: bool = True,
) -> SyncReport:
    """Make the index hold ``docs``: new ones added, changed ones (by content hash) replaced.

    Unchanged documents are not touched, and a sync that changes nothing writes nothing and
    embeds nothing. Documents whose source lies in ``scope`` (the folder or file ``docs`` came
    from) and that are not in ``docs`` are missing: deleted when ``prune``, else kept and
    reported; those from ``keep_sources`` (files that exist but could not be read this time)
    are neither. The whole change is one generation: a changed document's chunks that keep
    their ids get new Chroma rows (the old ones stay for the previous generation's readers until
    the commit purges them), the others are removed, the new ones added.
    """
    directory = Path(directory)
    check_unique_ids(docs, "documents to sync")
    started = time.perf_counter()
    with write_lock(directory):
        old = read_manifest(directory)
        existing = read_chunks(directory, old)
        documents = DocumentTable.read(directory, old, existing)
        records = {r.id: r for r in documents.records()}
        new = [d for d in docs if d.id not in records]
        changed = [d for d in docs if d.id in records and records[d.id].hash != d.content_hash()]
        wanted = {d.id for d in docs}
        missing = sorted(
            r.id
            for r in records.values()
            if scope is not None
            and r.id not in wanted
            and r.source not in keep_sources
            and _within(r.source, scope)
        )
        gone = missing if prune else []
        drop = {*(d.id for d in changed), *gone}
        kept = [c for c in existing if c.doc_id not in drop]
        added = [*new, *changed]
        # Embed first: a failure there (the model, a bad document) leaves the index untouched.
        new_chunks, embeddings, embed_seconds = [], np.zeros((0, 0), np.float32), 0.0
        if added:
            new_chunks, embeddings, embed_seconds = _embed_new(
                directory, old, kept, added, show_progress
            )
        chunks = existing
        if drop or added:
            chunks = sorted(kept + new_chunks, key=lambda c: c.id)
            change = (drop, added, new_chunks, embeddings)
            _replace(directory, old, existing, chunks, documents, change, show_progress)
    return SyncReport(
        directory,
        added=[d.id for d in new],
        changed=[d.id for d in changed],
        removed=gone,
        missing=[] if prune else missing,
        unchanged=len(docs) - len(new) - len(changed),
        documents=len({c.doc_id for c in chunks}),
        chunks=len(chunks),
        seconds=time.perf_counter() - started,
        embed_seconds=embed_seconds,
    )


def _replace(
    directory: Path,
    old: Manifest,
    existing: list[Chunk],
    chunks: list[Chunk],
    documents: DocumentTable,
    change: tuple[set[str], Sequence[Document], list[Chunk], np.ndarray],
    show_progress: bool,
) -> None:
    """Commit a sync as one generation.

    ``change``: the documents to drop, the documents to add, their chunks and their vectors.
    A changed document's chunk that keeps its id gets a new row (_commit_change's
    ``replaced``); the rest of the dropped chunks are purged after the commit.
    """
    drop, added, new_chunks, embeddings = change
    if not chunks:
        raise InputError(
            "this sync would leave the index empty", "remove the index directory instead"
        )
    new_ids = {c.id for c in new_chunks}
    dropped = [c.id for c in existing if c.doc_id in drop]
    records = records_of(added, new_chunks, now())
    _commit_change(
        directory,
        old,
        existing,
        chunks,
        documents.without(drop).with_records(records),
        show_progress,
        new_chunks,
        embeddings,
        removed=[i for i in dropped if i not in new_ids],
        replaced=[i for i in dropped if i in new_ids],
    )


def _within(source: str, scope: Path) -> bool:
    """Tell whether a document's source is the file ``scope`` or lies below the folder."""
    if not source:
        return False
    root = scope.resolve()
    path = Path(source)
    return path == root or root in path.parents


def _write_report(
    directory: Path,
    chunks: Sequence[Chunk],
    added: int,
    removed: int,
    started: float,
    embed_seconds: float,
) -> WriteReport:
    return WriteReport(
        directory=directory,
        documents=len({c.doc_id for c in chunks}),
        chunks=len(chunks),
        added_chunks=added,
        removed_chunks=removed,
        seconds=time.perf_counter() - started,
        embed_seconds=embed_seconds,
    )


@paused_gc()
def build_graphs(
    directory: str | Path, settings: GraphSettings | None = None, show_progress: bool = True
) -> dict[str, Any]:
    """Build (or rebuild) both graphs of an index from scratch as one write; return their info.

    ``settings``: how (graph_build.GraphSettings); default, the offline extractor's defaults.
    """
    directory = Path(directory)
    settings = settings if settings is not None else GraphSettings()
    with write_lock(directory):
        old = read_manifest(directory)
        chunks = read_chunks(directory, old)
        with Generation(directory, old) as gen:
            manifest = successor_manifest(old, chunks)
            write_graphs(
                gen, directory, old, manifest, chunks, chunks, settings, show_progress, fresh=True
            )
            gen.commit(manifest)
    assert manifest.graph is not None
    return manifest.graph


def _commit_change(
    directory: Path,
    old: Manifest,
    before: list[Chunk],
    after: list[Chunk],
    documents: DocumentTable,
    show_progress: bool,
    added: Sequence[Chunk] = (),
    embeddings: np.ndarray | None = None,
    removed: Sequence[str] = (),
    replaced: Sequence[str] = (),
) -> Manifest:
    """Commit a change of passages as the next generation: rows, tables and graphs.

    Added rows go into the live collection tagged with the new generation; removed ones are
    listed for purging after the commit. ``replaced``: added chunks whose ids ``before`` had
    (a changed document's): their new rows get new ids (Manifest.rows), so that the previous
    generation's readers, and a rollback, keep the old rows, purged after the commit. The
    graphs, when the index has them, are brought up to date from the previous generation's.
    """
    with Generation(directory, old) as gen:
        manifest = successor_manifest(old, after)
        tables = _write_tables(gen, manifest, after, documents, added, embeddings, (old, before))
        gone = {*removed, *replaced}
        manifest.rows = {c: r for c, r in old.rows.items() if c not in gone}
        manifest.rows.update({c: row_id(c, gen.number) for c in replaced})
        manifest.purge = {"passages": [old.row_of(c) for c in (*removed, *replaced)]}
        with tables:
            # after the tables' child is forked: Chroma holds the GIL for seconds at a million
            # rows, and the child writes meanwhile
            if added:
                assert embeddings is not None
                store = ChromaVectorStore(passages_location(directory, old))
                try:
                    fields = document_fields(documents.records(c.doc_id for c in added), added)
                    store.upsert(added, embeddings, gen.number, fields, manifest.rows)
                finally:
                    store.close()
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
                )
            manifest.segments, manifest.vectors, manifest.ann = tables.result()
        gen.commit(manifest)
    return manifest


def document_fields(records: Sequence[DocumentRecord], chunks: Sequence[Chunk]) -> dict[str, dict]:
    """Return the metadata of the ``chunks``' documents for their Chroma rows."""
    wanted = {c.doc_id for c in chunks}
    return {r.id: r.fields() for r in records if r.id in wanted}


def successor_manifest(old: Manifest, chunks: Sequence[Chunk]) -> Manifest:
    """Return the next generation's manifest: the old one with new counts, nothing purged."""
    manifest = old.model_copy(deep=True)
    manifest.format_version = FORMAT_VERSION
    manifest.files = {part: str(old.path(Path(), part)) for part in ("chunks", "bm25", "graph")}
    for part in ("documents", TRIPLE_VECTORS):  # the triple table: until the graphs' write
        if part in old.files:
            manifest.files[part] = old.files[part]
    manifest.counts = {"documents": len({c.doc_id for c in chunks}), "chunks": len(chunks)}
    manifest.versions = package_versions()
    manifest.updated_at = now()
    manifest.purge = {}
    return manifest


class Tables(NamedTuple):
    """What a write's tables' work gives back: the BM25 and the vector segments to keep."""

    bm25: list[str]
    vectors: list[str]
    ann: dict[str, str]


def _write_tables(
    gen: Generation,
    manifest: Manifest,
    chunks: Sequence[Chunk],
    documents: DocumentTable,
    added: Sequence[Chunk],
    embeddings: np.ndarray | None,
    previous: tuple[Manifest, Sequence[Chunk]] | None = None,
) -> Forked[Tables]:
    """Write the chunk and document tables, the vectors and BM25 into the generation's folder.

    ``added``: the write's new chunks (all of them for a build), ``embeddings`` their vectors.
    ``previous``: the last generation's manifest and chunks; BM25 and the vector table then get
    a segment of the added chunks only (when that generation has segments to keep). The added
    vectors are saved here, and ``manifest`` points at the segments the graphs read them from;
    for a change, a forked child writes the rest (merging segments when there are too many)
    while the write updates its graphs. Its result gives the segments to commit.
    """
    name = folder_name(gen.number)
    root = gen.folder.parent
    vectors = _appended_vectors(
        root, f"{name}/vectors", chunks, added, embeddings, previous, manifest.settings.vector_dtype
    )
    manifest.vectors = vectors.paths
    known = previous[0].ann if previous is not None else {}

    def work() -> Tables:
        write_chunks(gen.folder / "chunks.jsonl", chunks)
        documents.write(gen.folder / DOCUMENTS_FILE)
        segment = f"{name}/bm25-segment"
        if previous is not None and previous[0].segments:
            old, before = previous
            store = BM25Store.load(old.path(root, "bm25"), root, before)
            store = store.updated(chunks, added, root, segment)
        else:
            store = BM25Store.build(chunks, root, segment)
        store.save(gen.folder / "bm25")
        merged = vectors.compacted([c.id for c in chunks], root, f"{name}/vectors-merged")
        return Tables(list(store.paths), merged.paths, merged.ann_files(root, known))

    tables = Forked("writing the chunk and document tables and BM25", work, previous is not None)
    manifest.files.update(
        {
            "chunks": f"{name}/chunks.jsonl",
            "bm25": f"{name}/bm25",
            "documents": f"{name}/{DOCUMENTS_FILE}",
        }
    )
    return tables


def _appended_vectors(
    root: Path,
    path: str,
    chunks: Sequence[Chunk],
    added: Sequence[Chunk],
    embeddings: np.ndarray | None,
    previous: tuple[Manifest, Sequence[Chunk]] | None,
    dtype: str,
) -> VectorTable:
    """Save the added chunks' vectors as a segment of the vector table; return the table."""
    ids, new = [c.id for c in chunks], [c.id for c in added]
    vectors = embeddings if embeddings is not None else np.zeros((0, 0), dtype=np.float32)
    if previous is None:
        return VectorTable.build(new, vectors, root, path, dtype)
    old = previous[0]
    if old.vectors:
        return VectorTable.load(root, old.vectors).appended(new, vectors, root, path)
    # Written before the vector table: its vectors (the added ones upserted) come from Chroma once.
    return VectorTable.build(ids, read_vectors(root, old, chunks), root, path, dtype)


def _manifest(
    settings: IndexSettings,
    embedder: dict[str, Any],
    location: ChromaLocation,
    chunks: Sequence[Chunk],
    created: str | None,
) -> Manifest:
    stamp = now()
    return Manifest(
        format_version=FORMAT_VERSION,
        settings=settings,
        embedder=embedder,
        collection=location.collection,
        chroma_dir=None if location.url or location.path is None else location.path.name,
        counts={"documents": len({c.doc_id for c in chunks}), "chunks": len(chunks)},
        versions=package_versions(),
        created_at=created or stamp,
        updated_at=stamp,
    )


def _new_location(settings: IndexSettings, directory: Path) -> ChromaLocation:
    name = f"{settings.collection_prefix}-{uuid.uuid4().hex[:12]}"
    if settings.chroma_url:
        return ChromaLocation(name, url=settings.chroma_url)
    return ChromaLocation(name, path=directory / CHROMA_DIR)


def _same_place(a: ChromaLocation, b: ChromaLocation) -> bool:
    return a.path == b.path and a.url == b.url


def _readable_manifest(directory: Path) -> Manifest | None:
    """Return the manifest of the index being replaced, if it can be read (any version)."""
    try:
        return read_manifest(directory)
    except IndexStateError:
        return None


def _refuse_foreign_directory(directory: Path) -> None:
    """Never build over a non-empty directory that is not a hopgraph index."""
    if directory.is_file():
        raise InputError(f"{directory} is a file", "give a directory path for the index")
    if (
        directory.is_dir()
        and not (directory / MANIFEST).exists()
        # A first build that was killed leaves only its own files: a retry may build there;
        # a settings file (hopgraph.toml) may be there before the first build.
        and not all(
            written_by_a_build(entry) or entry.name == CONFIG_FILE for entry in directory.iterdir()
        )
    ):
        raise InputError(
            f"{directory} exists, is not empty and is not a hopgraph index",
            "choose a new or empty directory; hopgraph will not overwrite other files",
        )
