"""The passage graph (GNN-Ret §2, IIER §2): chunks as nodes, typed and weighted edges.

Each edge type is one symmetric sparse matrix over the index's chunks (the order of
``chunks.jsonl``), so neighbour lookups and message passing are sparse products, not Python loops:

- ``structural``: consecutive chunks of one document, weight 1 (GNN-Ret §2.4, IIER §2.4);
- ``entity``: chunks sharing an entity (GNN-Ret's shared links), weight = shared entities;
- ``keyword``: chunks sharing at least ``keyword_min_shared`` keywords, weight = that count
  (IIER §2.6, the code's ≥ 2);
- for both, an entity or keyword found in more than ``max_df`` chunks ("United States", a
  common word) makes no edges: hubs would flood every degree and carry no evidence;
- ``semantic``: each chunk to its ``semantic_k`` most similar chunks with cosine ≥
  ``semantic_min_sim``, weight = the similarity (IIER §2.5);
- ``link`` (directed, the only one): chunk i → every chunk of the page whose title chunk i
  mentions — the hyperlink a reader would follow (GNN-Ret §2.5's link edges). It is the bridge
  of most Wikipedia multi-hop questions, and far sparser than shared entities: two passages that
  both mention "Germany" share an entity, but only the page *Germany* is linked. A page
  mentioned by more than ``max_df`` chunks ("Italy") gets no links in, like the hubs above.
"""

from __future__ import annotations

import zipfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from hopgraph.core.csr import Csr, CsrLike, FileRows, rows_edges
from hopgraph.core.errors import IndexStateError
from hopgraph.core.file_reads import mapped_members, saved_text, verify_file
from hopgraph.core.id_lists import ChunkIds, load_ids, save_ids
from hopgraph.graph_store.stores.manifest import MANIFEST, graphs_hint

if TYPE_CHECKING:  # networkx (0.2 s of imports) only for to_networkx: no retriever walks it;
    # scipy (0.2 s) only for the matrix arithmetic of builds and full scans (core/csr.py)
    import networkx as nx
    import scipy.sparse as sp

EDGE_TYPES = ("structural", "entity", "keyword", "semantic", "link")
DIRECTED = frozenset({"link"})
"""Edge types stored as row → column; every other type is a symmetric matrix."""
DEGREE_ROWS = 65_536
"""Rows whose degrees are counted at once (PassageGraph.degrees)."""
FEATURES = ("structural", "semantic", "keyword", "entity")
"""Order of :meth:`PassageGraph.edge_features`: IIER's r(u, n) = [a_struct, s_sem, c_kw], then
the number of shared entities."""
KEYWORD_FEATURE_CAP = 5  # IIER code: min(count, 5)


@dataclass(frozen=True)
class PassageGraphSettings:
    """Density knobs of the passage graph."""

    max_df: int = 30
    keyword_min_shared: int = 2
    semantic_k: int = 5
    semantic_min_sim: float = 0.5
    semantic_search: str = "auto"


