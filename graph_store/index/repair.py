"""`hopgraph check --repair`: rebuild what an index can derive from its own sound parts.

Chroma's collection is a copy of the vector, chunk and document tables: it is rebuilt from them
into a new store folder, nothing embedded again. The graphs are derived from the chunks: they
are built again as `hopgraph graph build` does. A vector segment's IVF
(graph_store/stores/ivf.py) is built again from the segment. A lost table (chunks, documents,
vectors) is read back from Chroma's rows, and BM25 from the chunks' texts (salvage.py). All
happen in one generation under the write lock, so a reader sees the damaged index or the
repaired one, and a stopped repair changes nothing. Only when both copies of something are lost
(Chroma and the table that holds the same passages) is the damage named, with the documents to
index again.
"""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from hopgraph.core.errors import IndexStateError
from hopgraph.graph_store.graphs.passage_graph import PassageGraph
from hopgraph.graph_store.stores.chunk_table import read_chunks
from hopgraph.graph_store.stores.doc_table import DocumentTable, read_documents
from hopgraph.graph_store.stores.ivf import IVF
from hopgraph.graph_store.stores.manifest import TRIPLE_VECTORS, Manifest, ann_hint, read_manifest
from hopgraph.graph_store.stores.vdb_chroma import ChromaLocation
from hopgraph.graph_store.stores.vector_table import VectorSegment, VectorTable

from .check import Problem, check_index
from .generations import Generation, folder_name, passages_location, recover
from .graph_build import GraphSettings, write_graphs
from .lock import write_lock
from .salvage import Salvage, lost_tables, reindex_hint, salvage
from .triple_vectors import restore_triples
from .writes import document_fields, successor_manifest, write_tables


def repair(directory: Path, show_progress: bool = False) -> list[str]:
    """Repair the index at ``directory``; return what was rebuilt (empty: it was sound).

    A repair can uncover more damage (a lost chunk table hides the parts read with it), so
    the index is checked again after each repair, until it is sound or nothing more mends.
    Raises IndexStateError naming the damage it cannot mend, or the writer holding the lock.
    """
    done: list[str] = []
    with write_lock(directory):
        _finish_killed_write(directory)
        for round_ in range(ROUNDS + 1):  # the last check only says whether it is sound
            problems = check_index(directory)
            if not problems:
                return done
            if round_ < ROUNDS:
                done += _repair_once(directory, problems, show_progress)
    raise IndexStateError(f"{directory} is still damaged after {ROUNDS} repairs",
                          "`hopgraph check` names what is left")  # fmt: skip


ROUNDS = 3
"""Repairs in a row at most: tables, then what their loss hid, then the graphs over them."""


def _finish_killed_write(directory: Path) -> None:
    """Undo a write killed before its commit, as the next write would, before checking.

    Its uncommitted folder would make `check` read Chroma for itself, against tables that may
    be the damage being mended (a killed repair's).
    """
    try:
        manifest = read_manifest(directory)
    except IndexStateError:
        return  # named by the check
    recover(directory, manifest)


def _repair_once(directory: Path, problems: list[Problem], show_progress: bool) -> list[str]:
    """Mend what ``problems`` name, as one new generation; raise on damage beyond repair."""
    manifest = read_manifest(directory)
    chroma = [p for p in problems if p.where.startswith("Chroma")]
    derived = []  # the graphs' files; the triple table goes with them (embedded at first use)
    if manifest.graph:
        derived.append(str(manifest.path(directory, "graph")))
        if TRIPLE_VECTORS in manifest.files:
            derived.append(str(directory / manifest.files[TRIPLE_VECTORS]))
    graphs = [p for p in problems if p.where.startswith(tuple(derived))]
    ivfs = _ivf_segments(directory, manifest, problems)
    lost = lost_tables(directory, manifest, [p for p in problems if p not in ivfs])  # IVF: own
    known = [*chroma, *graphs, *ivfs, *lost.problems]
    other = [p for p in problems if p not in known]
    if chroma and lost.tables & {"chunks", "vectors", "documents"}:
        other += [p for p in lost.problems if p not in other]  # both copies are lost
    if other:
        listed = "\n".join(str(p) for p in other)
        raise IndexStateError(
            f"{directory} has damage that --repair cannot derive ({len(other)}):\n{listed}",
            reindex_hint(directory, manifest),
        )
    order = _graph_order(directory, manifest) if not graphs else None
    tables = salvage(directory, manifest, lost.tables, order) if lost.tables else None
    return _rebuild(directory, rebuild_chroma=bool(chroma), rebuild_graphs=bool(graphs),
                    show_progress=show_progress, ivfs=sorted(set(ivfs.values())),
                    tables=tables)  # fmt: skip


