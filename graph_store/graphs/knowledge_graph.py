"""The knowledge graph (GEAR §2, ToG-2 §8.3): entities, triples, and where each came from.

Every triple points to exactly one chunk. Adjacency is kept as two sparse incidence matrices:
triples × entities (head or tail) and chunks × entities (mentions), from which
entity → triples, entity → chunks and triple neighbours (triples sharing a head or tail entity)
are row lookups. Triple texts are embedded in their own Chroma collection (see graph_build).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
import orjson

from hopgraph.core.csr import Csr, CsrLike
from hopgraph.core.file_reads import verify_file

from .extraction import Triple
from .extraction.table import ExtractionTable, distinct
from .passage_graph import mapped_csr

if TYPE_CHECKING:  # networkx (0.2 s of imports) only for to_networkx: no retriever walks it;
    # scipy (0.2 s) only for arithmetic: `check` and row reads go without it (core/csr.py)
    import networkx as nx
    import scipy.sparse as sp


class StoredTriple(NamedTuple):
    """A triple with its id and the chunk it was read from.

    A named tuple, not a frozen dataclass: a write makes a million of them, 10x faster.
    """

    id: str
    subject: str
    predicate: str
    object: str
    chunk_id: str

    @property
    def text(self) -> str:
        """Return the searchable text "s p o"."""
        return f"{self.subject} {self.predicate} {self.object}"


def triple_id(chunk_id: str, triple: Triple) -> str:
    """Return a stable id for a triple of a chunk."""
    return _triple_id(chunk_id, triple.subject, triple.predicate, triple.object)


def _triple_id(chunk_id: str, subject: str, predicate: str, obj: str) -> str:
    key = f"{chunk_id}\x1f{subject}\x1f{predicate}\x1f{obj}"
    return hashlib.sha1(key.encode("utf-8")).hexdigest()[:16]


class KnowledgeGraph:
    """Entities, triples and their incidence with chunks."""

    def __init__(
        self,
        entities: list[str],
        triples: list[StoredTriple],
        chunk_ids: list[str],
        triple_entity: CsrLike,
        chunk_entity: CsrLike,
    ) -> None:
        self.entities = entities
        self.triples = triples
        self.chunk_ids = chunk_ids
        # as arrays (memory-mapped when loaded): reading rows and `check` import no scipy
        self._triple_entity, self._chunk_entity = Csr.of(triple_entity), Csr.of(chunk_entity)

    @cached_property
    def triple_entity(self) -> sp.csr_matrix:
        """Return the triples × entities incidence (scipy's matrix over the same arrays)."""
        return self._triple_entity.to_scipy()

    @cached_property
    def chunk_entity(self) -> sp.csr_matrix:
        """Return the chunks × entities incidence (scipy's matrix over the same arrays)."""
        return self._chunk_entity.to_scipy()

    # Lookups are made when first asked for: a write builds and saves the graph without them.
    @cached_property
    def entity_position(self) -> dict[str, int]:
        """Return each entity's row."""
        return {e: i for i, e in enumerate(self.entities)}

    @cached_property
    def triple_position(self) -> dict[str, int]:
        """Return each triple id's row."""
        return {t.id: i for i, t in enumerate(self.triples)}

    @cached_property
    def chunk_position(self) -> dict[str, int]:
        """Return each chunk id's row."""
        return {c: i for i, c in enumerate(self.chunk_ids)}

    @cached_property
    def entity_triple(self) -> sp.csr_matrix:
        """Return the entities × triples incidence."""
        return self.triple_entity.T.tocsr()

    @cached_property
    def entity_chunk(self) -> sp.csr_matrix:
        """Return the entities × chunks incidence."""
        return self.chunk_entity.T.tocsr()

    def triples_of(self, entity: str) -> list[StoredTriple]:
        """Return the triples whose subject or object is ``entity``."""
        row = self.entity_position.get(entity)
        return [] if row is None else [self.triples[i] for i in _row(self.entity_triple, row)]

    def chunks_of(self, entity: str) -> list[str]:
        """Return the ids of the chunks that mention ``entity``."""
        row = self.entity_position.get(entity)
        return [] if row is None else [self.chunk_ids[i] for i in _row(self.entity_chunk, row)]

    def triple_neighbours(self, triple: str) -> list[StoredTriple]:
        """Return the triples sharing a head or tail entity with ``triple`` (itself excluded)."""
        row = self.triple_position[triple]
        entities = _row(self._triple_entity, row)
        found = sorted({t for e in entities for t in _row(self.entity_triple, e)} - {row})
        return [self.triples[i] for i in found]

    def save(self, directory: Path) -> None:
        """Write entities, triples and the two incidence matrices."""
        import scipy.sparse as sp

        directory.mkdir(parents=True, exist_ok=True)
        (directory / "entities.json").write_bytes(orjson.dumps(self.entities))
        rows = (
            orjson.dumps([t.id, t.subject, t.predicate, t.object, t.chunk_id]) for t in self.triples
        )
        (directory / "triples.jsonl").write_bytes(b"".join(row + b"\n" for row in rows))
        (directory / "kg-chunks.json").write_bytes(orjson.dumps(self.chunk_ids))
        sp.save_npz(directory / "kg-triple-entity.npz", self.triple_entity, compressed=False)
        sp.save_npz(directory / "kg-chunk-entity.npz", self.chunk_entity, compressed=False)

    @classmethod
    def load(cls, directory: Path) -> KnowledgeGraph:
        """Read a graph written by :meth:`save`."""
        lines = verify_file(directory / "triples.jsonl").read_bytes().split(b"\n")
        return cls(
            orjson.loads(verify_file(directory / "entities.json").read_bytes()),
            [StoredTriple(*orjson.loads(line)) for line in lines if line],
            orjson.loads(verify_file(directory / "kg-chunks.json").read_bytes()),
            mapped_csr(directory / "kg-triple-entity.npz"),
            mapped_csr(directory / "kg-chunk-entity.npz"),
        )

    def to_networkx(self) -> nx.MultiDiGraph:
        """Return entities as nodes and triples as directed edges (predicate, chunk_id)."""
        import networkx as nx

        graph = nx.MultiDiGraph()
        graph.add_nodes_from(self.entities)
        for t in self.triples:
            graph.add_edge(
                t.subject, t.object, key=t.id, predicate=t.predicate, chunk_id=t.chunk_id
            )
        return graph


def build_knowledge_graph(chunk_ids: Sequence[str], extractions: ExtractionTable) -> KnowledgeGraph:
    """Collect entities and triples of every chunk into one graph (no entity disambiguation)."""
    spo, rows = distinct_triples(extractions)
    triples = stored_triples(chunk_ids, extractions.vocab.strings, spo, rows)
    words = extractions.vocab.strings
    named = named_entities(extractions, spo)
    entities = sorted(words[i] for i in named)
    position = np.full(len(words), -1, dtype=np.int64)
    position[[extractions.vocab.ids[e] for e in entities]] = np.arange(len(entities))
    ends = np.arange(len(triples))
    triple_entity = _incidence(
        np.concatenate([ends, ends]),
        position[np.concatenate([spo[:, 0], spo[:, 2]])],
        (len(triples), len(entities)),
    )
    rows, cols = chunk_mentions(extractions, spo, rows)
    chunk_entity = _incidence(rows, position[cols], (len(chunk_ids), len(entities)))
    return KnowledgeGraph(entities, triples, list(chunk_ids), triple_entity, chunk_entity)


def distinct_triples(extractions: ExtractionTable) -> tuple[np.ndarray, np.ndarray]:
    """Return the triples (subject, predicate, object ids) and their rows, each chunk's once.

    A chunk's repeated triple is stored where it first came.
    """
    spo, rows = extractions.triples.values, extractions.triples.row_of_values()
    first = (
        np.unique(np.column_stack([rows, spo]), axis=0, return_index=True)[1] if len(rows) else []
    )
    keep = np.sort(np.asarray(first, dtype=np.int64))
    return spo[keep], rows[keep]


def stored_triples(
    chunk_ids: Sequence[str], words: Sequence[str], spo: np.ndarray, rows: np.ndarray
) -> list[StoredTriple]:
    """Return the triples of :func:`distinct_triples` with their strings, ids and chunks."""
    # column by column: a million triples in seconds, not one Python object at a time
    subjects, predicates, objects = ([words[i] for i in spo[:, j].tolist()] for j in range(3))
    chunks = [chunk_ids[r] for r in rows.tolist()]
    ids = list(map(_triple_id, chunks, subjects, predicates, objects))
    return list(map(StoredTriple, ids, subjects, predicates, objects, chunks))


def named_entities(extractions: ExtractionTable, spo: np.ndarray) -> np.ndarray:
    """Return the ids of the strings that are entities: mentioned, a subject or an object."""
    return distinct(np.concatenate([extractions.entities.values, spo[:, 0], spo[:, 2]]))


def chunk_mentions(
    extractions: ExtractionTable, spo: np.ndarray, rows: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Return (row, entity id) for each entity a chunk mentions or names in a triple."""
    mentioned = extractions.entities.values
    return (
        np.concatenate([extractions.entities.row_of_values(), rows, rows]),
        np.concatenate([mentioned, spo[:, 0], spo[:, 2]]),
    )


def _incidence(rows: np.ndarray, cols: np.ndarray, shape: tuple[int, int]) -> sp.csr_matrix:
    import scipy.sparse as sp

    ones = np.ones(len(rows), dtype=np.float32)
    matrix = sp.csr_matrix((ones, (rows, cols)), shape=shape)
    matrix.data[:] = 1.0  # duplicates summed by the constructor become 1 again
    return matrix


def _row(matrix: CsrLike, row: int) -> list[int]:
    return matrix.indices[matrix.indptr[row] : matrix.indptr[row + 1]].tolist()