class PassageGraph:
    """Typed sparse adjacency over chunk ids.

    ``csr``: each type's matrix as arrays (memory-mapped when loaded), what a query reads;
    ``edges``: the same as scipy matrices, for arithmetic (builds, degrees, full scans).
    """

    def __init__(self, ids: Sequence[str], edges: dict[str, CsrLike]) -> None:
        self.ids = ids  # a list, or an opened index's ChunkIds once they are found equal
        self.csr = {kind: Csr.of(matrix) for kind, matrix in edges.items()}

    @cached_property
    def edges(self) -> dict[str, sp.csr_matrix]:
        """Return each type's matrix as scipy's, over the same arrays (imports scipy)."""
        return {kind: matrix.to_scipy() for kind, matrix in self.csr.items()}

    @cached_property
    def position(self) -> dict[str, int]:
        """Return each chunk id's row (made when first asked for: a write only saves the graph)."""
        return {chunk_id: i for i, chunk_id in enumerate(self.ids)}

    def adjacency(
        self, types: Sequence[str] = EDGE_TYPES, binary: bool = True, undirected: bool = False
    ) -> sp.csr_matrix:
        """Return the union of the given edge types (0/1 entries when ``binary``).

        Row i lists where a walk from chunk i may go, so a directed type keeps its direction;
        ``undirected`` adds the reverse of every directed edge (for reachability and degrees).
        """
        import scipy.sparse as sp

        total = sp.csr_matrix((len(self.ids), len(self.ids)), dtype=np.float32)
        for kind in types:
            part = self.edges[kind]
            if undirected and kind in DIRECTED:
                part = part + part.T
            total = total + ((part != 0).astype(np.float32) if binary else part)
        if binary:
            total.data[:] = 1.0
        return total.tocsr()

    def walks(self, types: Sequence[str] = EDGE_TYPES) -> Csr:
        """Return :meth:`adjacency` (binary, directed types one way) computed with numpy alone.

        What GNN-Ret's full scan reads (the rows of its top-K senders): a query's path, which
        imports no scipy (core/csr.py).
        """
        every = np.arange(len(self.ids))
        source, target = rows_edges([self.csr[kind] for kind in types], every)
        return Csr.binary(source, target, len(self.ids))

    def edge_count(self, kind: str) -> int:
        """Return the number of edges of one type (a symmetric pair counts once)."""
        nnz = self.csr[kind].nnz
        return nnz if kind in DIRECTED else nnz // 2

    def neighbours(self, chunk_id: str, types: Sequence[str] = EDGE_TYPES) -> list[str]:
        """Return the ids of a chunk's neighbours over the given edge types."""
        row = self.position[chunk_id]
        found: set[int] = set()
        for kind in types:
            matrix = self.csr[kind]
            found.update(matrix.indices[matrix.indptr[row] : matrix.indptr[row + 1]].tolist())
        return [self.ids[i] for i in sorted(found)]

    def edge_features(self, u: str, candidates: Sequence[str]) -> np.ndarray:
        """Return one row [structural, semantic, keyword (≤ 5), shared entities] per candidate.

        Zeros where no edge of that type joins the pair; defined for every pair (IIER's r(u, n)).
        """
        return self.edge_features_rows(self.position[u], [self.position[c] for c in candidates])

    def edge_features_rows(self, row: int, cols: Sequence[int]) -> np.ndarray:
        """Return :meth:`edge_features` by row numbers (the hot path of chain scoring)."""
        out = np.zeros((len(cols), len(FEATURES)), dtype=np.float32)
        for j, kind in enumerate(FEATURES):
            matrix = self.csr[kind]
            start, end = matrix.indptr[row], matrix.indptr[row + 1]
            # A row holds a node's few neighbours: a dict beats sparse fancy indexing here.
            weights = dict(
                zip(
                    matrix.indices[start:end].tolist(), matrix.data[start:end].tolist(), strict=True
                )
            )
            out[:, j] = [weights.get(c, 0.0) for c in cols]
        out[:, 2] = np.minimum(out[:, 2], KEYWORD_FEATURE_CAP)
        return out

    def degrees(self, types: Sequence[str] = EDGE_TYPES) -> np.ndarray:
        """Return each node's number of distinct neighbours (either direction) over the types.

        A block of :data:`DEGREE_ROWS` rows at a time: the union of every type at once (as
        :meth:`adjacency`) took 600 MB beside a million-chunk graph of 250.
        """
        import scipy.sparse as sp

        parts = [self.edges[k] + self.edges[k].T if k in DIRECTED else self.edges[k] for k in types]
        out = np.zeros(len(self.ids), dtype=np.int64)
        for at in range(0, len(self.ids), DEGREE_ROWS):
            block = sp.csr_matrix((min(DEGREE_ROWS, len(self.ids) - at), len(self.ids)), dtype=bool)
            for part in parts:
                block = block + (part[at : at + DEGREE_ROWS] != 0)
            out[at : at + block.shape[0]] = np.diff(block.indptr)
        return out

    def save(self, directory: Path) -> None:
        """Write one .npz per edge type and the node order."""
        import scipy.sparse as sp

        directory.mkdir(parents=True, exist_ok=True)
        save_nodes(self.ids, directory)
        for kind, matrix in self.edges.items():
            # sorted rows: a reader maps the arrays read-only, and scipy would sort them in place
            matrix.sum_duplicates()
            # uncompressed: every write saves the graphs, and zlib took longer than the build
            sp.save_npz(directory / f"passages-{kind}.npz", matrix, compressed=False)

    @classmethod
    def load(cls, directory: Path, known: Sequence[str] | None = None) -> PassageGraph:
        """Read a graph written by :meth:`save`.

        ``known``: the index's chunk ids, which the graph's node order is nearly always: read
        an id at a time and compared, they are the graph's ids then (no second copy of every
        id, not even for a moment); else the graph's own are held (:class:`ChunkIds`).
        """
        nodes = verify_file(directory / "nodes.json")
        ids: Sequence[str] | None = None
        if known is not None and _same_ids(load_ids(nodes), known):
            ids = known
        if ids is None:
            ids = ChunkIds(load_ids(nodes))
        missing = [k for k in EDGE_TYPES if not (directory / f"passages-{k}.npz").is_file()]
        if missing:
            raise IndexStateError(  # the reader adds the hint: it knows the index's folder
                f"the passage graph in {directory} has no {', '.join(missing)} edges "
                "(built by an older hopgraph, or a file was lost)"
            )
        edges = {k: mapped_csr(directory / f"passages-{k}.npz") for k in EDGE_TYPES}
        return cls(ids, edges)

    def to_networkx(self) -> nx.MultiGraph:
        """Return a networkx MultiGraph: one edge per (pair, type), with ``type`` and ``weight``."""
        import networkx as nx
        import scipy.sparse as sp

        graph = nx.MultiGraph()
        graph.add_nodes_from(self.ids)
        for kind, matrix in self.edges.items():
            directed = kind in DIRECTED
            pairs = (matrix if directed else sp.triu(matrix, k=1)).tocoo()
            for i, j, w in zip(pairs.row, pairs.col, pairs.data, strict=True):
                # A directed edge keeps its direction as an attribute: the chunk that mentions.
                extra = {"source": self.ids[i]} if directed else {}
                graph.add_edge(self.ids[i], self.ids[j], type=kind, weight=float(w), **extra)
        return graph


