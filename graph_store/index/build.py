"""A new index, and new graphs: ``build_index`` and ``build_graphs``.

``build_index`` chunks and embeds the documents and writes them as a first generation;
``build_graphs`` makes both graphs from scratch as one write.

Each write is one generation (hopgraph.graph_store.index.generations): it adds files in its
own folder and rows tagged with its number to Chroma, and commits by replacing the manifest.
An error or a kill at any moment leaves the previous generation as it was, and the next write
cleans up after it. ``changes`` adds, deletes and syncs documents; ``writes`` holds what every
write shares.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hopgraph.core.errors import IndexStateError, InputError
from hopgraph.core.settings import CONFIG_FILE, IndexSettings
from hopgraph.graph_store.documents.loaders import check_unique_ids
from hopgraph.graph_store.documents.schema import Document
from hopgraph.graph_store.embedding.embedders import embedder_for
from hopgraph.graph_store.stores.chunk_table import read_chunks, scan_chunks
from hopgraph.graph_store.stores.doc_table import DocumentTable, records_of
from hopgraph.graph_store.stores.manifest import (
    FORMAT_VERSION,
    MANIFEST,
    Manifest,
    now,
    package_versions,
    read_manifest,
)
from hopgraph.graph_store.stores.vdb_chroma import ChromaLocation

from . import writes
from .generations import (
    CHROMA_DIR,
    Generation,
    drop_collection,
    passages_location,
    remove_first_build,
    written_by_a_build,
)
from .graph_build import Chunks, GraphSettings, GraphTasks, write_graphs
from .lock import paused_gc, remove_lock_folder, write_lock


@paused_gc()
def build_index(
    docs: Sequence[Document],
    directory: str | Path,
    settings: IndexSettings,
    show_progress: bool = True,
    replace: bool = False,
) -> writes.WriteReport:
    """Build a fresh index of ``docs`` in ``directory``.

    An index already there is replaced only when ``replace`` is set (``--force``); the lock is
    held from the start, embedding included, so no other write can slip in and be lost.
    """
    directory = Path(directory)
    if not docs:
        raise InputError("the corpus is empty", "give at least one document")
    check_unique_ids(docs, "corpus")
    started = time.perf_counter()
    with fresh_index(directory, replace) as old:
        embedder = embedder_for(settings)
        chunks = sorted(writes.chunk_documents(docs, settings, embedder), key=lambda c: c.id)
        t0 = time.perf_counter()
        embeddings = writes.embed_chunks(chunks, embedder, show_progress)
        embed_seconds = time.perf_counter() - t0
        location = new_location(settings, directory)
        with Generation(directory, old) as gen:
            embedder_info = {"name": embedder.name, "dimension": embedder.dimension}
            manifest = new_manifest(settings, embedder_info, location, writes.counts_of(chunks))
            records = records_of(docs, chunks, manifest.updated_at)
            vectors = gen.create_collection(location)
            try:
                vectors.upsert(
                    chunks, embeddings, gen.number, writes.document_fields(records, chunks)
                )
            finally:
                vectors.close()
            documents = DocumentTable.of(records)
            tables = writes.write_tables(gen, manifest, chunks, documents, chunks, embeddings)
            manifest.segments, manifest.vectors, manifest.ann = tables.result()
            manifest.timings = {
                "build_seconds": time.perf_counter() - started,
                "embed_seconds": embed_seconds,
            }
            elsewhere = commit_fresh(gen, old, location, manifest)
        drop_elsewhere(elsewhere)
    return writes.write_report(
        directory,
        chunks,
        added=len(chunks),
        removed=0,
        started=started,
        embed_seconds=embed_seconds,
    )


@contextmanager
def fresh_index(directory: Path, replace: bool) -> Iterator[Manifest | None]:
    """Hold the write lock of a new index at ``directory``; yield the index it replaces, if any.

    A folder that is not an index (nor the leftovers of a first build) is refused, and so is an
    index unless ``replace`` (``--force``): both before anything is written.
    """
    _refuse_foreign_directory(directory)
    made, undone = not directory.exists(), False
    try:
        with write_lock(directory, create=True):
            try:
                yield _replaced(directory, replace)
            except BaseException:
                if not (directory / MANIFEST).exists():  # a first build failed: undo it whole
                    remove_first_build(directory)
                    undone = True
                raise
    finally:
        if made and undone:  # the folder this build made holds its lock only: remove it too
            remove_lock_folder(directory)


def check_fresh(directory: Path, replace: bool) -> None:
    """Refuse, without the lock, what :func:`fresh_index` would: before long work begins.

    fresh_index checks again under the lock (another write may come in between).
    """
    _refuse_foreign_directory(directory)
    _replaced(directory, replace)


def _replaced(directory: Path, replace: bool) -> Manifest | None:
    """Return the index at ``directory`` that a new one replaces; refuse it unless ``replace``."""
    old = _readable_manifest(directory)
    if (old is not None or (directory / MANIFEST).exists()) and not replace:
        held = f" ({old.counts['documents']} documents)" if old else ""
        raise InputError(
            f"{directory} already holds an index{held}",
            "`hopgraph add` adds documents to it; `hopgraph index --force` replaces it",
        )
    return old


def commit_fresh(
    gen: Generation, old: Manifest | None, location: ChromaLocation, manifest: Manifest
) -> ChromaLocation | None:
    """Commit a new index's generation in place of ``old``; return ``old``'s store elsewhere.

    ``old``'s collections in the same Chroma store are purged by the commit; ones in another
    store (another server) are returned, to be dropped once the commit is done (drop_elsewhere).
    """
    replaced = passages_location(gen.directory, old) if old else None
    same = replaced is not None and _same_place(replaced, location)
    if same:
        assert old is not None and replaced is not None
        names = [each.collection for each in replaced.each()]
        manifest.purge = {"collections": [*names, replaced.triples().collection]}
    gen.commit(manifest)
    return replaced if not same else None


def drop_elsewhere(replaced: ChromaLocation | None) -> None:
    """Drop a replaced index's collections from the store they were in (commit_fresh)."""
    if replaced is not None:
        drop_collection(replaced)
        drop_collection(replaced.triples())


