"""A new index built on a Ray cluster: partitions written by tasks, reduced and committed here.

``build_index_on(address, docs, directory, settings, partitions)`` is ``build_index`` with the
chunking, embedding and per-partition files on the cluster (partitions.write_partition, one task
a partition, retried on failure). The driver reduces what needs the whole corpus: the chunk
ids checked unique, the chunk table merged in id order (streamed from the parts), the document
table, BM25's global statistics (the partitions' document frequencies and lengths summed: each
partition's segment is scored with them, so BM25 scores as one built whole), the vector table
(one segment per partition, with its IVF) and Chroma's rows, then commits the manifest. Only
the driver commits: a failed or killed build leaves the previous generation, as every write.

The index is the one ``build_index`` makes but for its segments (one per partition): the same
chunks in the same order, the same vectors, the same BM25 scores (to float rounding), so
every retriever ranks as it does on a single-machine build. The driver still reads the corpus
and writes Chroma's rows itself.
"""

from __future__ import annotations

import heapq
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

import numpy as np
import orjson
from tqdm import tqdm

from hopgraph.core.errors import HopgraphError, IndexStateError, InputError
from hopgraph.core.settings import IndexSettings
from hopgraph.core.settings import settings as current_settings
from hopgraph.graph_store.documents.loaders import check_unique_ids
from hopgraph.graph_store.documents.schema import Document
from hopgraph.graph_store.index import writes
from hopgraph.graph_store.index.build import (
    check_fresh,
    commit_fresh,
    drop_elsewhere,
    fresh_index,
    new_location,
    new_manifest,
)
from hopgraph.graph_store.index.generations import Generation
from hopgraph.graph_store.index.lock import paused_gc
from hopgraph.graph_store.stores.chunk_table import chunks_in
from hopgraph.graph_store.stores.doc_table import DOCUMENTS_FILE, DocumentTable
from hopgraph.graph_store.stores.kdb_bm25 import save_store
from hopgraph.graph_store.stores.manifest import Manifest, now
from hopgraph.graph_store.stores.vdb_chroma import ChromaLocation
from hopgraph.graph_store.stores.vector_table import VECTORS_FILE, VectorTable

from .connect import connected
from .partitions import CHROMA_VECTORS, CHUNKS_PART, Written, peak_rss_mb, plan, write_partition

RETRIES = 3
"""Times a partition's task is run again after its worker or node died."""


@paused_gc()
def build_index_on(
    address: str,
    docs: Sequence[Document],
    directory: str | Path,
    settings: IndexSettings,
    partitions: int | None = None,
    show_progress: bool = True,
    replace: bool = False,
) -> writes.WriteReport:
    """Build a fresh index of ``docs`` in ``directory`` on the cluster at ``address``.

    ``address``: ``HOST:PORT`` of a running cluster's head, or ``local`` (one started here for
    the build). ``partitions``: how many tasks write the index, each a range of documents
    (default: the cluster's CPUs, at most one a document). The folder must be one every node
    reads and writes at the same path (a shared file system), as a local cluster's is.
    """
    directory = Path(directory).resolve()
    if not docs:
        raise InputError("the corpus is empty", "give at least one document")
    check_unique_ids(docs, "corpus")
    parts = plan(docs, partitions) if partitions else None  # refused before joining a cluster
    check_fresh(directory, replace)  # and an index there without --force
    started = time.perf_counter()
    device = current_settings().device  # --device: where each partition's encoder runs
    with (
        connected(address, {"HOPGRAPH_DEVICE": device}) as ray,
        fresh_index(directory, replace) as old,
    ):
        cpus = int(ray.cluster_resources().get("CPU", 1))
        parts = parts or plan(docs, max(1, min(cpus, len(docs))))
        location = new_location(settings, directory)
        with Generation(directory, old) as gen:
            gpus = 1 if device == "cuda" else 0
            written = _run(ray, parts, directory, gen.folder.name, settings, gpus, show_progress)
            manifest = _reduce(gen, written, settings, location)
            manifest.timings = {
                "build_seconds": time.perf_counter() - started,
                "embed_seconds": max(w.embed_seconds for w in written),
                "partitions": float(len(written)),
                "worker_peak_rss_mb": max(w.peak_rss_mb for w in written),
                "driver_peak_rss_mb": peak_rss_mb(),
            }
            elsewhere = commit_fresh(gen, old, location, manifest)
        drop_elsewhere(elsewhere)
    chunks = manifest.counts["chunks"]
    return writes.WriteReport(
        directory,
        documents=manifest.counts["documents"],
        chunks=chunks,
        added_chunks=chunks,
        removed_chunks=0,
        seconds=time.perf_counter() - started,
        embed_seconds=manifest.timings["embed_seconds"],
    )


