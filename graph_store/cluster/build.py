"""A new index built on a Ray cluster: partitions written by tasks, reduced and committed here.

``build_index_on(address, corpus, directory, settings, partitions)`` is ``build_index`` with
the reading, chunking, embedding and per-partition files on the cluster (partitions.py, one
task a partition, retried on failure) and Chroma's rows written by one more task a partition,
each into a collection of its own (rows.py; graph_store/stores/chroma_parts.py).
The driver hands each task its documents, or for a JSONL corpus (a :class:`Catalog`) only where
its lines are, and reduces what needs the whole corpus, streamed from the parts: the chunk ids
checked unique, the chunk and document tables merged in id order, BM25's global statistics
(the partitions' document frequencies and lengths summed: each partition's segment is scored
with them, so BM25 scores as one built whole) and the vector table (one segment per
partition, with its IVF); then it commits the manifest. Only the driver commits: a failed or
killed build leaves the previous generation, as every write.

The index is the one ``build_index`` makes but for its segments (one per partition): the same
chunks in the same order, the same vectors, the same BM25 scores (to float rounding), so
every retriever ranks as it does on a single-machine build.
"""

from __future__ import annotations

import heapq
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

import orjson
from tqdm import tqdm

from hopgraph.core.errors import InputError
from hopgraph.core.settings import IndexSettings
from hopgraph.core.settings import settings as current_settings
from hopgraph.graph_store.documents.catalog import Catalog
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
from hopgraph.graph_store.index.generations import CHROMA_DIR, Generation
from hopgraph.graph_store.index.lock import paused_gc
from hopgraph.graph_store.stores.doc_table import DOCUMENTS_FILE
from hopgraph.graph_store.stores.kdb_bm25 import save_store
from hopgraph.graph_store.stores.manifest import Manifest, now
from hopgraph.graph_store.stores.vdb_chroma import ChromaLocation
from hopgraph.graph_store.stores.vector_table import VectorTable

from .connect import RETRIES, connected, failed
from .partitions import (
    CHROMA_VECTORS,
    CHUNKS_PART,
    DOCUMENTS_PART,
    Part,
    Written,
    peak_rss_mb,
    plan,
    plan_catalog,
    write_partition,
    write_rows,
)


@paused_gc()
def build_index_on(
    address: str,
    corpus: Sequence[Document] | Catalog,
    directory: str | Path,
    settings: IndexSettings,
    partitions: int | None = None,
    show_progress: bool = True,
    replace: bool = False,
) -> writes.WriteReport:
    """Build a fresh index of ``corpus`` in ``directory`` on the cluster at ``address``.

    ``corpus``: the documents, or a JSONL corpus's catalog (each task reads its own lines).

    ``address``: ``HOST:PORT`` of a running cluster's head, or ``local`` (one started here for
    the build). ``partitions``: how many tasks write the index, each a range of documents
    (default: the cluster's CPUs, at most one a document). The folder must be one every node
    reads and writes at the same path (a shared file system), as a local cluster's is.
    """
    directory = Path(directory).resolve()
    if not corpus:
        raise InputError("the corpus is empty", "give at least one document")
    if not isinstance(corpus, Catalog):  # a catalog's ids were checked as it was made
        check_unique_ids(corpus, "corpus")
    parts = plan_parts(corpus, partitions) if partitions else None  # refused before joining
    check_fresh(directory, replace)  # and an index there without --force
    started = time.perf_counter()
    device = current_settings().device  # --device: where each partition's encoder runs
    with (
        connected(address, {"HOPGRAPH_DEVICE": device}) as ray,
        fresh_index(directory, replace) as old,
    ):
        cpus = int(ray.cluster_resources().get("CPU", 1))
        parts = parts or plan_parts(corpus, max(1, min(cpus, len(corpus))))
        with Generation(directory, old) as gen:
            location = partitioned_location(settings, gen, len(parts))
            gpus = 1 if device == "cuda" else 0
            written = run_partitions(
                ray, parts, directory, gen.folder.name, settings, gpus, show_progress
            )
            # the chunk table first: ids that collide stop the build before Chroma is written
            tables = [directory / w.path / CHUNKS_PART for w in written]
            _merge(tables, gen.folder / CHUNKS_PART, unique=True)
            gen.journal(location)  # before its tasks create it: a failed build drops it
            task = ray.remote(max_retries=RETRIES, max_calls=1)(write_rows)
            rows = [
                task.remote(str(directory), w.path, location.part(w.number), gen.number)
                for w in written
            ]
            try:
                manifest = _reduce(gen, written, settings, location)
                rows_rss = _wait(ray, rows, show_progress)
            except BaseException:
                for ref in rows:  # no row written after the roll-back drops them
                    ray.cancel(ref, force=True)
                raise
            for w in written:  # the parts are in the merged tables and Chroma now
                for name in (CHUNKS_PART, DOCUMENTS_PART, CHROMA_VECTORS):
                    (directory / w.path / name).unlink(missing_ok=True)
            manifest.timings = {
                "build_seconds": time.perf_counter() - started,
                "embed_seconds": max(w.embed_seconds for w in written),
                "partitions": float(len(written)),
                "worker_peak_rss_mb": max(w.peak_rss_mb for w in written),
                "rows_peak_rss_mb": rows_rss,
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
        driver_peak_rss_mb=manifest.timings["driver_peak_rss_mb"],
        task_peak_rss_mb=max(
            manifest.timings["worker_peak_rss_mb"], manifest.timings["rows_peak_rss_mb"]
        ),
    )


