"""Build the passage graph and the knowledge graph of an index, and keep them current.

Graphs are derived data, written with every write of an index that has them into that write's
generation folder, so they can never hold a deleted chunk, triple or entity. ``graph build``
builds them from scratch; ``add`` / ``delete`` bring the previous generation's up to date and
cost what they change: offline extraction re-reads only new chunks and chunks whose title
links may have changed (extraction.readings.CorpusReadings); semantic neighbours are searched
only for new chunks and chunks that lost more than their spare neighbours
(semantic.update_nearest); LLM extractions come from a disk cache keyed by model and
prompt; only new triples are embedded. The result equals a fresh build of the final corpus
(tests/unit/graph_store/graphs/test_incremental_graphs.py).
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from hopgraph.core.forked import Forked
from hopgraph.core.threads import Map
from hopgraph.graph_store.documents.schema import Chunk
from hopgraph.graph_store.graphs.extraction import Extractor
from hopgraph.graph_store.graphs.extraction.readings import CorpusReadings, OfflineExtractor
from hopgraph.graph_store.graphs.extraction.table import (
    EXTRACTION_PARTS,
    EXTRACTIONS_FILE,
    ExtractionTable,
    load_extractions,
)
from hopgraph.graph_store.graphs.knowledge_graph import (
    KnowledgeGraph,
    build_knowledge_graph,
)
from hopgraph.graph_store.graphs.passage_edges import build_passage_graph
from hopgraph.graph_store.graphs.passage_graph import (
    PassageGraphSettings,
    graph_counts,
    passage_counts,
    save_nodes,
)
from hopgraph.graph_store.graphs.semantic import (
    NEIGHBOURS_FILE,
    SPARE_NEIGHBOURS,
    Neighbours,
    nearest,
    previous_lists,
    update_nearest,
)
from hopgraph.graph_store.stores.chunk_table import ChunkScan, WriteTexts, changed_chunks, ids_of
from hopgraph.graph_store.stores.manifest import Manifest, now
from hopgraph.graph_store.stores.vdb_chroma import ChromaLocation

from .generations import Generation, folder_name
from .stored_vectors import read_vectors
from .triple_vectors import sync_triples

log = logging.getLogger(__name__)

GRAPH_DIR = "graph"
NeighbourSearch = Callable[[Path, Manifest, int, int, str, Path, Path], None]
"""Who finds a fresh build's neighbour lists elsewhere (a cluster's tasks: cluster/neighbours.py):
(index folder, the committed manifest, its chunks' count, list width, semantic_search, a
scratch folder inside the new graph folder, for the tasks' files, the file to write the lists
to, as ``Neighbours.save`` does)."""
CorpusReader = Callable[[Path, Manifest, int, Path], None]
"""Who reads a fresh build's chunks elsewhere with the offline extractor (a cluster's tasks:
cluster/readings.py): (index folder, the committed manifest, its chunks' count, the new graph
folder) → the extractor's state and the chunks' extractions saved there, these in parts
(:data:`EXTRACTION_PARTS`)."""
Chunks = Sequence[Chunk] | ChunkScan
"""A write's chunks in row order; a fresh build by tasks reads them from its table
(:class:`ChunkScan`): what its driver needs is their count and ids, a pass each."""


NeighbourUpdate = Callable[
    [Path, Manifest, Chunks, tuple[Path, frozenset[str]], tuple[int, int], Path, Path],
    bool,
]
"""Who brings a write's neighbour lists up to date elsewhere (a cluster's tasks:
cluster/list_update.py), as semantic.update_nearest does: (index folder, the write's manifest,
whose vectors are written, chunks in row order, (the previous graph folder, the ids replaced),
(``semantic_k``, the lists' width), a scratch folder inside the new graph folder, the file to
write the lists to) → whether it did: ``False`` when the previous graph has no lists that wide
(this process then searches afresh)."""


ReadingUpdate = Callable[
    [Path, Manifest, Path, tuple[Chunks, Sequence[Chunk], Sequence[Chunk]], Chunks, Path],
    bool,
]  # fmt: skip
"""Who brings a write's offline readings up to date elsewhere (a cluster's tasks:
cluster/reading_update.py): (index folder, the previous generation's manifest, its graph folder,
(its chunks, the chunks removed, the chunks added: a replaced id in both), the write's chunks in
row order, the new graph folder) → whether it did: the state saved there, the extractions in
parts of rows (:data:`EXTRACTION_PARTS`); ``False`` when the previous state is not saved in
parts (one process's), which this process updates."""
PartsBuild = Callable[[Path, Manifest, Path, PassageGraphSettings], tuple[dict[str, Any], int, int]]
"""Who makes both graphs elsewhere from the parts a reading left in the new graph folder
(:data:`EXTRACTION_PARTS`) and its neighbour lists (cluster/graph_parts.py): (index folder,
the manifest whose chunk table the tasks read, written whole, the new graph folder, knobs) →
(:func:`passage_counts`, the knowledge graph's entities, its triples); it writes both graphs'
files but ``nodes.json``."""


@dataclass(frozen=True)
class GraphTasks:
    """Who does a build's or a write's heavy parts outside this process (a cluster's tasks)."""

    neighbours: NeighbourSearch | None = None
    readings: CorpusReader | None = None
    update: NeighbourUpdate | None = None
    reread: ReadingUpdate | None = None
    parts: PartsBuild | None = None
    stores: Map | None = None
    """Makes a write's Chroma calls, a call a collection: this process then opens none."""


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
        "auto",
        description="exact all-pairs, or an NN-descent kNN graph (auto: from 20,000 chunks on)",
    )
    embed_triples: bool = Field(
        False,
        description="embed triples now (else at the first use of a method that searches them)",
    )
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
    from hopgraph.graph_store.graphs.extraction.llm import LLMExtractor

    return LLMExtractor.from_environment(llm_cache_path(directory), settings.llm_prompts)


