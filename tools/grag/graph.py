"""G-RAG's document graph (spec g_rag): the base retriever's top-n and their concept graph.

No AMR parser runs here, so the concept graph is the spec's stand-in (§2.4, options 4–5) built
from the index's offline extraction (``hopgraph graph build``):

- a chunk's **concepts** C_i are its normalised entities and keywords; its **relations** T_i are
  its triples as (subject, object) pairs: the offline predicates are word spans between two
  mentions, too noisy to match across passages, while the pair of related entities is stable;
- the **document graph** over the n candidates joins i and j when |C_i ∩ C_j| > 0 (§3); the
  edge features are [|C_i ∩ C_j|, |T_i ∩ T_j|], each divided by its largest value in the graph
  (§5), and the edge weight is their sum (Eq. 8);
- the **concept path string** a_i (§4.2) walks the (question, passage) concept graph from a
  ``question`` node: question → the question's concepts the passage holds → what the passage's
  triples relate them to, breadth first, each concept once.

Node features are [Encode(p_i) ; Encode(a_i)]: the passage vector is the one the index already
stores. Encoding the concatenation p_i ⊕ a_i, as the paper does, would cost 100 passage
encodings per question (half a second on two cores); the two halves carry the same information
to the first layer. Encode(a_i) is the unit sum of the vectors of the path's concepts
(``concept_paths="concepts"``, the default): every concept of the index is embedded once, when
G-RAG first opens it, and kept in hopgraph's vector cache, so a new question costs no
embedding but its own. Embedding each path string at query time (``"encoded"``, several short
embeddings a question, 4–6× dense's latency) was no more accurate; ``"none"`` leaves the path
out (docs/methods.md has the three measured).

The score is Eq. 11's yᵀx_i^L plus two learned terms (a [DECISION] the spec leaves room for, §6):
the passage's own cosine to the question, so the untrained model starts at dense retrieval, and
the base ranking's −log(rank), because a hybrid base knows BM25 matches the frozen embeddings
cannot see. Nodes without edges keep their self-loop, so isolated passages are still ranked
(§10). The retriever is ``tools/grag/retriever.py``; the network and its training live in
``tools/grag/model.py`` and ``tools/grag/training.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import scipy.sparse as sp
from tqdm.auto import tqdm

from hopgraph.graph_store import Index
from hopgraph.graph_store.embedding.embedders import cached_embeddings
from hopgraph.graph_store.embedding.vector_cache import default_cache
from hopgraph.graph_store.graphs.extraction import Extraction
from hopgraph.tools.shared.base import Retriever

CONCEPT_PATHS = ("encoded", "concepts", "none")


@dataclass(frozen=True)
class GRAGSettings:
    """What shapes a G-RAG model; saved with its weights, so retrieval rebuilds the same graphs."""

    n: int = 100
    """Candidates taken from the base retriever (the paper's top-100)."""
    base: str = "hybrid"
    hidden: int = 64
    """GCN hidden size (the paper's grid: 8, 64, 128)."""
    dropout: float = 0.1
    loss: str = "pairwise"
    """``pairwise`` (G-RAG-RL, Eq. 13, margin 1) or ``cross_entropy`` (Eq. 12)."""
    concept_paths: str = "concepts"
    """``encoded``: Encode(a_i) is in the node features and cos(q, a_i) in the relevance ones
    (several short embeddings a question); ``concepts``: the same with Encode(a_i) summed from
    its concepts' vectors, embedded once per index (no embedding a question but its own);
    ``none``: neither (docs/methods.md, G-RAG)."""

    def __post_init__(self) -> None:
        if self.concept_paths not in CONCEPT_PATHS:
            raise ValueError(f"concept_paths must be one of {CONCEPT_PATHS}")


@dataclass(frozen=True)
class DocumentGraph:
    """One question's candidates as the network's input."""

    rows: np.ndarray
    """Chunk rows of the candidates, in base order."""
    features: np.ndarray
    """(n, 2d): [Encode(p_i) ; Encode(a_i)]; (n, d) without concept paths."""
    weights: np.ndarray
    """(n, n): the normalised edge weight E1 + E2, zero diagonal."""
    cosine: np.ndarray
    """(n,): cos(q, p_i)."""
    prior: np.ndarray
    """(n,): −log(base rank)."""
    query: np.ndarray
    """(d,): Encode(q)."""
    relevance: np.ndarray
    """(n, 8): cos(q, p_i), cos(q, a_i), −log(base rank), share of question concepts held;
    then the best cos(q, p_j) and 1 / base rank of j over i's concept neighbours j, and over
    the candidates j that link to i's page ((n, 7), no cos(q, a_i), without concept paths)."""
    paths: tuple[str, ...]
    """The concept path strings a_i (kept for provenance and inspection)."""


class ConceptIndex:
    """Every chunk's concepts and relations, as sparse incidence rows for fast intersections."""

    def __init__(self, extractions: Sequence[Extraction]) -> None:
        self.concepts = [frozenset(e.entities) | frozenset(e.keywords) for e in extractions]
        self.related: list[dict[str, list[str]]] = []
        relations: list[set[tuple[str, str]]] = []
        for e in extractions:
            out: dict[str, list[str]] = {}
            for t in e.triples:
                out.setdefault(t.subject, []).append(t.object)
            self.related.append(out)
            relations.append({(t.subject, t.object) for t in e.triples})
        self.concept_matrix = _incidence(self.concepts)
        self.relation_matrix = _incidence(relations)

    def counts(self, rows: np.ndarray) -> np.ndarray:
        """Return Ê (n, n, 2): shared concepts and shared relations, zero diagonal (Eq. 6)."""
        out = np.zeros((len(rows), len(rows), 2), dtype=np.float32)
        for channel, matrix in enumerate((self.concept_matrix, self.relation_matrix)):
            part = matrix[rows]
            out[:, :, channel] = (part @ part.T).toarray()
        idx = np.arange(len(rows))
        out[idx, idx, :] = 0.0
        # Eq. 6: no edge without a shared concept, whatever the relation channel says.
        out[out[:, :, 0] == 0] = 0.0
        return out

    @cached_property
    def vocabulary(self) -> dict[str, int]:
        """Every concept a path can hold (concepts and what triples relate them to), numbered."""
        words: dict[str, int] = {}
        for concepts, related in zip(self.concepts, self.related, strict=True):
            for concept in sorted(concepts):
                words.setdefault(concept, len(words))
            for others in related.values():
                for other in others:
                    words.setdefault(other, len(words))
        return words

    def path_string(self, row: int, question: Sequence[str]) -> str:
        """a_i (§4.2): the path's concepts after its ``question`` node, as one string."""
        return path_text(self.path(row, question))

    def path(self, row: int, question: Sequence[str]) -> list[str]:
        """a_i's concepts: BFS from the question over the pair's concept graph, each once."""
        held = [c for c in question if c in self.concepts[row]]
        out: list[str] = []
        seen, frontier = set(held), held
        while frontier:
            out += frontier
            nxt = []
            for concept in frontier:
                for other in self.related[row].get(concept, ()):
                    if other not in seen:
                        seen.add(other)
                        nxt.append(other)
            frontier = nxt
        return out


def path_text(walk: Sequence[str]) -> str:
    """Return the string a_i of a path's concepts: its ``question`` node, then them."""
    return " ".join(["question", *walk])


def _incidence(sets: Sequence[set | frozenset]) -> sp.csr_matrix:
    vocabulary: dict[Any, int] = {}
    rows, cols = [], []
    for row, items in enumerate(sets):
        for item in sorted(items):
            rows.append(row)
            cols.append(vocabulary.setdefault(item, len(vocabulary)))
    data = np.ones(len(rows), dtype=np.float32)
    return sp.csr_matrix((data, (rows, cols)), shape=(len(sets), max(len(vocabulary), 1)))


def edge_weights(counts: np.ndarray) -> np.ndarray:
    """E1 + E2 (Eq. 8), each channel divided by its largest count in the graph (§5).

    One of §5's normalisations. EGNN's doubly stochastic one (the spec's default) weighs a pair
    by the neighbours it shares: two passages joined by a concept and nothing else get weight 0.
    """
    peaks = counts.reshape(-1, counts.shape[2]).max(axis=0)
    scaled = np.divide(counts, peaks, out=np.zeros_like(counts), where=peaks > 0)
    total = scaled.sum(axis=2)
    np.fill_diagonal(total, 0.0)
    return total.astype(np.float32)


def best_neighbour(signal: np.ndarray, senders: np.ndarray) -> np.ndarray:
    """Per node i, the column-wise max of ``signal[j]`` over j with senders[j, i] (0 if none).

    Max-pooling (GraphSAGE's pool aggregator, spec §6 alternatives): one strongly relevant
    neighbour is the evidence, as in GNN-Ret's min-message; a mean over a dozen concept
    neighbours would drown it.
    """
    masked = np.where(senders[:, :, None], signal[:, None, :], 0.0)  # (j, i, feature)
    return masked.max(axis=0) if len(signal) else np.zeros((0, signal.shape[1]))


class GraphBuilder:
    """Turns a question into its :class:`DocumentGraph` over one index."""

    def __init__(self, index: Index, settings: GRAGSettings, base: Retriever) -> None:
        """Set up over ``index``; ``base`` (the retriever settings.base names) gives candidates."""
        self.index, self.settings = index, settings
        self.base = base
        self.concepts = ConceptIndex(index.extractions)
        self.links = index.passage_graph.edges["link"].tocsr()
        if settings.concept_paths == "concepts":
            self.concept_vectors  # noqa: B018 (embedded when the retriever is made, not mid-query)

    @cached_property
    def concept_vectors(self) -> np.ndarray:
        """(1 + |vocabulary|, d): Encode("question"), then every path concept's vector.

        Embedded once per index and model: kept in hopgraph's vector cache on disk, so later
        processes and later generations embed only concepts they have not seen.
        """
        texts = ["question", *self.concepts.vocabulary]
        with tqdm(total=len(texts), desc="G-RAG concepts", unit="concept", delay=2) as bar:
            return cached_embeddings(self.index.embedder, texts, default_cache(), bar.update)

    def path_vectors(self, paths: Sequence[Sequence[str]]) -> np.ndarray:
        """Encode(a_i) of each path (its concepts) as the unit sum of "question" and theirs."""
        vocabulary, vectors = self.concepts.vocabulary, self.concept_vectors
        out = np.empty((len(paths), vectors.shape[1]), dtype=np.float32)
        for i, path in enumerate(paths):
            total = vectors[[0] + [1 + vocabulary[c] for c in path]].sum(axis=0)
            out[i] = total / max(float(np.linalg.norm(total)), 1e-12)
        return out

    def question_concepts(self, question: str) -> list[str]:
        """Return the question's entities (linked like chunk entities), then its content words."""
        linked = self.index.entity_linker.link(question)
        return list(dict.fromkeys(linked.entities + linked.content_words()))

    def base_rows(self, question: str) -> np.ndarray:
        """Return the base retriever's top-n chunk rows, best first."""
        hits = self.base.retrieve(question, self.settings.n)
        return np.array([self.index.rows[h.id] for h in hits], dtype=np.int64)

    def build(self, question: str, rows: np.ndarray | None = None) -> DocumentGraph:
        """Build the document graph of ``question`` (over ``rows``, default the base's top-n)."""
        rows = self.base_rows(question) if rows is None else rows
        query = self.index.embed_query(question).astype(np.float32)
        wanted = self.question_concepts(question)
        walks = [self.concepts.path(int(r), wanted) for r in rows]
        paths = tuple(map(path_text, walks))
        passages = self.index.vector_search.matrix(rows)  # these rows only, not the table
        cosine = passages @ query
        prior = -np.log(np.arange(1, len(rows) + 1, dtype=np.float32))
        wanted_set = set(wanted)
        held = np.array(
            [len(self.concepts.concepts[r] & wanted_set) for r in rows], dtype=np.float32
        ) / max(len(wanted), 1)
        counts = self.concepts.counts(rows)
        # links[j, i]: candidate j mentions the page of candidate i (the index's link edges)
        links = self.links[rows][:, rows].toarray() > 0
        signal = np.column_stack([np.clip(cosine, 0, None), 1 / np.arange(1, len(rows) + 1)])
        if self.settings.concept_paths != "none":
            concepts = (
                self.index.embed_queries(paths)  # kept with the query vectors
                if self.settings.concept_paths == "encoded"
                else self.path_vectors(walks)
            )
            features = np.hstack([passages, concepts])
            own = [cosine, concepts @ query, prior, held]
        else:
            features, own = passages, [cosine, prior, held]
        relevance = np.column_stack(
            own + [best_neighbour(signal, m) for m in (counts[:, :, 0] > 0, links)]
        )
        return DocumentGraph(
            rows=rows,
            features=features,
            weights=edge_weights(counts),
            cosine=cosine,
            prior=prior,
            query=query,
            relevance=relevance.astype(np.float32),
            paths=paths,
        )