def _graph_order(directory: Path, manifest: Manifest) -> list[str] | None:
    """Return the chunk ids in the generation's order, as the graph's nodes hold them."""
    if not manifest.graph:
        return None
    try:
        return PassageGraph.load(manifest.path(directory, "graph")).ids
    except Exception:  # its files are damaged too: the order comes from elsewhere
        return None


def _ivf_segments(directory: Path, manifest: Manifest, problems: list[Problem]) -> dict:
    """Return the problems that a new IVF mends, each with its vector segment."""
    by_place = {str(directory / name): segment for segment, name in manifest.ann.items()}
    by_place |= {str(directory / segment): segment for segment in manifest.vectors}
    fix = ann_hint(directory)
    return {p: by_place[p.where] for p in problems if p.fix == fix and p.where in by_place}


def _rebuild(
    directory: Path,
    rebuild_chroma: bool,
    rebuild_graphs: bool,
    show_progress: bool,
    ivfs: Sequence[str] = (),
    tables: Salvage | None = None,
) -> list[str]:
    old = read_manifest(directory)
    chunks = tables.chunks if tables is not None else read_chunks(directory, old)
    done = []
    with Generation(directory, old) as gen:
        manifest = successor_manifest(old, chunks)
        damaged = passages_location(directory, old)
        if tables is not None:  # every table written again: BM25 from the chunks' texts
            written = write_tables(gen, manifest, chunks, DocumentTable.of(tables.records),
                                   chunks, tables.vectors)  # fmt: skip
            manifest.segments, manifest.vectors, manifest.ann = written.result()
            source = ", ".join(tables.read_back) or "none"
            done.append(f"tables: chunks, documents, vectors and BM25 written again "
                        f"({len(chunks)} chunks; read back from Chroma: {source})")  # fmt: skip
        if rebuild_chroma:
            location = _fresh_location(directory, damaged, gen.number)
            store = gen.create_collection(location)
            try:
                vectors = VectorTable.load(directory, old.vectors).matrix([c.id for c in chunks])
                fields = document_fields(read_documents(directory, old, chunks), chunks)
                store.upsert(chunks, vectors, gen.number, fields)
            finally:
                store.close()
            manifest.collection, manifest.rows = location.collection, {}
            manifest.chroma_dir = location.path.name if location.path else None
            manifest.chroma_parts = 0  # one collection again, whatever the build wrote
            done.append(f"Chroma: {len(chunks)} rows written from the vector table")
        for number, segment in enumerate(ivfs):
            table = VectorSegment.load(directory, segment)
            name = f"{folder_name(gen.number)}/ivf/{number}.faiss"
            (directory / name).parent.mkdir(parents=True, exist_ok=True)
            IVF.build(np.asarray(table.vectors, dtype=np.float32)).save(directory / name)
            manifest.ann = {**manifest.ann, segment: name}
            done.append(f"IVF of {segment}: built again from its {len(table.ids)} vectors")
        if old.graph and rebuild_chroma and not rebuild_graphs and TRIPLE_VECTORS in old.files:
            restored = restore_triples(directory, gen, manifest)
            done.append(f"Chroma: {restored} triples written from the triple table")
        elif old.graph and rebuild_chroma and not rebuild_graphs:
            # before the triple table they lived only in the damaged store: embedded again
            manifest.graph = {
                **old.graph,
                "settings": {**old.graph["settings"], "embed_triples": False},
            }
            done.append("triple vectors: embedded again at their first use")
        if old.graph and rebuild_graphs:
            # the triple vectors lived in the damaged store: the GEAR methods embed them again
            settings = GraphSettings.model_validate(
                {**old.graph["settings"], "embed_triples": False}
            )
            write_graphs(gen, directory, old, manifest, chunks, chunks, settings,
                         show_progress, fresh=True)  # fmt: skip
            done.append("graphs: built again from the chunks (triple vectors at first use)")
        gen.commit(manifest)
    if (
        rebuild_chroma
        and damaged.path is not None
        and damaged.path != directory / str(manifest.chroma_dir)
    ):
        shutil.rmtree(damaged.path, ignore_errors=True)  # damaged: no reader can use it
    return done


def _fresh_location(directory: Path, damaged: ChromaLocation, generation: int) -> ChromaLocation:
    name = f"{damaged.collection.rsplit('-', 1)[0]}-{uuid.uuid4().hex[:12]}"
    if damaged.url is not None:
        return ChromaLocation(name, url=damaged.url)
    return ChromaLocation(name, path=directory / f"chroma-{folder_name(generation)}")