def llm_cache_path(directory: Path) -> Path:
    """Return the LLM extraction cache of an index: beside it, so it outlives failed builds."""
    return directory.parent / f".{directory.name}.llm-cache.sqlite"


def write_graphs(
    gen: Generation,
    directory: Path,
    previous: Manifest,
    manifest: Manifest,
    before: Chunks,
    chunks: Chunks,
    settings: GraphSettings,
    show_progress: bool,
    fresh: bool,
    replaced: frozenset[str] = frozenset(),
    tasks: GraphTasks | None = None,
    written: Callable[[], object] | None = None,
) -> None:
    """Write both graphs of ``chunks`` (``manifest``'s) into ``gen``'s folder; sync the triples.

    ``before`` is the previous generation's chunk list; its graphs are updated unless ``fresh``
    or they were built with other settings. ``replaced``: ids in both lists whose text
    changed (read again, searched again). ``tasks``: who finds fresh neighbour lists and makes a
    fresh offline reading (default: this process), in the ``previous`` generation, whose
    vectors and chunks are the same. ``written``: waits until a write's chunk table is written
    (a forked child writes it meanwhile), which the parts' tasks read. Sets ``manifest.graph``,
    its graph file and the triples to purge.
    """
    started = time.perf_counter()
    old_dir = None
    if not fresh and previous.graph and _settings(previous) == settings:
        old_dir = previous.path(directory, "graph")
    target = gen.folder / GRAPH_DIR
    target.mkdir()
    by_parts = tasks is not None and tasks.parts is not None
    # a failed write waits for the children (leaving ``with``) before its folder is removed
    with contextlib.ExitStack() as children:
        semantic: Forked[Neighbours | None] | None = None
        if old_dir is not None:  # a forked child (or tasks) brings the lists up to date meanwhile
            semantic = children.enter_context(
                _semantic(directory, manifest, old_dir, chunks, settings, target, replaced,
                          update=tasks.update if tasks else None, keep=not by_parts)
            )  # fmt: skip
        extractions, llm_stats = _extract(
            settings, (directory, previous), old_dir, (before, replaced), chunks, target,
            show_progress, tasks, fresh,
        )  # fmt: skip
        extracted = time.perf_counter()

        def lists() -> Forked[Neighbours | None]:
            """Return the update's lists, or a fresh search's (the tasks' finder's), made now."""
            finder = tasks.neighbours if tasks else None
            return semantic or _semantic(directory, manifest, None, chunks, settings, target,
                                         search=(finder, previous), keep=not by_parts)  # fmt: skip

        if extractions is None and by_parts:
            assert tasks is not None and tasks.parts is not None
            knowledge, passage_counts, kg_sizes = _graphs_by_tasks(
                (directory, manifest), chunks, lists(), settings, target, (tasks.parts, written)
            )
        else:  # left in parts by the readings' calls (no parts build): joined here
            extractions = joined_parts(target) if extractions is None else extractions
            knowledge, passage_counts, kg_sizes = _graphs_here(
                chunks, extractions, lists, settings, target
            )
    built = time.perf_counter()
    embedded, gone = sync_triples(
        directory, gen, knowledge, manifest, settings.embed_triples, show_progress
    )
    manifest.files["graph"] = f"{folder_name(gen.number)}/{GRAPH_DIR}"
    manifest.purge["triples"] = gone
    manifest.graph = {
        "settings": settings.model_dump(),
        "counts": graph_counts(passage_counts, *kg_sizes),
        "timings": {
            "extract_seconds": extracted - started,
            "graph_seconds": built - extracted,
            "triple_embed_seconds": time.perf_counter() - built,
        },
        "incremental": old_dir is not None,
        "triples_embedded": embedded,
        "llm": llm_stats,
        "built_at": now(),
    }


