"""The read side of an index directory: open it, look chunks up, embed queries.

Opening reads the manifest and the chunk table and connects to Chroma; nothing is recomputed.
The BM25 files, the graphs and the embedding model are read when a query first needs them, so
dense search never imports bm25s and scipy (0.3 s of a command's start).
"""

from __future__ import annotations

import json
import threading
import zipfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import cached_property
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

import numpy as np
import orjson

from hopgraph.core.errors import IndexStateError
from hopgraph.graph_store.documents.filters import Where, conditions
from hopgraph.graph_store.documents.schema import Chunk, Scalar
from hopgraph.graph_store.documents.schema import chunk_id as make_chunk_id
from hopgraph.graph_store.embedding.embedders import Embedder, embedder_for
from hopgraph.graph_store.graphs import triple_table
from hopgraph.graph_store.stores.chroma_parts import PassageStore, open_store
from hopgraph.graph_store.stores.chunk_table import ChunkTable, open_chunks
from hopgraph.graph_store.stores.doc_table import (
    DocumentLookup,
    DocumentRecord,
    matching,
    read_documents,
)
from hopgraph.graph_store.stores.manifest import (
    TRIPLE_VECTORS,
    Manifest,
    graphs_hint,
    open_files,
    read_manifest,
    tables_hint,
)
from hopgraph.graph_store.stores.vdb_chroma import ChromaLocation
from hopgraph.graph_store.stores.vector_search import SearchMode, VectorSearch

from .generations import passages_location
from .lock import recover
from .stored_vectors import read_vectors, stored_vectors

if TYPE_CHECKING:  # BM25 (bm25s, scipy) and the graphs: imported when a method reads them
    from hopgraph.graph_store.graphs.entity_linker import EntityLinker
    from hopgraph.graph_store.graphs.extraction import Extraction
    from hopgraph.graph_store.graphs.extraction.table import ExtractionTable
    from hopgraph.graph_store.graphs.knowledge_graph import KnowledgeGraph, StoredTriple
    from hopgraph.graph_store.graphs.passage_graph import PassageGraph
    from hopgraph.graph_store.stores.bm25_query import QueryScores
    from hopgraph.graph_store.stores.kdb_bm25 import BM25Store

QUERY_CACHE = 4096
"""Query-time texts whose vectors an open index keeps (1.5k floats each): a question, and the
few dozen concept paths G-RAG embeds for it, are embedded once however many methods read them."""


