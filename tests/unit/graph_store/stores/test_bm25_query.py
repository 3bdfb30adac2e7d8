"""Pruned BM25 scores of one query equal the full scan's; the ceiling bounds every other chunk."""

import random

import numpy as np
import pytest

from hopgraph.graph_store.documents.schema import Chunk
from hopgraph.graph_store.stores import bm25_query, segments
from hopgraph.graph_store.stores.bm25_query import QueryScores
from hopgraph.graph_store.stores.kdb_bm25 import BM25Store
from tests.unit.graph_store.graphs.test_incremental_graphs import random_chunk

QUERIES = ["river stone", "Love film district", "the band of the lake", "York York hill", "zzz"]


def written_store(tmp_path, seed: int) -> BM25Store:
    """A store after a few writes: several segments, dead and replaced rows."""
    rng = random.Random(seed)
    corpus = {c.id: c for c in (random_chunk(rng, i) for i in range(30))}
    store = BM25Store.build(sorted(corpus.values(), key=lambda c: c.id), tmp_path, "s0")
    for step in range(1, 4):
        # two a write: a segment with a quarter of its rows dead would be rewritten
        for gone in rng.sample(sorted(corpus), k=2):
            del corpus[gone]
        added = [random_chunk(rng, 100 * step + j) for j in range(6)]
        corpus.update({c.id: c for c in added})
        chunks = sorted(corpus.values(), key=lambda c: c.id)
        store = store.updated(chunks, added, tmp_path, f"s{step}")
    assert len(store.segments) > 1 and any((rows < 0).any() for rows in store.rows)
    return store


@pytest.mark.parametrize("seed", range(4))
def test_scores_at_any_rows_equal_the_full_scan_bit_for_bit(tmp_path, seed):
    store = written_store(tmp_path, seed)
    rows = np.random.default_rng(seed).permutation(len(store.ids))[:25]
    for query in QUERIES:
        full = store.scores(query)
        assert np.array_equal(QueryScores(store, query).at(rows), full[rows])


@pytest.mark.parametrize("seed", range(2))
def test_an_extended_query_scores_as_the_longer_text(tmp_path, seed):
    """GNN-Ret's expanded question: the question's terms, then the added words', as one text."""
    store = written_store(tmp_path, seed)
    rows = np.random.default_rng(seed).permutation(len(store.ids))[:25]
    for query in QUERIES:
        asked = QueryScores(store, query)
        asked.top(5)  # postings read here are reused, not read again
        for more in ("river", "lake ; York hill", "zzz"):
            longer = f"{query} {more}"
            extended = asked.extended(more)
            assert extended.sequence == store.query_terms(longer)
            assert np.array_equal(extended.at(rows), store.scores(longer)[rows])
            top, again = extended.top(5), QueryScores(store, longer).top(5)
            assert np.array_equal(top.rows, again.rows) and top.ceiling == again.ceiling
            assert np.array_equal(top.scores, again.scores)


@pytest.mark.parametrize("seed", range(4))
def test_the_top_holds_the_best_and_the_ceiling_bounds_the_rest(tmp_path, seed, monkeypatch):
    monkeypatch.setattr(bm25_query, "POSTINGS_PER_DEPTH", 1)  # prune as hard as it can
    monkeypatch.setattr(bm25_query, "NEGLIGIBLE", 1.0)
    monkeypatch.setattr(segments, "MAX_SEGMENTS", 8)
    store = written_store(tmp_path, seed)
    pruned = 0
    for query in QUERIES:
        full = store.scores(query)
        for depth in (1, 3, 10, 100):
            top = QueryScores(store, query).top(depth)
            assert len(top.rows) <= depth and np.all(np.diff(top.rows) > 0)
            assert np.array_equal(top.scores, full[top.rows])
            others = np.setdiff1d(np.arange(len(full)), top.rows)
            assert np.all(full[others] <= top.ceiling)
            if full.max() > 0:
                assert top.scores.max() == full.max()
                # A ceiling above every other chunk's score: the bound of a term left out.
                pruned += bool(len(others)) and top.ceiling > full[others].max()
    assert pruned


@pytest.mark.parametrize("seed", range(4))
def test_each_terms_bound_holds_in_every_chunk_and_is_reached(tmp_path, seed):
    # The segments' own mean lengths differ from the store's (bounds scaled by their ratio).
    store = written_store(tmp_path, seed)
    means = {round(float(s.lengths.mean()), 3) for s in store.segments}
    assert len(means) > 1 and store.mean_length not in means
    reached = 0
    for query in QUERIES:
        scores = QueryScores(store, query)
        for term, idf in set(scores.sequence):
            alone = np.zeros(len(store.ids))
            for chunk_rows, values in scores._postings(term, idf):
                alone[chunk_rows] = values
            bound = scores.terms[term].bound / scores.terms[term].count
            assert alone.max() <= bound < idf
            reached += alone.max() > 0.9 * bound  # tight where the chunk is live
    assert reached


def test_a_word_in_every_chunk_is_looked_up_not_read(tmp_path):
    chunks = [Chunk(f"c{i}", f"d{i}", "", f"common {'rare' if i == 7 else 'plain'} {i}")
              for i in range(300)]  # fmt: skip
    store = BM25Store.build(chunks, tmp_path, "seg")
    full = store.scores("rare common")
    top = QueryScores(store, "rare common").top(4)  # budget 256 postings: "common" has 300
    assert top.rows.tolist() == [7] and top.scores[0] == full[7]
    assert 0 < top.ceiling == pytest.approx(full.max() - full[7] + full[8], rel=1e-3) or (
        top.ceiling <= bm25_query.NEGLIGIBLE * full[7]
    )
    assert np.all(np.delete(full, 7) <= top.ceiling)


@pytest.mark.parametrize("expand", [0, 2])
@pytest.mark.parametrize("base", ["hybrid", "dense", "bm25"])
def test_gnn_rets_local_ranking_is_its_full_scans_through_widening_rounds(
    docs_index, monkeypatch, base, expand
):
    """A first depth of 1 makes every query widen its candidates round after round (with the
    expanded question, both texts' candidates)."""
    from hopgraph.tools.gnn_ret import query_text
    from hopgraph.tools.gnn_ret import retriever as gnn_ret
    from hopgraph.tools.gnn_ret.layers import smallest

    monkeypatch.setattr(gnn_ret, "FIRST_DEPTH", 1)
    monkeypatch.setattr(query_text, "CLOSEST", 1)
    monkeypatch.setattr(bm25_query, "POSTINGS_PER_DEPTH", 1)
    monkeypatch.setattr(gnn_ret, "MULTI_HOP", 0.0)  # every question is expanded (expand > 0)
    retriever = gnn_ret.GNNRetriever(docs_index, base=base, keep=0, expand=expand)
    for query in ["Where was the founder of the band born?", "river stone lake", "film"]:
        closest = int(smallest(retriever.text_distances(query), 1)[0])
        assert (retriever.expanded(query, closest) is not None) == bool(expand)
        found = retriever.local_ranking(query, 3)
        full, _, _ = retriever.ranking(query)
        best = found.best(3)
        assert found.rows[best].tolist() == smallest(full, 3).tolist(), query
        np.testing.assert_allclose(found.h[best], np.sort(full)[:3], rtol=1e-6)