@paused_gc()
def build_graphs(
    directory: str | Path,
    settings: GraphSettings | None = None,
    show_progress: bool = True,
    tasks: GraphTasks | None = None,
) -> dict[str, Any]:
    """Build (or rebuild) both graphs of an index from scratch as one write; return their info.

    ``settings``: how (graph_build.GraphSettings); default, the offline extractor's defaults.
    ``tasks``: who finds the semantic neighbour lists and reads the chunks (a cluster's
    tasks); default, this process.
    """
    directory = Path(directory)
    settings = settings if settings is not None else GraphSettings()
    with write_lock(directory):
        old = read_manifest(directory)
        chunks = _chunks_of(directory, old, settings, tasks)
        with Generation(directory, old) as gen:
            manifest = writes.successor_manifest(old, None)
            write_graphs(
                gen, directory, old, manifest, chunks, chunks, settings, show_progress,
                fresh=True, tasks=tasks,
            )  # fmt: skip
            gen.commit(manifest)
    assert manifest.graph is not None
    return manifest.graph


def _chunks_of(
    directory: Path, manifest: Manifest, settings: GraphSettings, tasks: GraphTasks | None
) -> Chunks:
    """Return the chunks a graph build holds (see graph_build.Chunks).

    Read from the table as they are needed when tasks read them, find the lists and make the
    graphs: a cluster's driver then holds nothing that grows with the corpus. Else every
    chunk, with its text unless tasks read them (2 GB of strings at 4M chunks).
    """
    reads = tasks is not None and tasks.readings is not None and settings.extractor == "offline"
    if reads and tasks is not None and tasks.neighbours and tasks.parts:
        return scan_chunks(directory, manifest)
    return read_chunks(directory, manifest, texts=not reads)


def new_manifest(
    settings: IndexSettings,
    embedder: dict[str, Any],
    location: ChromaLocation,
    counts: dict[str, int],
) -> Manifest:
    """Return the manifest of a new index, its parts not yet named."""
    stamp = now()
    return Manifest(
        format_version=FORMAT_VERSION,
        settings=settings,
        embedder=embedder,
        collection=location.collection,
        chroma_dir=None if location.url or location.path is None else location.path.name,
        chroma_parts=location.parts,
        counts=counts,
        versions=package_versions(),
        created_at=stamp,
        updated_at=stamp,
    )


def new_location(settings: IndexSettings, directory: Path) -> ChromaLocation:
    """Return a new collection for an index, in its own Chroma folder or on its server."""
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
