"""`hopgraph check`: is every file of an index there and readable, and do they agree?

Reads each part of the committed generation in turn: the manifest, the chunk and document
tables, the vector table, BM25, the Chroma rows and the graphs. It then checks what must hold
across them: the chunk ids are the vector ids, the BM25 ids, the Chroma rows and the graph's
nodes, and the counts are the manifest's. Each problem names the file and the command that
repairs it. Commands that fail on a damaged index run this to say which file is at fault.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hopgraph.core.errors import HopgraphError

from .doc_table import read_documents
from .documents import Chunk
from .extraction.readings import READINGS_FILE, ReadingTable
from .extraction.table import EXTRACTIONS_FILE, ExtractionTable
from .generations import passages_location
from .index import read_chunks
from .kdb_bm25 import BM25Store
from .knowledge_graph import KnowledgeGraph
from .manifest import MANIFEST, Manifest, crc32, damaged_files, read_manifest, repair_hint
from .passage_graph import PassageGraph
from .vdb_chroma import ChromaVectorStore
from .vector_table import VectorTable

REBUILD = "rebuild it from its sources: `hopgraph index SOURCE --index {dir} --force`"
GRAPHS = "rebuild the graphs: `hopgraph graph build --index {dir}`"


@dataclass(frozen=True)
class Problem:
    """One damaged or inconsistent part: which file, what is wrong, how to repair it."""

    where: str
    what: str
    fix: str

    def __str__(self) -> str:
        joint = " " if self.what.startswith("is ") else ": "  # "x is missing", "x: KeyError"
        return f"{self.where}{joint}{self.what}\n  fix: {self.fix}"


def check_index(directory: str | Path) -> list[Problem]:
    """Return every problem found in the index at ``directory`` (empty: it is sound)."""
    directory = Path(directory)
    problems: list[Problem] = []

    def attempt(where: str, fix: str, step: Callable[[], Any]) -> Any:
        try:
            return step()
        except Exception as err:  # a damaged file fails in its own library's way
            what = err.message if isinstance(err, HopgraphError) else f"{type(err).__name__}: {err}"
            problems.append(Problem(where, what, fix.format(dir=directory)))
            return None

    manifest = attempt(MANIFEST, REBUILD, lambda: read_manifest(directory))
    if manifest is None:
        return problems
    damaged = damaged_files(directory, manifest)
    for path, what in damaged:
        problems.append(Problem(path, what, repair_hint(directory, manifest, path)))
    seen = {path for path, _ in damaged}
    for name, expected in manifest.checksums.items():
        path = directory / name
        if str(path) not in seen and crc32(path) != expected:
            what = "is damaged: its CRC-32 is not the one recorded when it was written"
            problems.append(Problem(str(path), what, repair_hint(directory, manifest, path)))
    chunks = attempt(
        str(manifest.path(directory, "chunks")), REBUILD, lambda: _chunks(directory, manifest)
    )
    if chunks is None:
        return problems
    ids = [c.id for c in chunks]
    _check_tables(directory, manifest, chunks, attempt, problems)
    _check_stores(directory, manifest, ids, attempt, problems)
    if manifest.graph:
        _check_graphs(directory, manifest, ids, attempt, problems)
    return problems


def _chunks(directory: Path, manifest: Manifest) -> list[Chunk]:
    return read_chunks(directory, manifest)  # checks the count against the manifest


def _check_tables(
    directory: Path, manifest: Manifest, chunks: list[Chunk], attempt: Any, problems: list
) -> None:
    """Check that the documents are the chunks' and the vector table holds every chunk."""
    where = str(directory / manifest.files.get("documents", "(documents)"))
    records = attempt(where, REBUILD, lambda: read_documents(directory, manifest, chunks))
    if records is not None and {r.id for r in records} != {c.doc_id for c in chunks}:
        problems.append(
            Problem(where, "its documents are not the chunks'", REBUILD.format(dir=directory))
        )
    if manifest.vectors:
        where = ", ".join(str(directory / p) for p in manifest.vectors)
        attempt(
            where,
            REBUILD,
            lambda: VectorTable.load(directory, manifest.vectors).matrix([c.id for c in chunks]),
        )


def _check_stores(
    directory: Path, manifest: Manifest, ids: list[str], attempt: Any, problems: list
) -> None:
    """Check that BM25's segments and Chroma's rows cover every chunk."""
    bm25 = manifest.path(directory, "bm25")

    def keyword_rows() -> None:
        store = BM25Store.load(bm25, directory, [_stub(i) for i in ids])
        covered = {i for segment in store.segments for i in segment.ids}
        missing = [i for i in ids if i not in covered]
        if missing:
            raise ValueError(f"{len(missing)} chunks have no BM25 row (e.g. {missing[0]!r})")

    attempt(str(bm25), REBUILD, keyword_rows)
    location = passages_location(directory, manifest)

    def vector_rows() -> None:
        store = ChromaVectorStore(location)
        try:
            found: set[str] = set()
            for start in range(0, len(ids), 5000):
                found.update(store.collection.get(ids=ids[start : start + 5000], include=[])["ids"])
        finally:
            store.close()
        missing = [i for i in ids if i not in found]
        if missing:
            raise ValueError(f"{len(missing)} chunks have no Chroma row (e.g. {missing[0]!r})")

    attempt(f"Chroma ({location.describe()})", REBUILD, vector_rows)


def _check_graphs(
    directory: Path, manifest: Manifest, ids: list[str], attempt: Any, problems: list
) -> None:
    """Check that the graph's nodes are the chunks and the graph files load."""
    folder = manifest.path(directory, "graph")

    def passage_graph() -> None:
        graph = PassageGraph.load(folder)
        if list(graph.ids) != ids:
            raise ValueError("its nodes are not the index's chunks")

    attempt(str(folder), GRAPHS, passage_graph)
    attempt(str(folder), GRAPHS, lambda: KnowledgeGraph.load(folder))
    attempt(
        str(folder / EXTRACTIONS_FILE),
        GRAPHS,
        lambda: ExtractionTable.load(folder / EXTRACTIONS_FILE),
    )
    if manifest.graph["settings"].get("extractor") == "offline":
        attempt(str(folder / READINGS_FILE), GRAPHS, lambda: ReadingTable.load(folder))


def _stub(chunk_id: str) -> Chunk:
    return Chunk(chunk_id, chunk_id, "", "")