def _settings(manifest: Manifest) -> GraphSettings:
    assert manifest.graph is not None
    return GraphSettings.model_validate(manifest.graph["settings"])


def _extract(
    settings: GraphSettings,
    committed: tuple[Path, Manifest],
    old_dir: Path | None,
    previous: tuple[Chunks, frozenset[str]],
    chunks: Chunks,
    target: Path,
    show_progress: bool,
    tasks: GraphTasks | None = None,
    fresh: bool = False,
) -> tuple[ExtractionTable | None, dict[str, int] | None]:
    """Extract every chunk (offline: from the previous readings; LLM: from its cache).

    ``committed``: the index folder and the previous generation's manifest, whose table has the
    texts of the chunks a write reads without them (changes.py: only its new chunks have
    theirs; a ``fresh`` build's chunks all have theirs). ``previous``: the last generation's
    chunks and the ids replaced since (read again). ``tasks``: who makes a fresh offline
    reading (``readings``: the extractions ``None``, left in parts) or brings the previous one
    up to date (``reread``). Returns the extractions and the LLM's request counts (``None``
    offline).
    """
    directory, manifest = committed
    given = tasks or GraphTasks()
    before, replaced = previous
    if given.readings is not None and old_dir is None and settings.extractor == "offline":
        given.readings(directory, manifest, len(chunks), target)
        return None, None  # left in parts
    removed, added = changed_chunks(before, chunks, replaced)
    texts = WriteTexts(directory, manifest, added, held=fresh)
    if settings.extractor != "offline":
        return _llm_extract(settings, directory, texts.of(chunks), show_progress)
    removed = texts.before(removed)  # their words and titles leave the counts
    if given.reread is not None and old_dir is not None:
        if given.reread(directory, manifest, old_dir, (before, removed, added), chunks, target):
            return None, None  # left in parts
        log.warning(
            "the graphs' offline readings are saved as one file (a write in one process saved "
            "them): this write brings them up to date here and saves them so again; "
            "`hopgraph graph build --cluster` saves them in parts that tasks update"
        )
    state = CorpusReadings.load(old_dir, before) if old_dir else None
    if state is None:  # a first reading: every chunk is read
        state, removed, added = CorpusReadings(), [], texts.of(chunks)
    extractions = state.update(chunks, removed, added, show_progress, texts.lookup())
    state.save(target)
    return extractions, None


def _llm_extract(
    settings: GraphSettings, directory: Path, chunks: Sequence[Chunk], show_progress: bool
) -> tuple[ExtractionTable, dict[str, int] | None]:
    """Extract every chunk with the LLM (from its cache where it has read one before)."""
    extractor = make_extractor(settings, directory)
    try:
        extracted = ExtractionTable.from_extractions(extractor.extract(chunks, show_progress))
        return extracted, getattr(extractor, "stats", None)
    finally:
        if hasattr(extractor, "close"):
            extractor.close()


def _semantic(
    directory: Path,
    manifest: Manifest,
    old_dir: Path | None,
    chunks: Chunks,
    settings: GraphSettings,
    target: Path,
    replaced: frozenset[str] = frozenset(),
    search: tuple[NeighbourSearch | None, Manifest] | None = None,
    update: NeighbourUpdate | None = None,
    keep: bool = True,
) -> Forked[Neighbours | None]:
    """Find and save each chunk's nearest chunks; the result: those lists, if ``keep``.

    (A parts build's tasks read them from the saved file: this process then holds none.)

    They depend on the vectors only, so when the previous lists are brought up to date a
    forked child does it while this process extracts, or ``update``'s tasks do it here. A
    fresh search (its index takes gigabytes at a million chunks) is done here, in place, or by
    ``search``'s finder in the committed generation ``search`` names (the vectors are not read
    here).
    """
    wanted = settings.semantic_k + SPARE_NEIGHBOURS
    scratch = target / "neighbour-search"

    def work() -> Neighbours | None:
        finder, committed = search or (None, manifest)
        saved, found = target / NEIGHBOURS_FILE, None
        if old_dir is not None and update is not None:  # by tasks, which write the file
            widths = (settings.semantic_k, wanted)
            if update(directory, manifest, chunks, (old_dir, replaced), widths, scratch, saved):
                return _saved(saved, scratch, keep)
        previous = None
        if old_dir is not None and update is None:
            previous = previous_lists(old_dir, ids_of(chunks), wanted, replaced)
        if previous is None and finder is not None:  # by tasks, which write the file
            mode = settings.semantic_search
            finder(directory, committed, len(chunks), wanted, mode, scratch, saved)
            return _saved(saved, scratch, keep)
        vectors = read_vectors(directory, manifest, chunks)
        if previous is not None:
            found = update_nearest(*previous, vectors, settings.semantic_k)
        else:
            found = nearest(vectors, wanted, settings.semantic_search)
        found.save(saved)
        return _saved(saved, scratch, keep, found)

    in_child = old_dir is not None and update is None
    return Forked("finding the semantic neighbours", work, in_child=in_child)