class Index:
    """An opened index: chunks, a vector store, a keyword store and the embedder that made it."""

    def __init__(
        self,
        directory: Path,
        manifest: Manifest,
        chunks: Sequence[Chunk] | ChunkTable,
        search: SearchMode = "auto",
    ) -> None:
        self.directory = directory
        self.search = search
        self.manifest = manifest
        # An opened directory's table is read on demand; chunks given in code are kept as they are.
        self.chunks: Mapping[str, Chunk] = (
            chunks if isinstance(chunks, ChunkTable) else {c.id: c for c in chunks}
        )
        # Rows a write in progress adds, or this generation removed, are not visible here.
        self.generation = manifest.generation
        self._query_vectors: dict[str, np.ndarray] = {}
        self._last_similarities: tuple[str, np.ndarray] | None = None
        self._last_top: tuple[str, int, np.ndarray, np.ndarray] | None = None
        self._matching: dict[bytes, frozenset[str]] = {}
        self._records: dict[str, DocumentRecord | None] = {}
        self._lookup: DocumentLookup | None = None
        self._cache_lock = threading.Lock()

    @cached_property
    def keywords(self) -> BM25Store:
        """The BM25 store over the chunks, opened when a query first needs it."""
        return self._open_keywords(self.chunks)

    def _open_keywords(self, chunks: Mapping[str, Chunk]) -> BM25Store:
        """Open BM25 over ``chunks`` (a sharded index's router asks its shards instead)."""
        from hopgraph.graph_store.stores.kdb_bm25 import BM25Store

        return BM25Store.load(self.manifest.path(self.directory, "bm25"), self.directory, chunks)

    @classmethod
    def open(
        cls, directory: str | Path, model: str | None = None, search: SearchMode = "auto"
    ) -> Index:
        """Open ``directory``; a given ``model`` must be the one the index was built with.

        ``search``: how dense search reads the vectors (graph_store/stores/vector_search.py):
        ``auto`` (through the IVF files the index has), ``exact`` or ``ann``.
        """
        directory = Path(directory)
        manifest, chunks = cls.read_checked(directory, model)
        return cls(directory, manifest, chunks, search)

    @staticmethod
    def read_checked(directory: Path, model: str | None = None) -> tuple[Manifest, ChunkTable]:
        """Recover ``directory``, check its files and model; return its manifest and chunks."""
        recover(directory)
        manifest = read_manifest(directory)
        built_with = manifest.settings.model
        if model is not None and model != built_with:
            raise IndexStateError(
                f"{directory} was built with embedding model {built_with!r}, not {model!r}",
                "drop --model to use the index's own model, or rebuild the index with the new one",
            )
        open_files(directory, manifest)
        return manifest, open_chunks(directory, manifest)

    @property
    def location(self) -> ChromaLocation:
        """Return where the generation's Chroma collection lives (nothing is opened)."""
        return passages_location(self.directory, self.manifest)

    @cached_property
    def vectors(self) -> PassageStore:
        """Connect to the generation's Chroma collection, to inspect it: no query reads it.

        Opening an embedded store changes its files, which the last write sealed
        (graph_store.stores.chroma_seal): `check` then names them changed until the next write.
        """
        return open_store(self.location, visible=self.chunks, rows=self.manifest.rows)

    @cached_property
    def embedder(self) -> Embedder:
        """Load the index's embedding model and check its dimension against the manifest."""
        embedder = embedder_for(self.manifest.settings, queries=True)
        expected = self.manifest.embedder["dimension"]
        if embedder.dimension != expected:
            raise IndexStateError(
                f"model {embedder.name!r} gives {embedder.dimension}-d vectors, "
                f"the index holds {expected}-d ones",
                "rebuild the index with this model",
            )
        return embedder

    @cached_property
    def entity_linker(self) -> EntityLinker:
        """Return the corpus's entity linker (its title index), opened on first use.

        The graph build's title index, memory-mapped, where it saved one (the offline
        extractor's); else made from the chunks' titles and texts, read in turn.
        """
        from hopgraph.graph_store.graphs.entity_linker import EntityLinker
        from hopgraph.graph_store.graphs.extraction.title_table import load_titles

        if self.manifest.graph is not None:
            with self._graph_file("title index"):
                titles = load_titles(self._graph_dir())
            if titles is not None:
                return EntityLinker(titles)
        return EntityLinker.of_chunks(self.chunks.values())

    @cached_property
    def passage_graph(self) -> PassageGraph:
        """Load the passage graph (built by `hopgraph graph build`)."""
        from hopgraph.graph_store.graphs.passage_graph import PassageGraph

        with self._graph_file("passage graph"):
            # its node order is nearly always the table's: then one copy of the ids, shared
            return PassageGraph.load(self._graph_dir(), self.ids)

    @cached_property
    def extractions(self) -> list[Extraction]:
        """Load the entities, keywords and triples read from each chunk, in chunk order."""
        from hopgraph.graph_store.graphs.extraction import Extraction
        from hopgraph.graph_store.graphs.extraction.table import extractions_saved, load_extractions

        folder = self._graph_dir()
        with self._graph_file("extraction table"):  # read again: not the table's cached arrays
            if extractions_saved(folder):
                return load_extractions(folder).to_extractions()
            # graphs built before the extraction table kept one JSON line per chunk
            rows = (folder / "extractions.jsonl").read_text(encoding="utf-8").splitlines()
            return [Extraction.from_dict(json.loads(line)) for line in rows if line]

    @cached_property
    def extraction_table(self) -> ExtractionTable:
        """Load the extractions as arrays (a chunk's decoded on demand; no Python object each)."""
        from hopgraph.graph_store.graphs.extraction.table import (
            ExtractionTable,
            extractions_saved,
            load_extractions,
        )

        if extractions_saved(self._graph_dir()):
            with self._graph_file("extraction table"):
                return load_extractions(self._graph_dir())
        return ExtractionTable.from_extractions(self.extractions)

    @cached_property
    def knowledge_graph(self) -> KnowledgeGraph:
        """Load the knowledge graph (built by `hopgraph graph build`)."""
        from hopgraph.graph_store.graphs.knowledge_graph import KnowledgeGraph

        with self._graph_file("knowledge graph"):
            return KnowledgeGraph.load(self._graph_dir())

    def search_triples(self, query: str, k: int = 10) -> list[tuple[StoredTriple, float]]:
        """Return the ``k`` triples whose text is most similar to ``query`` (cosine)."""
        matrix, triples = self.triple_matrix, self.knowledge_graph.triples
        if not len(matrix):
            return []
        scores = matrix @ self.embed_query(query)
        top = np.argsort(-scores, kind="stable")[:k]
        return [(triples[i], float(scores[i])) for i in top]

    @contextmanager
    def _graph_file(self, what: str) -> Iterator[None]:
        """Turn a graph file that cannot be read into the error `check` gives, with its mend.

        A file damaged while its size stays (a flipped byte) passes the open's size check and
        fails here, in numpy, zipfile or a JSON parser: the user is told which part and what
        rebuilds it, not the parser's words alone.
        """
        try:
            yield
        except IndexStateError as err:
            raise IndexStateError(err.message, err.hint or graphs_hint(self.directory)) from err
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as err:
            detail = (str(err).splitlines() or [type(err).__name__])[0]
            raise IndexStateError(
                f"the {what} in {self._graph_dir()} cannot be read: {detail}",
                graphs_hint(self.directory),
            ) from err

    def _graph_dir(self) -> Path:
        if self.manifest.graph is None:
            raise IndexStateError(
                f"{self.directory} has no graphs yet",
                f"build them with `hopgraph graph build --index {self.directory}`",
            )
        return self.manifest.path(self.directory, "graph")

    @cached_property
    def embedding_matrix(self) -> np.ndarray:
        """Load every chunk's stored vector, in chunk order: a copy of the whole table.

        For work over every vector (training, graph builds); queries use :attr:`vector_search`,
        which reads the memory-mapped table without copying it.
        """
        if self.manifest.vectors:
            return self.vector_search.matrix(np.arange(len(self.chunks)))
        return read_vectors(self.directory, self.manifest, list(self.chunks.values()))

    @cached_property
    def vector_search(self) -> VectorSearch:
        """Open dense search over the vector table (IVF where the index has one; see ``search``)."""
        if not self.manifest.vectors:  # written before the vector table: read from Chroma
            return VectorSearch.of_matrix(self.embedding_matrix, self.search)
        return VectorSearch.open(self.directory, self.manifest, self.ids, self.search)

    def dense_top(
        self, text: str, n: int, allowed: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Return the ``n`` chunk rows nearest query ``text`` and their cosines, best first.

        ``allowed``: rank only these chunk rows. The last query's answer is kept: a guarded
        method and its guard ask for the same query (a shorter list is a prefix of a longer).
        """
        if allowed is not None:
            return self.vector_search.top(self.embed_query(text), n, allowed)
        last = self._last_top  # one read: another thread may replace it meanwhile
        if last is None or last[0] != text or last[1] < n:
            rows, scores = self.vector_search.top(self.embed_query(text), n)
            last = self._last_top = (text, n, rows, scores)
        return last[2][:n], last[3][:n]

    def query_scores(self, text: str) -> QueryScores:
        """Return the BM25 scores of query ``text``, computed only where asked (bm25_query)."""
        from hopgraph.graph_store.stores.bm25_query import QueryScores

        return QueryScores(self.keywords, text)

    @cached_property
    def triple_matrix(self) -> np.ndarray:
        """Load every triple's stored vector, in knowledge-graph order."""
        self._require_triple_vectors()
        triples = self.knowledge_graph.triples
        table = triple_table.load(self.directory, self.manifest, [t.id for t in triples])
        if table is not None:
            return table
        # written before the triple table: only Chroma holds them (opening it ends its seal)
        found = stored_vectors(self.location.triples())
        if any(t.id not in found for t in triples):
            raise IndexStateError(
                "the triple vectors are out of step with the knowledge graph",
                f"rebuild: `hopgraph graph build --index {self.directory}`",
            )
        dims = self.manifest.embedder["dimension"]
        if not triples:
            return np.zeros((0, dims), dtype=np.float32)
        return np.stack([found[t.id] for t in triples]).astype(np.float32)

    def adopt(self, manifest: Manifest) -> None:
        """Take a newer generation that only added triple vectors (index.triple_vectors)."""
        others = {k: v for k, v in manifest.files.items() if k != TRIPLE_VECTORS}
        mine = {k: v for k, v in self.manifest.files.items() if k != TRIPLE_VECTORS}
        if others != mine or manifest.counts != self.manifest.counts:
            raise IndexStateError(
                f"{self.directory} changed while it was open",
                "open it again to read the newest generation",
            )
        self.manifest, self.generation = manifest, manifest.generation
        self.__dict__.pop("triple_matrix", None)

    def _require_triple_vectors(self) -> None:
        if not (self.manifest.graph or {}).get("settings", {}).get("embed_triples"):
            raise IndexStateError(
                f"{self.directory} has no triple vectors",
                f"add them: `hopgraph graph triples --index {self.directory}`",
            )

    def similarities(self, vector: np.ndarray) -> np.ndarray:
        """Return the cosine similarity of ``vector`` to every chunk, in chunk order (exact).

        A full scan of the table: methods that need only some chunks' cosines ask
        :meth:`vector_search` for them.
        """
        return self.vector_search.all_scores(vector)

    def query_similarities(self, text: str) -> np.ndarray:
        """Return the cosine of query ``text`` to every chunk; the last query's are kept.

        A scan reads the whole matrix (1 GB at a million chunks), and a guarded method and its
        guard both need it for the same query, so the second asks for free. Read-only.
        """
        last = self._last_similarities  # one read: another thread may replace it meanwhile
        if last is None or last[0] != text:
            found = self.similarities(self.embed_query(text))
            found.flags.writeable = False
            last = self._last_similarities = (text, found)
        return last[1]

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one query with the index's model (kept a while: methods share them)."""
        return self.embed_queries([text])[0]

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Embed query-time texts as (len(texts), d), the ones not kept in one batch.

        Queries and what methods embed at query time (G-RAG's concept paths) share one cache
        of the last :data:`QUERY_CACHE` texts, emptied by :meth:`forget_queries`.
        """
        cache = self._query_vectors
        missing = list(dict.fromkeys(t for t in texts if t not in cache))
        fresh = dict(zip(missing, self.embedder.embed(missing), strict=True)) if missing else {}
        dimension = int(self.manifest.embedder["dimension"])
        out = np.zeros((len(texts), dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            out[row] = fresh[text] if text in fresh else cache[text]
        with self._cache_lock:  # requests on a server's worker threads share the cache
            for text, vector in fresh.items():
                if len(cache) >= QUERY_CACHE:
                    cache.pop(next(iter(cache)))
                cache[text] = vector
        return out

    def forget_queries(self, vectors: bool = True) -> None:
        """Drop what is kept for the last queries, so a timing includes computing it.

        ``vectors=False`` keeps the query vectors and drops only the last query's searches.
        """
        if vectors:
            self._query_vectors.clear()
        if "vector_search" in self.__dict__:  # opened: its IVFs keep the last search too
            self.vector_search.forget()
        self._last_similarities = None
        self._last_top = None

    @cached_property
    def ids(self) -> Sequence[str]:
        """Return the chunk ids in row order (the embedding matrix's and the graphs')."""
        return self.chunks.ids if isinstance(self.chunks, ChunkTable) else list(self.chunks)

    @cached_property
    def rows(self) -> Mapping[str, int]:
        """Return each chunk id's row: its place in ``chunks``, the embeddings and the graphs."""
        if isinstance(self.chunks, ChunkTable):
            return self.chunks.rows
        return {chunk_id: row for row, chunk_id in enumerate(self.chunks)}

    def chunk(self, chunk_id: str) -> Chunk:
        """Return the chunk with this id."""
        return self.chunks[chunk_id]

    @cached_property
    def documents(self) -> list[DocumentRecord]:
        """Return the index's documents: source, content hash, indexed at, chunks, metadata."""
        return read_documents(self.directory, self.manifest, self.chunks.values())

    def record(self, doc_id: str) -> DocumentRecord | None:
        """Return one document's record (looked up in the table, not read whole)."""
        if doc_id not in self._records:
            name = self.manifest.files.get("documents")
            if name is None:  # an index written before the table: worked out from the chunks
                self._records = {r.id: r for r in self.documents}
                return self._records.get(doc_id)
            with self._cache_lock:  # servers share an index between threads: one mapping
                if self._lookup is None:
                    path = self.directory / name
                    self._lookup = DocumentLookup(path, tables_hint(self.directory))
            self._records[doc_id] = self._lookup.get(doc_id)
        return self._records[doc_id]

    def metadata(self, chunk_id: str) -> dict[str, Scalar]:
        """Return what a hit on this chunk carries besides its text (tools.hits.Hit.metadata).

        Its document's own fields (a file's front matter, a JSONL record's other keys), its
        ``source``, then the chunk's ``section`` (headings outermost first, " > " between),
        ``position`` (0-based) and the document's number of ``chunks``; those four win over
        a front-matter field of the same name.
        """
        chunk = self.chunks[chunk_id]
        record = self.record(chunk.doc_id)
        fields = record.fields() if record is not None else {}
        return {
            **fields,
            "section": chunk.section_path,
            "position": chunk.position,
            "chunks": chunk.n_chunks,
        }

    def matching(self, where: Where) -> frozenset[str]:
        """Return the ids of the chunks that pass the filter ``where`` (doc_table.matching).

        Kept per filter: a generation's chunks never change, and a filtered request asks more
        than once (a guarded method and its guard, an agent's every step).
        """
        conditions(where)  # a malformed filter is named before it is used as a key
        key = orjson.dumps(dict(where), option=orjson.OPT_SORT_KEYS)
        if key not in self._matching:
            self._matching[key] = frozenset(matching(self.documents, self.chunks.values(), where))
        return self._matching[key]

    def document_of(self, chunk_id: str) -> list[Chunk] | None:
        """Return the chunks of the document holding this chunk, in order (by ``position``).

        Looked up by the ids its positions give (``chunk_id(doc_id, position, n_chunks)``), so
        no table of every document is held; None when they are not all there, as in an index
        whose chunks have no positions.
        """
        chunk = self.chunks[chunk_id]
        ids = [make_chunk_id(chunk.doc_id, p, chunk.n_chunks) for p in range(chunk.n_chunks)]
        if any(i not in self.chunks for i in ids):
            return None
        found = [self.chunks[i] for i in ids]
        positions = [c.position for c in found]
        return found if positions == list(range(len(found))) else None

    @property
    def doc_ids(self) -> set[str]:
        """Return the ids of the documents in the index."""
        return {c.doc_id for c in self.chunks.values()}

    def close(self) -> None:
        """Release the vector store's client, if one was opened."""
        vectors = self.__dict__.pop("vectors", None)
        if vectors is not None:
            vectors.close()
        if self._lookup is not None:
            self._lookup.close()
            self._lookup = None

    def __enter__(self) -> Index:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, err: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