def _same_ids(found: Iterator[str], known: Sequence[str]) -> bool:
    """Tell whether ``found``, read in turn, are ``known`` in order (nothing kept)."""
    count = 0
    for count, (other, one) in enumerate(zip(known, found), 1):  # noqa: B007, B905 (counted)
        if one != other:
            return False
    return count == len(known) and next(found, None) is None


def save_nodes(ids: Iterable[str], directory: Path) -> None:
    """Write a graph's node order (``nodes.json``: what ``json.dumps`` of the list writes).

    Written an id at a time: the ids may be read from a table as they come (a cluster's driver
    holds none).
    """
    save_ids(ids, directory / "nodes.json")


def mapped_csr(path: Path) -> Csr:
    """Read a CSR matrix saved uncompressed by ``scipy.sparse.save_npz``, memory-mapped.

    Its arrays are views of the file (read-only), so every process serving the index shares
    their pages through the page cache. A compressed file is read into memory as before.
    """
    verify_file(path)  # its arrays' pages are read where each query's rows lie: all of them
    try:
        arrays = mapped_members(path)
    except (OSError, ValueError, KeyError, zipfile.BadZipFile) as err:
        index = next((p for p in path.parents if (p / MANIFEST).is_file()), path.parent)
        raise IndexStateError(f"{path} is damaged: {err}", graphs_hint(index)) from err
    if arrays is None:
        return _loaded(path)
    # scipy saves the format as a bytes scalar: str() of it reads "b'csr'", which sent every
    # graph to the whole-file read below until this compared the decoded value
    if saved_text(arrays["format"]) != "csr":
        return _loaded(path)
    rows, cols = (int(x) for x in arrays["shape"])
    indptr, indices, data = arrays["indptr"], arrays["indices"], arrays["data"]
    mapped = all(isinstance(a, np.memmap) for a in (indptr, indices, data))
    # a query's rows are read from the file (FileRows); the maps serve whole-graph arithmetic
    rows_file = FileRows(indptr, indices, data) if mapped else None
    return Csr(indptr, indices, data, (rows, cols), rows_file)


def _loaded(path: Path) -> Csr:
    """Read a compressed or non-CSR .npz whole, with scipy."""
    import scipy.sparse as sp

    return Csr.of(sp.load_npz(path).tocsr())


def passage_counts(passage_graph: PassageGraph) -> dict[str, Any]:
    """Count the passage graph's nodes, its edges by type and its mean degree.

    (graph_store/graphs/edge_parts.py counts a graph made in parts the same.)
    """
    edges = {k: passage_graph.edge_count(k) for k in EDGE_TYPES}
    return {
        "chunks": len(passage_graph.ids),
        "edges": edges,
        "mean_degree": float(passage_graph.degrees().mean()) if passage_graph.ids else 0.0,
    }


def graph_counts(passages: dict[str, Any], entities: int, triples: int) -> dict[str, Any]:
    """Return the passage graph's counts (:func:`passage_counts`) and the knowledge graph's size."""
    chunks = max(passages["chunks"], 1)
    return {**passages, "entities": entities, "triples": triples,
            "triples_per_chunk": triples / chunks}  # fmt: skip


SPARSE_TRIPLES = 0.5
SPARSE_EDGES = 1.0
"""Below these triples, or entity and link edges, per chunk the graph methods have little to
walk (the Wikipedia benchmarks have 5 triples and 10+ such edges per chunk)."""


def sparse_reason(counts: dict[str, Any]) -> str | None:
    """Say why a graph is too sparse for the graph methods to help, or ``None``."""
    chunks = max(counts["chunks"], 1)
    edges = (counts["edges"].get("entity", 0) + counts["edges"].get("link", 0)) / chunks
    if counts["triples_per_chunk"] >= SPARSE_TRIPLES and edges >= SPARSE_EDGES:
        return None
    return (
        f"the graph is sparse ({counts['triples_per_chunk']:.1f} triples and {edges:.1f} "
        "entity/link edges per chunk): graph methods may rank no better than hybrid here; "
        "`hopgraph graph build --extractor llm` reads more from each chunk"
    )