def _saved(
    saved: Path, scratch: Path, keep: bool, found: Neighbours | None = None
) -> Neighbours | None:
    """Return the lists saved (``found``, or read back) if ``keep``; the scratch folder goes."""
    if scratch.exists():  # the tasks' files are gone by now: an error if not
        scratch.rmdir()
    if not keep:
        return None
    return found if found is not None else Neighbours.load(saved)


def _passage_graph(
    chunks: Sequence[Chunk],
    extractions: ExtractionTable,
    semantic: Forked[Neighbours | None],
    settings: GraphSettings,
    target: Path,
) -> dict[str, Any]:
    """Build and save the passage graph here; return its counts (:func:`passage_counts`)."""
    lists = semantic.result() or Neighbours.load(target / NEIGHBOURS_FILE)  # kept, or saved
    graph = build_passage_graph(chunks, extractions, lists, settings.passage_settings())
    graph.save(target)
    return passage_counts(graph)


def _graphs_here(
    chunks: Sequence[Chunk],
    extractions: ExtractionTable,
    lists: Callable[[], Forked[Neighbours | None]],
    settings: GraphSettings,
    target: Path,
) -> tuple[KnowledgeGraph | None, dict[str, Any], tuple[int, int]]:
    """Make both graphs in this process from the chunks' extractions (saved here too).

    Triples are embedded from the graph in this process; otherwise a forked child builds and
    saves it while this one finds the ``lists`` (a fresh search is started here) and builds the
    passage graph: two cores, each busy. Returns as :func:`_graphs_by_tasks`.
    """
    save_extractions(target, extractions)
    with _knowledge(chunks, extractions, target, keep=settings.embed_triples) as kg:
        counts = _passage_graph(chunks, extractions, lists(), settings, target)
        knowledge, entities, triples = kg.result()
    return knowledge, counts, (entities, triples)


def _graphs_by_tasks(
    committed: tuple[Path, Manifest],
    chunks: Chunks,
    semantic: Forked[Neighbours | None],
    settings: GraphSettings,
    target: Path,
    parts: tuple[PartsBuild, Callable[[], object] | None],
) -> tuple[KnowledgeGraph | None, dict[str, Any], tuple[int, int]]:
    """Make both graphs by ``parts``' tasks from the parts a reading's tasks left.

    This process holds neither the extractions nor an edge list nor its chunks' columns. The
    extractions stay in their parts (:data:`EXTRACTION_PARTS`, read joined:
    table.load_extractions). The tasks read their rows from the ``committed`` manifest's chunk
    table: a write's once the second of ``parts`` says it is written. Returns the knowledge
    graph (loaded when its triples are to be embedded), the passage graph's counts and the
    knowledge graph's size (entities, triples).
    """
    build, written = parts
    semantic.result()  # saved in the graph folder, where the tasks read it
    if written is not None:
        written()
    counts, entities, triples = build(*committed, target, settings.passage_settings())
    save_nodes(ids_of(chunks), target)
    knowledge = KnowledgeGraph.load(target) if settings.embed_triples else None
    return knowledge, counts, (entities, triples)


def _knowledge(
    chunks: Sequence[Chunk], extractions: ExtractionTable, target: Path, keep: bool
) -> Forked[tuple[KnowledgeGraph | None, int, int]]:
    """Build and save the knowledge graph; its result: the graph (when ``keep``) and its sizes.

    When the write does not need it back (no triples to embed), a forked child does it while
    this process searches neighbours and builds the passage graph.
    """
    ids = [c.id for c in chunks]

    def work() -> tuple[KnowledgeGraph | None, int, int]:
        graph = build_knowledge_graph(ids, extractions)
        graph.save(target)
        return graph if keep else None, len(graph.entities), len(graph.triples)

    return Forked("building the knowledge graph", work, in_child=not keep)


def joined_parts(target: Path) -> ExtractionTable:
    """Return the extractions a reading left in parts in ``target``, joined (the parts go)."""
    joined = load_extractions(target)
    shutil.rmtree(target / EXTRACTION_PARTS)
    return joined


def save_extractions(directory: Path, extractions: ExtractionTable) -> None:
    """Write every chunk's extraction (``Index.extractions`` reads them back)."""
    directory.mkdir(parents=True, exist_ok=True)
    extractions.save(directory / EXTRACTIONS_FILE)
