"""Build the passage graph and the knowledge graph of an index, and keep them current.

Graphs are derived data: on every write (``graph build``, and ``add`` / ``delete`` of an index
that has graphs) they are rebuilt from the chunk table and the extractions, inside the same staged
copy as the rest of the index, so they can never hold a deleted chunk, triple or entity, and an
add-then-delete equals a fresh build. What is expensive is not redone: offline extraction takes
seconds; LLM extractions come from a disk cache keyed by model and prompt; only triples that are
new are embedded, and triples that are gone are deleted from their Chroma collection.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from hopgraph.errors import IndexStateError

from .embedding import embed_with_progress, load_embedder
from .extraction import Extraction, Extractor
from .extraction.offline import OfflineExtractor
from .index import GRAPH_DIR, chroma_location, chunk_embeddings, read_chunks
from .knowledge_graph import KnowledgeGraph, build_knowledge_graph
from .manifest import Manifest, now
from .passage_graph import EDGE_TYPES, PassageGraph, PassageGraphSettings, build_passage_graph
from .vdb_chroma import ChromaLocation, ChromaVectorStore

EXTRACTIONS_FILE = "extractions.jsonl"


class GraphSettings(BaseModel):
    """How the graphs of an index are built; stored in the manifest."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    extractor: Literal["offline", "llm"] = Field("offline", description="who reads the chunks")
    max_df: int = Field(
        30, ge=1, description="entities / keywords in more chunks, pages linked from more: no edges"
    )
    keyword_min_shared: int = Field(2, ge=1, description="shared keywords for a keyword edge")
    semantic_k: int = Field(5, ge=0, description="semantic neighbours per chunk")
    semantic_min_sim: float = Field(0.5, ge=-1, le=1, description="least cosine for an edge")
    semantic_search: Literal["auto", "exact", "ann"] = Field(
        "auto", description="exact all-pairs, or an HNSW index (auto: from 20,000 chunks on)"
    )
    embed_triples: bool = Field(True, description="embed triples so they can be searched by text")
    llm_prompts: tuple[Literal["gear", "iier", "gnn_ret"], ...] = Field(
        ("gear", "iier"),
        min_length=1,
        description="LLM prompt sets: GEAR entities + triples, IIER keywords, GNN-Ret links",
    )

    def passage_settings(self) -> PassageGraphSettings:
        """Return the passage-graph density knobs."""
        return PassageGraphSettings(
            self.max_df,
            self.keyword_min_shared,
            self.semantic_k,
            self.semantic_min_sim,
            self.semantic_search,
        )


def triples_location(passages: ChromaLocation) -> ChromaLocation:
    """Return where an index's triple embeddings live: beside its passages, suffixed."""
    return passages.triples()


def make_extractor(settings: GraphSettings, directory: Path) -> Extractor:
    """Return the configured extractor (the LLM one needs an LLM configuration)."""
    if settings.extractor == "offline":
        return OfflineExtractor()
    from .extraction.llm import LLMExtractor

    return LLMExtractor.from_environment(llm_cache_path(directory), settings.llm_prompts)


def llm_cache_path(directory: Path) -> Path:
    """Return the LLM extraction cache of an index: beside it, so it outlives failed builds."""
    return directory.parent / f".{directory.name}.llm-cache.sqlite"


def write_graphs(
    staging: Path, directory: Path, manifest: Manifest, settings: GraphSettings, show_progress: bool
) -> dict[str, Any]:
    """Extract, build and save both graphs into ``staging``; sync the triple collection."""
    started = time.perf_counter()
    chunks = read_chunks(staging)
    extractor = make_extractor(settings, directory)
    try:
        extractions = extractor.extract(chunks, show_progress)
    finally:
        if hasattr(extractor, "close"):
            extractor.close()
    extracted = time.perf_counter()
    save_extractions(staging / GRAPH_DIR, extractions)
    passages = chroma_location(staging, manifest)
    passage_graph = build_passage_graph(
        chunks, extractions, chunk_embeddings(passages, chunks), settings.passage_settings()
    )
    knowledge = build_knowledge_graph([c.id for c in chunks], extractions)
    passage_graph.save(staging / GRAPH_DIR)
    knowledge.save(staging / GRAPH_DIR)
    built = time.perf_counter()
    embedded = (
        sync_triples(triples_location(passages), knowledge, manifest, show_progress)
        if settings.embed_triples
        else 0
    )
    return {
        "settings": settings.model_dump(),
        "counts": graph_counts(passage_graph, knowledge),
        "timings": {
            "extract_seconds": extracted - started,
            "graph_seconds": built - extracted,
            "triple_embed_seconds": time.perf_counter() - built,
        },
        "triples_embedded": embedded,
        "llm": getattr(extractor, "stats", None),
        "built_at": now(),
    }


def sync_triples(
    location: ChromaLocation, knowledge: KnowledgeGraph, manifest: Manifest, show_progress: bool
) -> int:
    """Make the triple collection hold exactly the graph's triples; embed only new ones."""
    store = _open_or_create(location)
    try:
        stored = set(store.collection.get(include=[])["ids"]) if store.count() else set()
        wanted = {t.id: t for t in knowledge.triples}
        gone = sorted(stored - wanted.keys())
        new = [t for tid, t in wanted.items() if tid not in stored]
        if gone:
            store.delete(gone)
        if new:
            embedder = load_embedder(manifest.settings.model, manifest.settings.batch_size)
            vectors = embed_with_progress(
                embedder, [t.text for t in new], show_progress, "embedding triples"
            )
            store.upsert_records(
                [t.id for t in new],
                vectors,
                [t.text for t in new],
                [
                    {
                        "chunk_id": t.chunk_id,
                        "subject": t.subject,
                        "predicate": t.predicate,
                        "object": t.object,
                    }
                    for t in new
                ],
            )
        return len(new)
    finally:
        store.close()


def _open_or_create(location: ChromaLocation) -> ChromaVectorStore:
    try:
        return ChromaVectorStore(location)
    except IndexStateError:
        return ChromaVectorStore(location, create=True)


def graph_counts(passage_graph: PassageGraph, knowledge: KnowledgeGraph) -> dict[str, Any]:
    """Count nodes and edges by type, and the knowledge graph's size."""
    edges = {k: passage_graph.edge_count(k) for k in EDGE_TYPES}
    chunks = max(len(passage_graph.ids), 1)
    return {
        "chunks": len(passage_graph.ids),
        "edges": edges,
        "mean_degree": float(passage_graph.degrees().mean()) if passage_graph.ids else 0.0,
        "entities": len(knowledge.entities),
        "triples": len(knowledge.triples),
        "triples_per_chunk": len(knowledge.triples) / chunks,
    }


def save_extractions(directory: Path, extractions: Sequence[Extraction]) -> None:
    """Write one extraction per line (inspectable with jq)."""
    import json

    directory.mkdir(parents=True, exist_ok=True)
    with (directory / EXTRACTIONS_FILE).open("w", encoding="utf-8") as handle:
        for extraction in extractions:
            handle.write(json.dumps(extraction.to_dict(), ensure_ascii=False) + "\n")