def _run(
    ray: ModuleType,
    parts: list[list[Document]],
    directory: Path,
    folder: str,
    settings: IndexSettings,
    gpus: int,
    show_progress: bool,
) -> list[Written]:
    """Run one task a partition (with a GPU each when ``gpus``); return what each wrote."""
    task = ray.remote(max_retries=RETRIES, num_gpus=gpus)(write_partition)
    stamp = now()
    refs = [
        task.remote(n, ray.put(part), str(directory), folder, settings, stamp)
        for n, part in enumerate(parts)
    ]
    pending = list(refs)
    try:
        with tqdm(
            total=len(refs), desc="partitions", unit="partition", disable=not show_progress
        ) as bar:
            while pending:
                done, pending = ray.wait(pending, num_returns=1)
                ray.get(done)  # a failed partition stops the build now
                bar.update(len(done))
        return ray.get(refs)
    except ray.exceptions.RayError as err:
        for ref in pending:
            ray.cancel(ref, force=True)
        raise _failed(ray, err) from err


def _failed(ray: ModuleType, err: Exception) -> HopgraphError:
    """Return what to tell of a failed partition: its own error, or the cluster's.

    Its own (the documents' fault) is said as on one machine; the cluster's is a task that
    failed otherwise, or a worker or node lost past the retries.
    """
    if isinstance(err, ray.exceptions.RayTaskError):
        if isinstance(err.cause, HopgraphError):
            return err.cause
        return IndexStateError(
            f"a partition of the build failed on the cluster: {err.cause!r}",
            "nothing was written; fix the cause and run the build again",
        )
    return IndexStateError(
        f"the cluster lost a partition's task {RETRIES + 1} times ({type(err).__name__})",
        "nothing was written; check the cluster's nodes (`ray status`) and run the build again",
    )


def _reduce(
    gen: Generation, written: list[Written], settings: IndexSettings, location: ChromaLocation
) -> Manifest:
    """Write what needs the whole corpus into the generation; return its manifest."""
    root, name = gen.directory, gen.folder.name
    _check_unique(written)
    counts = {
        "documents": sum(1 for w in written for r in w.records if r.chunks),
        "chunks": sum(len(w.ids) for w in written),
    }
    manifest = new_manifest(settings, dict(written[0].embedder), location, counts)
    documents = DocumentTable.of(r for w in written for r in w.records)
    documents.write(gen.folder / DOCUMENTS_FILE)
    _upsert_rows(gen, written, documents, location)
    _merge_chunks([root / w.path / CHUNKS_PART for w in written], gen.folder / CHUNKS_PART)
    stats = {
        "n": counts["chunks"],
        "total_length": float(sum(w.total_length for w in written)),
        "df": dict(sum((Counter(w.df) for w in written), Counter())),
    }
    save_store(gen.folder / "bm25", [w.bm25 for w in written], stats)
    manifest.files = {
        "chunks": f"{name}/{CHUNKS_PART}",
        "bm25": f"{name}/bm25",
        "documents": f"{name}/{DOCUMENTS_FILE}",
    }
    manifest.segments = [w.bm25 for w in written]
    manifest.vectors = [w.vectors for w in written]
    manifest.ann = VectorTable.load(root, manifest.vectors).ann_files(root, {})
    for w in written:  # the parts are in the merged table now
        (root / w.path / CHUNKS_PART).unlink()
        (root / w.path / CHROMA_VECTORS).unlink(missing_ok=True)
    return manifest


def _check_unique(written: list[Written]) -> None:
    """Refuse chunk ids that two partitions both made (a document id like ``other#3``)."""
    previous = None
    for chunk_id in heapq.merge(*(w.ids for w in written)):
        if chunk_id == previous:
            raise writes.ids_collide()
        previous = chunk_id


def _upsert_rows(
    gen: Generation, written: list[Written], documents: DocumentTable, location: ChromaLocation
) -> None:
    """Write every partition's rows into the new collection, a partition at a time."""
    store = gen.create_collection(location)
    try:
        for w in written:
            chunks = chunks_in(gen.directory / w.path / CHUNKS_PART)
            kept = gen.directory / w.path / CHROMA_VECTORS
            vectors = np.load(kept if kept.is_file() else gen.directory / w.vectors / VECTORS_FILE)
            fields = writes.document_fields(documents.records(r.id for r in w.records), chunks)
            store.upsert(chunks, np.asarray(vectors, dtype=np.float32), gen.number, fields)
    finally:
        store.close()


def _merge_chunks(parts: list[Path], out: Path) -> None:
    """Merge sorted chunk table parts into one table in id order, a line at a time."""
    handles = [path.open("rb") for path in parts]
    try:
        lines = heapq.merge(*handles, key=_line_id)
        with out.open("wb") as table:  # made durable with the generation (Generation.commit)
            table.writelines(lines)
    finally:
        for handle in handles:
            handle.close()


def _line_id(line: bytes) -> str:
    return str(orjson.loads(line)["id"])
