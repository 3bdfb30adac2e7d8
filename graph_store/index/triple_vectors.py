"""Triple vectors on first use: the knowledge graph's triples embedded as one write.

Only the GEAR methods search triples by embedding, so ``graph build`` leaves them out unless
asked (``--triples``); the first of those methods to run calls :func:`embed_triple_vectors`
(tools.registry), and later writes keep them current (their graph settings say so).
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path

from hopgraph.core.errors import IndexStateError
from hopgraph.graph_store.graphs.knowledge_graph import KnowledgeGraph
from hopgraph.graph_store.stores.manifest import Manifest, now, read_manifest

from .generations import Generation
from .graph_build import sync_triples
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
