"""Building the passage graph's edges (graph_store/graphs/passage_graph.py says what each type is).

Kept apart from the graph itself: building multiplies scipy.sparse matrices, while a query only
reads rows of the saved ones (hopgraph.core.csr), so reading a graph never imports scipy.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp

from hopgraph.graph_store.documents.schema import Chunk

from .extraction.offline import token_key
from .extraction.table import ExtractionTable, Ragged, Vocabulary
from .passage_graph import PassageGraph, PassageGraphSettings
from .semantic import Neighbours, nearest, neighbour_edges

PRODUCT_ROWS = 65_536
"""Rows whose shared items are counted at once (co_occurrence)."""


def build_passage_graph(
    chunks: Sequence[Chunk],
    extractions: ExtractionTable,
    semantic: np.ndarray | Neighbours,
    settings: PassageGraphSettings,
) -> PassageGraph:
    """Build every edge type over ``chunks`` (extractions and ``semantic`` in the same order).

    ``semantic``: the chunks' embeddings, searched here for nearest neighbours, or their
    nearest-neighbour lists when already known (kept between writes).
    """
    ids, vocabulary = [c.id for c in chunks], len(extractions.vocab)
    neighbours = semantic
    if not isinstance(neighbours, Neighbours):
        neighbours = nearest(semantic, settings.semantic_k, settings.semantic_search)
    edges = {
        "structural": structural_edges(chunks),
        "entity": co_occurrence(extractions.entities.incidence(vocabulary), 1, settings.max_df),
        "keyword": co_occurrence(
            extractions.keywords.incidence(vocabulary), settings.keyword_min_shared, settings.max_df
        ),
        "semantic": neighbour_edges(neighbours, settings.semantic_k, settings.semantic_min_sim),
        "link": link_edges(chunks, extractions, settings.max_df),
    }
    return PassageGraph(ids, edges)


def structural_edges(chunks: Sequence[Chunk]) -> sp.csr_matrix:
    """Link chunk i and i+1 of the same document."""
    documents = document_numbers(chunks)
    position = np.fromiter((c.position for c in chunks), dtype=np.int64, count=len(chunks))
    order = np.lexsort((position, documents))  # each document's chunks, in place order
    a, b = order[:-1], order[1:]
    follows = (documents[a] == documents[b]) & (position[b] == position[a] + 1)
    a, b = a[follows], b[follows]
    ones = np.ones(2 * len(a), dtype=np.float32)
    n = len(chunks)
    return sp.csr_matrix((ones, (np.r_[a, b], np.r_[b, a])), shape=(n, n))


def document_numbers(chunks: Sequence[Chunk]) -> np.ndarray:
    """Return a number per chunk for its document (only equality matters)."""
    number: dict[str, int] = {}
    return np.fromiter(
        (number.setdefault(c.doc_id, len(number)) for c in chunks),
        dtype=np.int64,
        count=len(chunks),
    )


def link_edges(
    chunks: Sequence[Chunk], extractions: ExtractionTable, max_df: int | None = None
) -> sp.csr_matrix:
    """Link chunk i → each chunk of another document whose page (title) chunk i mentions.

    A chunk linked from more than ``max_df`` chunks keeps none of its links in.

    Titles are keyed as extractors key page entities, so every extractor's mentions meet them;
    a title shared by several documents (MuSiQue has such) is linked to in all of them.
    """
    n, known, page = len(chunks), extractions.vocab.ids, extractions.pages
    if page is None:  # a title no chunk mentions is not in the vocabulary: nothing links there
        page = np.array([known.get(token_key(c.title), -1) if c.title else -1 for c in chunks])
    titled = np.flatnonzero(page >= 0)
    pages = titled[np.argsort(page[titled], kind="stable")]  # rows grouped by their page
    keys = page[pages]
    rows, entities = extractions.entities.row_of_values(), extractions.entities.values
    # A chunk naming its own page does not link to the page's namesakes.
    other = entities != page[rows]
    rows, entities = rows[other], entities[other]
    first = np.searchsorted(keys, entities, side="left")
    count = np.searchsorted(keys, entities, side="right") - first
    start = np.repeat(first - (np.cumsum(count) - count), count)
    sources, targets = np.repeat(rows, count), pages[start + np.arange(count.sum())]
    documents = document_numbers(chunks)
    across = documents[sources] != documents[targets]
    ones = np.ones(int(across.sum()), dtype=np.float32)
    matrix = sp.csr_matrix((ones, (sources[across], targets[across])), shape=(n, n))
    matrix.data[:] = 1.0  # the constructor sums repeated pairs; a link is there or not
    if max_df is not None:
        linked_from = np.diff(matrix.tocsc().indptr)
        matrix = (matrix @ sp.diags((linked_from <= max_df).astype(np.float32))).tocsr()
        matrix.eliminate_zeros()
    return matrix


def shared_item_edges(
    items: Sequence[Sequence[str]], min_shared: int, max_df: int | None
) -> sp.csr_matrix:
    """Link chunks sharing ≥ ``min_shared`` items (entities, keywords); weight = shared count."""
    vocab = Vocabulary()
    lists = Ragged.from_lists([[vocab.id(x) for x in chunk_items] for chunk_items in items])
    return co_occurrence(lists.incidence(len(vocab)), min_shared, max_df)


def co_occurrence(incidence: sp.csr_matrix, min_shared: int, max_df: int | None) -> sp.csr_matrix:
    """Link the rows of a (chunk × item) incidence sharing ≥ ``min_shared`` items; weight = count.

    Items in more than ``max_df`` rows are dropped first, so hubs never densify the product.
    """
    if max_df is not None:
        df = np.asarray(incidence.sum(axis=0)).ravel()
        incidence = incidence[:, np.flatnonzero(df <= max_df)]
    incidence, transposed = incidence.tocsr(), incidence.T.tocsr()
    n = incidence.shape[0]
    # by blocks of rows: the whole product holds every pair sharing one item, most of them
    # dropped when ``min_shared`` > 1, and setdiag rebuilt it
    blocks = []
    for at in range(0, n, PRODUCT_ROWS):
        part = (incidence[at : at + PRODUCT_ROWS] @ transposed).tocsr()
        rows = np.repeat(np.arange(at, at + part.shape[0]), np.diff(part.indptr))
        part.data[(part.indices == rows) | (part.data < min_shared)] = 0
        part.eliminate_zeros()
        blocks.append(part.astype(np.float32))
    if not blocks:
        return sp.csr_matrix((0, 0), dtype=np.float32)
    return sp.vstack(blocks, format="csr")
