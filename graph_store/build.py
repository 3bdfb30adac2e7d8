"""The write side of an index directory: build, add documents, delete documents.

Every write stages a complete new index beside the old one and swaps it in at the end, so an
error or an interruption leaves the previous index as it was. ``add`` embeds only the new
documents; existing vectors are carried over (copied files, or copied records on a server).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hopgraph.errors import IndexStateError, InputError
from hopgraph.settings import IndexSettings

from .atomic import staged, write_lock
from .chunking import chunk_document
from .documents import Chunk, Document
from .embedding import Embedder, embed_with_progress, load_embedder
from .graph_build import GraphSettings, triples_location, write_graphs
from .index import BM25_DIR, CHUNKS_FILE, chroma_location, read_chunks
from .kdb_bm25 import BM25Store
from .loaders import check_unique_ids, quote_ids
from .manifest import FORMAT_VERSION, MANIFEST, Manifest, now, package_versions, read_manifest
from .vdb_chroma import ChromaLocation, ChromaVectorStore


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
    with write_lock(directory):
        old = _readable_manifest(directory)
        if (old is not None or (directory / MANIFEST).exists()) and not replace:
            held = f" ({old.counts['documents']} documents)" if old else ""
            raise InputError(
                f"{directory} already holds an index{held}",
                "`hopgraph add` adds documents to it; `hopgraph index --force` replaces it",
            )
        embedder = load_embedder(settings.model, settings.batch_size)
        chunks = sorted(chunk_documents(docs, settings, embedder), key=lambda c: c.id)
        t0 = time.perf_counter()
        embeddings = embed_chunks(chunks, embedder, show_progress)
        embed_seconds = time.perf_counter() - t0
        location = _new_location(settings, directory)
        try:
            with staged(directory, copy_existing=False) as staging:
                vectors = ChromaVectorStore(_in(staging, location), create=True)
                try:
                    vectors.upsert(chunks, embeddings)
                finally:
                    vectors.close()
                _write_tables(staging, chunks)
                embedder_info = {"name": embedder.name, "dimension": embedder.dimension}
                manifest = _manifest(settings, embedder_info, location, chunks, created=None)
                manifest.timings = {
                    "build_seconds": time.perf_counter() - started,
                    "embed_seconds": embed_seconds,
                }
                manifest.write(staging)
        except BaseException:
            _drop_server_collection(location)
            raise
        _drop_server_collection(_old_location(directory, old))
    return _write_report(
        directory,
        chunks,
        added=len(chunks),
        removed=0,
        started=started,
        embed_seconds=embed_seconds,
    )


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
        existing = read_chunks(directory)
        present = sorted({c.doc_id for c in existing} & {d.id for d in docs})
        if present:
            raise InputError(
                f"{len(present)} document id(s) are already in the index: {quote_ids(present)}",
                "delete them first (`hopgraph delete`) to replace them, or give new ids",
            )
        embedder = load_embedder(old.settings.model, old.settings.batch_size)
        new_chunks = chunk_documents(docs, old.settings, embedder)
        taken = {c.id for c in existing}
        if any(c.id in taken for c in new_chunks):
            raise InputError("a new chunk id collides with an existing one", "rename the documents")
        t0 = time.perf_counter()
        embeddings = embed_chunks(new_chunks, embedder, show_progress)
        embed_seconds = time.perf_counter() - t0
        chunks = sorted(existing + new_chunks, key=lambda c: c.id)
        _rewrite(
            directory,
            old,
            chunks,
            lambda store: store.upsert(new_chunks, embeddings),
            show_progress,
        )
    return _write_report(
        directory,
        chunks,
        added=len(new_chunks),
        removed=0,
        started=started,
        embed_seconds=embed_seconds,
    )


def delete_documents(directory: str | Path, doc_ids: Sequence[str]) -> WriteReport:
    """Remove documents (all their chunks) from every store of the index."""
    directory = Path(directory)
    wanted = set(doc_ids)
    if not wanted:
        raise InputError("no document ids to delete")
    started = time.perf_counter()
    with write_lock(directory):
        old = read_manifest(directory)
        existing = read_chunks(directory)
        missing = sorted(wanted - {c.doc_id for c in existing})
        if missing:
            raise InputError(
                f"{len(missing)} document id(s) are not in the index: {quote_ids(missing)}",
                "`hopgraph info --index DIR` shows the index; ids are case-sensitive",
            )
        removed = [c.id for c in existing if c.doc_id in wanted]
        chunks = [c for c in existing if c.doc_id not in wanted]
        if not chunks:
            raise InputError(
                "deleting these documents would leave the index empty",
                "remove the index directory instead",
            )
        _rewrite(directory, old, chunks, lambda store: store.delete(removed), False)
    return _write_report(
        directory, chunks, added=0, removed=len(removed), started=started, embed_seconds=0.0
    )


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


def build_graphs(
    directory: str | Path, settings: GraphSettings, show_progress: bool = True
) -> dict[str, Any]:
    """Build (or rebuild) both graphs of an index as one atomic write; returns the graph info.

    It is the same staged rewrite as ``add`` / ``delete`` with no change to the passages, so on
    a Chroma server the triples go to new collections too and the live index is never touched.
    """
    directory = Path(directory)
    with write_lock(directory):
        old = read_manifest(directory)
        manifest = _rewrite(
            directory,
            old,
            read_chunks(directory),
            lambda store: None,
            show_progress,
            graph_settings=settings,
            tables_changed=False,
        )
    assert manifest.graph is not None
    return manifest.graph


def _rewrite(
    directory: Path,
    old: Manifest,
    chunks: list[Chunk],
    change: Callable[[ChromaVectorStore], None],
    show_progress: bool,
    graph_settings: GraphSettings | None = None,
    tables_changed: bool = True,
) -> Manifest:
    """Stage a copy of the index with ``change`` applied to its vectors, then swap it in.

    The graphs are rebuilt when the index has them, or when ``graph_settings`` asks for them.
    """
    location = _new_location(old.settings, directory)
    if location.url is None:  # the copied files hold the old collection; only the folder is new
        location = ChromaLocation(old.collection, path=location.path)
    if graph_settings is None and old.graph:
        graph_settings = GraphSettings.model_validate(old.graph["settings"])
    try:
        with staged(directory, copy_existing=True) as staging:
            source = _old_location(staging, old)
            if location.url is None:
                # The copied Chroma files get a new name, so no cached client of the old path
                # (in this process) can ever serve the new index.
                (staging / old.chroma_dir).rename(staging / location.path.name)
                store = ChromaVectorStore(_in(staging, location))
            else:
                store = _copy_collection(source, location)
                if old.graph:  # carry the triple vectors too; only new triples get embedded
                    _copy_collection(triples_location(source), triples_location(location)).close()
            try:
                change(store)
            finally:
                store.close()
            if tables_changed:  # else the staged copy already holds the chunk table and BM25
                _write_tables(staging, chunks)
            manifest = _manifest(old.settings, old.embedder, location, chunks, old.created_at)
            if graph_settings is not None:
                manifest.graph = write_graphs(
                    staging, directory, manifest, graph_settings, show_progress
                )
            manifest.write(staging)
    except BaseException:
        _drop_server_collection(location)
        raise
    _drop_server_collection(_old_location(directory, old))
    return manifest


def _copy_collection(source: ChromaLocation, target: ChromaLocation) -> ChromaVectorStore:
    """Create ``target`` on the server holding every record of ``source``."""
    store = ChromaVectorStore(target, create=True)
    previous = ChromaVectorStore(source)
    try:
        previous.copy_into(store)
    finally:
        previous.close()
    return store


def _write_tables(directory: Path, chunks: Sequence[Chunk]) -> None:
    lines = "".join(json.dumps(c.to_dict(), ensure_ascii=False) + "\n" for c in chunks)
    (directory / CHUNKS_FILE).write_text(lines, encoding="utf-8")
    BM25Store.build(chunks).save(directory / BM25_DIR)


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
        chroma_dir=None if location.url else location.path.name,
        counts={"documents": len({c.doc_id for c in chunks}), "chunks": len(chunks)},
        versions=package_versions(),
        created_at=created or stamp,
        updated_at=stamp,
    )


def _new_location(settings: IndexSettings, directory: Path) -> ChromaLocation:
    generation = uuid.uuid4().hex[:12]
    name = f"{settings.collection_prefix}-{generation}"
    if settings.chroma_url:
        return ChromaLocation(name, url=settings.chroma_url)
    return ChromaLocation(name, path=Path(f"chroma-{generation}"))


def _in(staging: Path, location: ChromaLocation) -> ChromaLocation:
    """Place a local location inside the staging directory (server locations are unchanged)."""
    if location.url:
        return location
    return ChromaLocation(location.collection, path=staging / location.path.name)


def _old_location(directory: Path, old: Manifest | None) -> ChromaLocation | None:
    return chroma_location(directory, old) if old else None


def _drop_server_collection(location: ChromaLocation | None) -> None:
    """Drop a collection on a Chroma server (local collections go with their directory)."""
    if location is None or location.url is None:
        return
    for each in (location, triples_location(location)):
        try:
            store = ChromaVectorStore(each)
        except IndexStateError:
            continue  # already gone, or an index without graphs
        store.drop()
        store.close()


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
    if directory.is_dir() and any(directory.iterdir()) and not (directory / MANIFEST).exists():
        raise InputError(
            f"{directory} exists, is not empty and is not a hopgraph index",
            "choose a new or empty directory; hopgraph will not overwrite other files",
        )
