"""`hopgraph check`: is every file of an index there and readable, and do they agree?

Reads each part of the committed generation in turn: the manifest, the chunk and document
tables, the vector table, BM25, Chroma (its files against their seal, stores.chroma_seal,
or its rows where the last write left none) and the graphs. It then checks what must hold
across them: the chunk ids are the vector ids, the BM25 ids, Chroma's rows (when read) and the
graph's nodes, and the counts are the manifest's. Each problem names the file and the command that
repairs it. Commands that fail on a damaged index run this to say which file is at fault.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from hopgraph.core.errors import HopgraphError, IndexStateError, disk_full
from hopgraph.graph_store.documents.schema import Chunk
from hopgraph.graph_store.graphs import triple_table
from hopgraph.graph_store.stores import chroma_child
from hopgraph.graph_store.stores.chunk_table import read_chunks
from hopgraph.graph_store.stores.doc_table import read_documents
from hopgraph.graph_store.stores.ivf import IVF, MIN_ROWS
from hopgraph.graph_store.stores.manifest import (
    MANIFEST,
    TRIPLE_VECTORS,
    Manifest,
    ann_hint,
    crc32,
    damaged_files,
    graphs_hint,
    read_manifest,
    rebuild_hint,
    repair_hint,
    tables_hint,
)
from hopgraph.graph_store.stores.vector_table import VectorSegment, VectorTable

from .generations import passages_location


@dataclass(frozen=True)
class Problem:
    """One damaged or inconsistent part: which file, what is wrong, how to repair it."""

    where: str
    what: str
    fix: str

    def __str__(self) -> str:
        joint = " " if self.what.startswith("is ") else ": "  # "x is missing", "x: KeyError"
        return f"{self.where}{joint}{self.what}\n  fix: {self.fix}"


class Findings:
    """The problems found so far, and how to try one part: its failure becomes a problem."""

    def __init__(self) -> None:
        self.problems: list[Problem] = []

    def attempt(self, where: str, fix: str | Callable[[], str], step: Callable[[], Any]) -> Any:
        """Run ``step``; if it raises, record the problem with ``where`` and ``fix``.

        ``fix`` may be worked out only on failure (a rebuild hint reads the documents table).
        """
        try:
            return step()
        except Exception as err:  # a damaged file fails in its own library's way
            what = err.message if isinstance(err, HopgraphError) else f"{type(err).__name__}: {err}"
            fix = FULL_FIX if disk_full(err) else fix
            self.problems.append(Problem(where, what, fix if isinstance(fix, str) else fix()))
            return None


FULL_FIX = "free space on the device that holds the index, then check it again (not damage)"


def check_index(
    directory: str | Path, chroma: chroma_child.ChromaCheck | None = None
) -> list[Problem]:
    """Return every problem found in the index at ``directory`` (empty: it is sound).

    ``chroma``: the Chroma check already started for it (chroma_child.start), else one is.
    """
    directory = Path(directory)
    if chroma is None:
        chroma = chroma_child.start(directory)  # first, beside the rest: it imports Chroma
    found = Findings()
    rebuild = partial(rebuild_hint, directory)
    manifest = found.attempt(MANIFEST, rebuild, lambda: read_manifest(directory))
    if manifest is None:
        chroma.stop()
        return found.problems
    sound = _check_files(directory, manifest, found)
    where = str(manifest.path(directory, "chunks"))
    # without texts (gigabytes at millions of chunks): the checksums above vouch for them
    tables = tables_hint(directory)
    chunks = None
    if sound(manifest.files["chunks"]):
        chunks = found.attempt(where, tables, lambda: read_chunks(directory, manifest, False))
    if chunks is not None:  # read_chunks also checks the count against the manifest
        _check_tables(directory, manifest, chunks, found, sound)
        ids = [c.id for c in chunks]
        del chunks  # the rest needs only the ids: 230 of the 294 bytes a chunk holds go
        if sound(manifest.files["bm25"], *manifest.segments):
            _check_stores(directory, manifest, ids, found)
        graph_parts = (manifest.files.get(part, "") for part in ("graph", TRIPLE_VECTORS))
        if manifest.graph and sound(*graph_parts):
            _check_graphs(directory, manifest, ids, found)
    _check_chroma(directory, manifest, chroma, found)
    return found.problems


def _check_chroma(
    directory: Path, manifest: Manifest, child: chroma_child.ChromaCheck, found: Findings
) -> None:
    """Name what the child process found wrong with Chroma (graph_store.index.check_chroma)."""
    chroma_problems = child.collect()
    where = f"Chroma ({passages_location(directory, manifest).describe()})"
    fix = (
        f"`hopgraph check --repair --index {directory}` rebuilds it from the vector table "
        "(nothing is embedded again)"
    )
    for what in chroma_problems:
        # opening an embedded store writes its journal: on a full device that is the finding
        found.problems.append(Problem(where, what, FULL_FIX if disk_full(what) else fix))


def _check_files(directory: Path, manifest: Manifest, found: Findings) -> Sound:
    """Check every file's recorded size, then the CRC-32 of those whose size is right.

    Returns which parts are sound: a part with a damaged file is not read further (its
    problem is named; a link to /dev/zero read as a table would fill the memory).
    """
    damaged = damaged_files(directory, manifest)
    for path, what in damaged:
        found.problems.append(Problem(path, what, repair_hint(directory, manifest, path)))
    seen = {path for path, _ in damaged}
    for name, expected in manifest.checksums.items():
        path = directory / name
        if str(path) in seen:
            continue
        try:
            same = crc32(path, manifest.sizes.get(name)) == expected
        except OSError as err:  # gone or changed since its size was checked
            seen.add(str(path))
            found.problems.append(Problem(str(path), f"cannot be read: {err}",
                                          repair_hint(directory, manifest, path)))  # fmt: skip
            continue
        if not same:
            seen.add(str(path))
            what = "is damaged: its CRC-32 is not the one recorded when it was written"
            found.problems.append(Problem(str(path), what, repair_hint(directory, manifest, path)))
    bad = [Path(p) for p in seen]

    def sound(*parts: str) -> bool:
        roots = [directory / part for part in parts if part]
        return not any(p == root or root in p.parents for p in bad for root in roots)

    return sound


Sound = Callable[..., bool]
"""Whether the parts named (paths relative to the index) have no damaged file."""


def _check_tables(
    directory: Path, manifest: Manifest, chunks: list[Chunk], found: Findings, sound: Sound
) -> None:
    """Check that the documents are the chunks' and the vector table holds every chunk."""
    rebuild = tables_hint(directory)

    def documents() -> None:
        records = read_documents(directory, manifest, chunks)
        if {r.id for r in records} != {c.doc_id for c in chunks}:
            raise ValueError("its documents are not the chunks'")

    if sound(manifest.files.get("documents", "")):
        where = str(directory / manifest.files.get("documents", "(documents)"))
        found.attempt(where, rebuild, documents)
    if manifest.vectors and sound(*manifest.vectors):
        where = ", ".join(str(directory / p) for p in manifest.vectors)
        vectors = VectorTable.load  # read every row: a chunk without one is an error
        found.attempt(
            where,
            rebuild,
            lambda: vectors(directory, manifest.vectors).read_every([c.id for c in chunks]),
        )
        _check_ivfs(directory, manifest, found)