def plan_parts(corpus: Sequence[Document] | Catalog, count: int) -> list[Part]:
    """Cut the documents, or a JSONL corpus's catalog, into ``count`` partitions."""
    if isinstance(corpus, Catalog):
        return list(plan_catalog(corpus, count))
    return list(plan(corpus, count))


def partitioned_location(
    settings: IndexSettings, gen: Generation, partitions: int
) -> ChromaLocation:
    """Return a new collection of ``partitions`` parts, in a folder of this build's own.

    The folder (``chroma-gNNNNNN``) is new, so the index it replaces keeps its store until the
    commit, which drops it (drop_elsewhere); a killed build's is removed by a later commit.
    """
    name = new_location(settings, gen.directory).collection
    if settings.chroma_url:
        return ChromaLocation(name, url=settings.chroma_url, parts=partitions)
    path = gen.directory / f"{CHROMA_DIR}-{gen.folder.name}"
    return ChromaLocation(name, path=path, parts=partitions)


def _wait(ray: ModuleType, refs: list, show_progress: bool) -> float:
    """Wait for the rows' tasks; return their largest peak RSS, or raise what to tell."""
    try:
        with tqdm(
            total=len(refs), desc="Chroma rows", unit="partition", disable=not show_progress
        ) as bar:
            pending = list(refs)
            while pending:
                done, pending = ray.wait(pending, num_returns=1)
                ray.get(done)  # a failed partition stops the build now
                bar.update(len(done))
        return max(float(peak) for peak in ray.get(refs))
    except ray.exceptions.RayError as err:
        raise failed(ray, err) from err


def run_partitions(
    ray: ModuleType,
    parts: list[Part],
    directory: Path,
    folder: str,
    settings: IndexSettings,
    gpus: int,
    show_progress: bool,
) -> list[Written]:
    """Run one task a partition (with a GPU each when ``gpus``); return what each wrote.

    They write into ``directory / folder`` (a generation's folder); nothing is committed.
    """
    # max_calls=1: each partition in a fresh worker process, which hands its memory back
    task = ray.remote(max_retries=RETRIES, num_gpus=gpus, max_calls=1)(write_partition)
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
        raise failed(ray, err) from err


def _reduce(
    gen: Generation, written: list[Written], settings: IndexSettings, location: ChromaLocation
) -> Manifest:
    """Write what needs the whole corpus into the generation; return its manifest."""
    root, name = gen.directory, gen.folder.name
    counts = {
        "documents": sum(w.documents for w in written),
        "chunks": sum(w.chunks for w in written),
    }
    manifest = new_manifest(settings, dict(written[0].embedder), location, counts)
    _merge([root / w.path / DOCUMENTS_PART for w in written], gen.folder / DOCUMENTS_FILE)
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
    manifest.ann = VectorTable.ann_files(root, manifest.vectors, {})
    return manifest


def _merge(parts: list[Path], out: Path, unique: bool = False) -> None:
    """Merge table parts sorted by id into one table in id order, a line at a time.

    ``unique``: refuse an id two parts both hold (chunk ids: a document id like ``other#3``
    makes the id of a chunk of ``other``).
    """
    handles = [path.open("rb") for path in parts]
    try:
        keyed = heapq.merge(*(((_line_id(line), line) for line in h) for h in handles))
        previous = None
        with out.open("wb") as table:  # made durable with the generation (Generation.commit)
            for line_id, line in keyed:
                if unique and line_id == previous:
                    raise writes.ids_collide()
                previous = line_id
                table.write(line)
    finally:
        for handle in handles:
            handle.close()


def _line_id(line: bytes) -> str:
    return str(orjson.loads(line)["id"])
