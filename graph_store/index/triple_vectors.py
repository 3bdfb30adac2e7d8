"""Triple vectors: embedded on first use as one write, and kept current by every write.

Only the GEAR methods search triples by embedding, so ``graph build`` leaves them out unless
asked (``--triples``); the first of those methods to run calls :func:`embed_triple_vectors`
(tools.registry), and later writes keep them current (their graph settings say so).
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path

import numpy as np

from hopgraph.core.errors import IndexStateError
from hopgraph.graph_store.documents.schema import Scalar
from hopgraph.graph_store.embedding.embedders import embed_with_progress, embedder_for
from hopgraph.graph_store.graphs import triple_table
from hopgraph.graph_store.graphs.knowledge_graph import KnowledgeGraph, StoredTriple
from hopgraph.graph_store.stores.manifest import (
    TRIPLE_VECTORS,
    Manifest,
    graphs_hint,
    now,
    read_manifest,
)
from hopgraph.graph_store.stores.vdb_chroma import GENERATION, ChromaLocation, ChromaVectorStore

from .generations import Generation, folder_name, passages_location
from .lock import write_lock


def embed_triple_vectors(
    directory: str | Path, show_progress: bool = True, wait: float = 0.0
) -> Manifest:
    """Embed the knowledge graph's triples as the next generation; return its manifest.

    ``graph build`` leaves them out unless asked (``--triples``): only the GEAR methods search
    them. The first of those to run calls this, under the write lock; later writes keep them
    current (their graph settings say so). Does nothing when they are there already: so a
    second process that waited (``wait`` seconds) for the first one's embedding finds them.
    """
    directory = Path(directory)
    with contextlib.ExitStack() as held:
        try:
            held.enter_context(write_lock(directory, wait=wait))
        except IndexStateError as err:
            raise IndexStateError(
                f"{directory} has no triple vectors yet, and they cannot be added now: "
                f"{err.message}",
                f"when that write ends, run `hopgraph graph triples --index {directory}`, or "
                "wait longer for it (--wait SECONDS, HOPGRAPH_WAIT)",
            ) from err
        return _embed_triples(directory, show_progress)


def _embed_triples(directory: Path, show_progress: bool) -> Manifest:
    old = read_manifest(directory)
    if old.graph is None:
        raise IndexStateError(
            f"{directory} has no graphs yet",
            f"build them with `hopgraph graph build --index {directory}`",
        )
    if old.graph["settings"].get("embed_triples"):
        return old
    started = time.perf_counter()
    knowledge = KnowledgeGraph.load(old.path(directory, "graph"))
    with Generation(directory, old) as gen:
        manifest = old.model_copy(deep=True)  # the same files: only the triples are added
        manifest.updated_at, manifest.purge = now(), {}
        embedded, _ = sync_triples(directory, gen, knowledge, manifest, True, show_progress)
        assert manifest.graph is not None
        manifest.graph["settings"]["embed_triples"] = True
        manifest.graph["triples_embedded"] = embedded
        manifest.graph["timings"]["triple_embed_seconds"] = time.perf_counter() - started
        gen.commit(manifest)
    return manifest


def sync_triples(
    directory: Path,
    gen: Generation,
    knowledge: KnowledgeGraph | None,
    manifest: Manifest,
    embed: bool,
    show_progress: bool,
) -> tuple[int, list[str]]:
    """Embed the graph's new triples (tagged ``gen``); return their count and gone ids.

    ``knowledge`` is needed only to ``embed``. Every triple's vector goes to Chroma's triple
    collection and to the generation's triple table (graph_store.graphs.triple_table), which readers
    use. Gone triples are not deleted here: the caller purges them once its write is committed.
    """
    store = _open_or_create(passages_location(directory, manifest).triples())
    try:
        stored = set(store.collection.get(include=[])["ids"]) if store.count() else set()
        wanted = {t.id: t for t in knowledge.triples} if embed and knowledge else {}
        new = [t for tid, t in wanted.items() if tid not in stored]
        vectors = np.zeros((0, 0), dtype=np.float32)
        if new:
            embedder = embedder_for(manifest.settings)
            vectors = embed_with_progress(
                embedder, [t.text for t in new], show_progress, "embedding triples"
            )
            store.upsert_records(
                [t.id for t in new],
                vectors,
                [t.text for t in new],
                [_triple_fields(t, gen.number) for t in new],
            )
        if wanted:
            fresh = {t.id: v for t, v in zip(new, vectors, strict=True)}
            triple_table.save(directory, manifest, folder_name(gen.number), list(wanted), fresh,
                              lambda ids: _stored_vectors(store, ids, directory))  # fmt: skip
        else:
            manifest.files.pop(TRIPLE_VECTORS, None)
        return len(new), sorted(stored - wanted.keys())
    finally:
        store.close()


def restore_triples(directory: Path, gen: Generation, manifest: Manifest) -> int:
    """Write the triple table into a new triple collection of ``manifest``'s store; count them.

    For a repaired store: the vectors come from the table, nothing is embedded again.
    """
    triples = KnowledgeGraph.load(manifest.path(directory, "graph")).triples
    vectors = triple_table.load(directory, manifest, [t.id for t in triples])
    assert vectors is not None, "restore_triples needs the triple table"
    store = gen.create_collection(passages_location(directory, manifest).triples())
    try:
        store.upsert_records([t.id for t in triples], vectors, [t.text for t in triples],
                             [_triple_fields(t, gen.number) for t in triples])  # fmt: skip
    finally:
        store.close()
    return len(triples)


def _triple_fields(triple: StoredTriple, generation: int) -> dict[str, Scalar]:
    return {
        "chunk_id": triple.chunk_id,
        "subject": triple.subject,
        "predicate": triple.predicate,
        "object": triple.object,
        GENERATION: generation,
    }


def _stored_vectors(store: ChromaVectorStore, ids: list[str], directory: Path) -> np.ndarray:
    """Read ``ids``' vectors from Chroma, in that order (an index written before the table)."""
    if not ids:
        return np.zeros((0, 0), dtype=np.float32)
    found = store.collection.get(ids=ids, include=["embeddings"])
    by_id = dict(zip(found["ids"], found["embeddings"], strict=True))
    missing = [i for i in ids if i not in by_id]
    if missing:
        raise IndexStateError(
            f"{len(missing)} triples have no stored vector (e.g. {missing[0]!r})",
            graphs_hint(directory),
        )
    return np.asarray([by_id[i] for i in ids], dtype=np.float32)


def _open_or_create(location: ChromaLocation) -> ChromaVectorStore:
    try:
        return ChromaVectorStore(location)
    except IndexStateError:
        return ChromaVectorStore(location, create=True)