def _check_ivfs(directory: Path, manifest: Manifest, found: Findings) -> None:
    """Check that every large vector segment has an IVF that reads as its own (ivf.py).

    Missing or damaged files are named by :func:`_check_files`; this reads the sound ones, and
    names a large segment without one (written before hopgraph kept them).
    """
    fix = ann_hint(directory)
    for segment in manifest.vectors:
        try:
            table = VectorSegment.load(directory, segment)
        except IndexStateError:
            continue  # named above
        rows, dim = table.vectors.shape
        name = manifest.ann.get(segment)
        if name is None:
            if rows >= MIN_ROWS:
                what = "has no IVF index (written before hopgraph kept one): dense search scans it"
                found.problems.append(Problem(str(directory / segment), what, fix))
        elif not any(p.where == str(directory / name) for p in found.problems):
            # only a file whose size and CRC-32 hold: faiss may crash on a damaged one
            found.attempt(
                str(directory / name), fix, partial(IVF.load, directory / name, rows, dim)
            )


def _check_stores(directory: Path, manifest: Manifest, ids: list[str], found: Findings) -> None:
    """Check that BM25's segments and Chroma's rows cover every chunk."""
    from hopgraph.graph_store.stores.kdb_bm25 import BM25Store

    bm25 = manifest.path(directory, "bm25")

    def keyword_rows() -> None:
        store = BM25Store.load(bm25, directory, [_stub(i) for i in ids])
        covered = {i for segment in store.segments for i in segment.ids}
        _all_there(ids, covered, "BM25 row")

    found.attempt(str(bm25), tables_hint(directory), keyword_rows)


def _all_there(ids: list[str], held: set[str], what: str) -> None:
    missing = [i for i in ids if i not in held]
    if missing:
        raise ValueError(f"{len(missing)} chunks have no {what} (e.g. {missing[0]!r})")


def _check_graphs(directory: Path, manifest: Manifest, ids: list[str], found: Findings) -> None:
    """Check that the graph's nodes are the chunks and the graph files load."""
    from hopgraph.graph_store.graphs.extraction.reading_table import READINGS_FILE, read_each
    from hopgraph.graph_store.graphs.extraction.state_shards import STATE_SHARDS, read_shards
    from hopgraph.graph_store.graphs.extraction.table import (
        EXTRACTION_PARTS,
        EXTRACTIONS_FILE,
        load_extractions,
    )
    from hopgraph.graph_store.graphs.knowledge_graph import KnowledgeGraph
    from hopgraph.graph_store.graphs.passage_graph import PassageGraph

    folder = manifest.path(directory, "graph")
    fix = graphs_hint(directory)

    def passage_graph() -> None:
        if list(PassageGraph.load(folder).ids) != ids:
            raise ValueError("its nodes are not the index's chunks")

    def triple_ids() -> list[str]:  # the graph itself is let go before the next file is read
        return [t.id for t in KnowledgeGraph.load(folder).triples]

    found.attempt(str(folder), fix, passage_graph)
    triples = found.attempt(str(folder), fix, triple_ids)
    if triples is not None and TRIPLE_VECTORS in manifest.files:
        table = directory / manifest.files[TRIPLE_VECTORS]
        found.attempt(str(table), fix, lambda: triple_table.load(directory, manifest, triples))
    named = folder / (
        EXTRACTION_PARTS if (folder / EXTRACTION_PARTS).is_dir() else EXTRACTIONS_FILE
    )
    found.attempt(str(named), fix, lambda: load_extractions(folder))
    if manifest.graph["settings"].get("extractor") == "offline":
        found.attempt(str(folder / READINGS_FILE), fix, lambda: read_each(folder))
    if (folder / STATE_SHARDS).is_dir():  # a cluster's extractor state
        found.attempt(str(folder / STATE_SHARDS), fix, lambda: read_shards(folder))


def _stub(chunk_id: str) -> Chunk:
    return Chunk(chunk_id, chunk_id, "", "")
