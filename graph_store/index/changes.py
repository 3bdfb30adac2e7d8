"""Changes to a built index: add documents, delete documents, sync with a source.

Each is one generation (hopgraph.graph_store.index.generations), in place: it costs what it
changes. ``add`` embeds and stores only the new chunks, and the graphs are brought up to date
from the previous generation's (graph_build). The chunks a write keeps are read without their
texts (400 MB at a million chunks): their lines are copied from the last table, and the few
whose texts a write reads (removed ones, ones read again for new links) are looked up there.
An error or a kill at any moment leaves the previous generation as it was.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hopgraph.core.errors import IndexStateError, InputError
from hopgraph.core.settings import IndexSettings
from hopgraph.graph_store.documents.loaders import check_unique_ids, quote_ids
from hopgraph.graph_store.documents.schema import Chunk, Document
from hopgraph.graph_store.embedding.embedders import Embedder, embedder_for
from hopgraph.graph_store.stores.chunk_table import (
    ChunkScan,
    ids_of,
    open_chunks,
    read_chunks,
    scan_chunks,
)
from hopgraph.graph_store.stores.doc_table import DocumentChange, DocumentTable, records_of
from hopgraph.graph_store.stores.manifest import Manifest, now, read_manifest

from . import writes
from .graph_build import Chunks, GraphTasks
from .lock import paused_gc, write_lock
from .stored_vectors import read_vectors

log = logging.getLogger(__name__)


@paused_gc()
def add_documents(
    directory: str | Path,
    docs: Sequence[Document],
    show_progress: bool = True,
    embed: Embed | None = None,
    tasks: GraphTasks | None = None,
) -> writes.WriteReport:
    """Add new documents to an index; only their chunks are embedded (by ``embed``, if given).

    ``tasks``: who brings the neighbour lists up to date (``tasks.update``; default: a child
    of this process).
    """
    directory = Path(directory)
    if not docs:
        raise InputError("no documents to add")
    check_unique_ids(docs, "new documents")
    started = time.perf_counter()
    with write_lock(directory):
        old = read_manifest(directory)
        existing = _existing(directory, old, tasks)
        documents = DocumentTable.changed(directory, old, existing)
        present = [r.id for r in documents.records(d.id for d in docs)]
        if present:
            raise InputError(
                f"{len(present)} document id(s) are already in the index: {quote_ids(present)}",
                "`hopgraph sync SOURCE` replaces changed documents and adds new ones; "
                "or give new ids",
            )
        new_chunks, embeddings, embed_seconds = _embed_new(
            directory, old, existing, docs, show_progress, embed
        )
        embedded = (new_chunks, embeddings)
        chunks = _add(directory, old, existing, documents, docs, embedded, show_progress, tasks)
    return writes.write_report(
        directory, chunks, added=len(new_chunks), removed=0, started=started,
        embed_seconds=embed_seconds,
    )  # fmt: skip


def _existing(directory: Path, old: Manifest, tasks: GraphTasks | None) -> Chunks:
    """Return the chunks a write keeps, without their texts (only new chunks need theirs).

    A cluster's write (``tasks``) on an index whose tables it can merge a write into (a
    document table, a vector table, chunks in id order) reads them from the table on each pass
    (:class:`ChunkScan`): its driver then holds the write's chunks only, whatever the corpus.
    Else they are read into memory (300 MB a million chunks).
    """
    if tasks is not None and old.vectors and "documents" in old.files:
        scan = scan_chunks(directory, old)
        if scan.in_id_order():
            return scan
        log.info("%s's chunk table is not in id order: this write reads it whole", directory)
    return read_chunks(directory, old, texts=False)


def _embed_new(
    directory: Path,
    old: Manifest,
    existing: Chunks,
    docs: Sequence[Document],
    show_progress: bool,
    embed: Embed | None = None,
) -> tuple[list[Chunk], np.ndarray, float]:
    """Chunk and embed ``docs`` for an index whose chunks are ``existing``.

    Returns their chunks, the chunks' vectors and the embedding time (with ``embed``: the
    chunking's and embedding's together, done there).
    """
    embedder = embedder_for(old.settings)
    _check_same_model(directory, old, existing, embedder)
    t0 = time.perf_counter()
    if embed is not None:
        new_chunks, embeddings = embed(docs, old.settings)
    else:
        new_chunks = writes.chunk_documents(docs, old.settings, embedder)
    fresh = {c.id for c in new_chunks}
    if any(chunk_id in fresh for chunk_id in ids_of(existing)):
        raise InputError("a new chunk id collides with an existing one", "rename the documents")
    if embed is None:
        t0 = time.perf_counter()
        embeddings = writes.embed_chunks(new_chunks, embedder, show_progress)
    return new_chunks, embeddings, time.perf_counter() - t0


def _check_same_model(directory: Path, old: Manifest, existing: Chunks, embedder: Embedder) -> None:
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
    probe = open_chunks(directory, old)[next(iter(ids_of(existing)))]  # with its text
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
    existing: Chunks,
    documents: DocumentTable | DocumentChange,
    docs: Sequence[Document],
    embedded: tuple[list[Chunk], np.ndarray],
    show_progress: bool,
    tasks: GraphTasks | None,
) -> Chunks:
    """Commit ``docs`` (``embedded``: their chunks and vectors) as the next generation.

    Returns all chunks.
    """
    new_chunks, embeddings = embedded
    chunks = _with(existing, new_chunks)  # a scan: merged as it is read, in id order
    documents = documents.with_records(records_of(docs, new_chunks, now()))
    writes.commit_change(
        directory, old, existing, chunks, documents, show_progress, new_chunks, embeddings,
        tasks=tasks,
    )  # fmt: skip
    return chunks


@paused_gc()
def delete_documents(
    directory: str | Path, doc_ids: Sequence[str], tasks: GraphTasks | None = None
) -> writes.WriteReport:
    """Remove documents (all their chunks) from every store of the index.

    ``tasks``: who brings the neighbour lists up to date (``tasks.update``; default: a child
    of this process).
    """
    directory = Path(directory)
    wanted = set(doc_ids)
    if not wanted:
        raise InputError("no document ids to delete")
    started = time.perf_counter()
    with write_lock(directory):
        old = read_manifest(directory)
        existing = _existing(directory, old, tasks)
        documents = DocumentTable.changed(directory, old, existing)
        missing = sorted(wanted - {r.id for r in documents.records(wanted)})
        if missing:
            raise InputError(
                f"{len(missing)} document id(s) are not in the index: {quote_ids(missing)}",
                "`hopgraph docs --index DIR` lists the documents; ids are case-sensitive",
            )
        chunks, removed = _delete(directory, old, existing, documents, wanted, tasks)
    return writes.write_report(
        directory, chunks, added=0, removed=len(removed), started=started, embed_seconds=0.0
    )


def _delete(
    directory: Path,
    old: Manifest,
    existing: Chunks,
    documents: DocumentTable | DocumentChange,
    wanted: set[str],
    tasks: GraphTasks | None,
) -> tuple[Chunks, list[str]]:
    """Commit the removal of the documents ``wanted``; return the chunks kept and removed ids."""
    leaving = [c for c in existing if c.doc_id in wanted]
    removed = [c.id for c in leaving]
    chunks = _less(existing, leaving)  # a scan: read as it is needed, less the removed ids
    if not chunks:
        raise InputError(
            "deleting these documents would leave the index empty",
            "remove the index directory instead",
        )
    kept = documents.without(wanted)
    writes.commit_change(
        directory, old, existing, chunks, kept, False, removed=removed, tasks=tasks
    )
    return chunks, removed


Embed = Callable[[Sequence[Document], IndexSettings], tuple[list[Chunk], np.ndarray]]
"""How a write chunks and embeds its new documents elsewhere (a cluster: cluster/embed.py)."""


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
    embed: Embed | None = None,
    tasks: GraphTasks | None = None,
) -> SyncReport:
    """Make the index hold ``docs``: new ones added, changed ones (by content hash) replaced.

    Unchanged documents are not touched, and a sync that changes nothing writes nothing and
    embeds nothing. Documents whose source lies in ``scope`` (the folder or file ``docs`` came
    from) and that are not in ``docs`` are missing: deleted when ``prune``, else kept and
    reported; those from ``keep_sources`` (files that exist but could not be read this time)
    are neither. The whole change is one generation: a changed document's chunks that keep
    their ids get new Chroma rows (the old ones stay for the previous generation's readers until
    the commit purges them), the others are removed, the new ones added. ``embed`` and
    ``tasks``: as :func:`add_documents`'.
    """
    directory = Path(directory)
    check_unique_ids(docs, "documents to sync")
    started = time.perf_counter()
    with write_lock(directory):
        old = read_manifest(directory)
        existing = _existing(directory, old, tasks)
        documents = DocumentTable.changed(directory, old, existing)
        wanted = {d.id for d in docs}
        records = {r.id: r for r in documents.records(wanted)}  # theirs only: looked up
        new = [d for d in docs if d.id not in records]
        changed = [d for d in docs if d.id in records and records[d.id].hash != d.content_hash()]
        missing = [] if scope is None else [
            r.id
            for r in documents.scan()
            if r.id not in wanted and r.source not in keep_sources and _within(r.source, scope)
        ]  # fmt: skip
        gone = missing if prune else []
        drop = {*(d.id for d in changed), *gone}
        leaving = [c for c in existing if c.doc_id in drop] if drop else []
        kept = _less(existing, leaving)
        added = [*new, *changed]
        # Embed first: a failure there (the model, a bad document) leaves the index untouched.
        new_chunks, embeddings, embed_seconds = [], np.zeros((0, 0), np.float32), 0.0
        if added:
            new_chunks, embeddings, embed_seconds = _embed_new(
                directory, old, kept, added, show_progress, embed
            )
        chunks = existing
        if drop or added:
            chunks = _with(kept, new_chunks)
            dropped = [c.id for c in leaving]
            change = (drop, dropped, added, new_chunks, embeddings)
            _replace(directory, old, existing, chunks, documents, change, show_progress, tasks)
    return SyncReport(
        directory,
        added=[d.id for d in new],
        changed=[d.id for d in changed],
        removed=gone,
        missing=[] if prune else missing,
        unchanged=len(docs) - len(new) - len(changed),
        documents=writes.counts_of(chunks)["documents"],
        chunks=len(chunks),
        seconds=time.perf_counter() - started,
        embed_seconds=embed_seconds,
    )


def _less(existing: Chunks, leaving: list[Chunk]) -> Chunks:
    """Return ``existing`` without the chunks ``leaving`` (a scan: read without them)."""
    if not isinstance(existing, ChunkScan):
        gone = {c.id for c in leaving}
        return [c for c in existing if c.id not in gone]
    assert existing.documents is not None  # a write's scan: the manifest's count
    documents = existing.documents - len({c.doc_id for c in leaving})
    return existing.changed((), [c.id for c in leaving], documents)


def _with(kept: Chunks, new_chunks: list[Chunk]) -> Chunks:
    """Return ``kept`` with ``new_chunks``, in id order (a scan: merged as it is read)."""
    if not isinstance(kept, ChunkScan):
        return sorted([*kept, *new_chunks], key=lambda c: c.id)
    assert kept.documents is not None  # a write's scan: the manifest's count, moved
    documents = kept.documents + len({c.doc_id for c in new_chunks})
    return kept.changed(new_chunks, (), documents)


def _replace(
    directory: Path,
    old: Manifest,
    existing: Chunks,
    chunks: Chunks,
    documents: DocumentTable | DocumentChange,
    change: tuple[set[str], list[str], Sequence[Document], list[Chunk], np.ndarray],
    show_progress: bool,
    tasks: GraphTasks | None,
) -> None:
    """Commit a sync as one generation.

    ``change``: the documents to drop and their chunks' ids, the documents to add, their
    chunks and their vectors. A changed document's chunk that keeps its id gets a new row
    (writes.commit_change's ``replaced``); the rest of the dropped chunks are purged after the
    commit.
    """
    drop, dropped, added, new_chunks, embeddings = change
    if not chunks:
        raise InputError(
            "this sync would leave the index empty", "remove the index directory instead"
        )
    new_ids = {c.id for c in new_chunks}
    records = records_of(added, new_chunks, now())
    writes.commit_change(
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
        tasks=tasks,
    )


def _within(source: str, scope: Path) -> bool:
    """Tell whether a document's source is the file ``scope`` or lies below the folder."""
    if not source:
        return False
    root = scope.resolve()
    path = Path(source)
    return path == root or root in path.parents
