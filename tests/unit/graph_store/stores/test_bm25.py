"""BM25 in segments scores exactly as bm25s does on the whole corpus, through any writes."""

import random

import bm25s
import numpy as np
import pytest

from hopgraph.graph_store.documents.schema import Chunk
from hopgraph.graph_store.stores import segments
from hopgraph.graph_store.stores.kdb_bm25 import BM25Store, Postings, tokenize
from tests.unit.graph_store.graphs.test_incremental_graphs import random_chunk

QUERIES = ["river stone", "Love film district", "the band of the lake", "York York hill"]


def bm25s_scores(chunks, query):
    retriever = bm25s.BM25()
    retriever.index(tokenize([c.embed_text for c in chunks]), show_progress=False)
    tokens = [t for t in tokenize([query])[0] if t in retriever.vocab_dict]
    return retriever.get_scores(tokens) if tokens else np.zeros(len(chunks))


def test_scores_equal_bm25s(tmp_path):
    chunks = [random_chunk(random.Random(i), i) for i in range(40)]
    store = BM25Store.build(chunks, tmp_path, "seg")
    store.save(tmp_path / "bm25")
    loaded = BM25Store.load(tmp_path / "bm25", tmp_path, chunks)
    tf = loaded.segments[0].tf  # read where it lies: no process holds every segment's postings
    assert all(isinstance(a, np.memmap) for a in (tf.data, tf.indices, tf.indptr))
    for query in QUERIES:
        np.testing.assert_allclose(loaded.scores(query), bm25s_scores(chunks, query), rtol=1e-5)
    assert loaded.query("river stone", 3)[0][1] > 0


def test_the_tokenizer_is_bm25s_to_the_token():
    import Stemmer
    from bm25s.stopwords import STOPWORDS_EN

    from hopgraph.graph_store.stores.kdb_bm25 import STOPWORDS

    texts = [random_chunk(random.Random(i), i).embed_text for i in range(40)]
    texts += ["", "THE the The", "Naïve café's 2nd x", "don't e-mail a_b __init__ 1 23"]
    texts.append("日本語 テキスト")
    stem = Stemmer.Stemmer("english").stemWords
    theirs = bm25s.tokenize(texts, "en", stemmer=stem, return_ids=False, show_progress=False)
    assert tokenize(texts) == theirs and set(STOPWORDS_EN) == STOPWORDS


def test_postings_are_read_without_scipy_as_scipy_reads_them(tmp_path):
    import scipy.sparse as sp

    matrix = sp.random(30, 50, density=0.2, format="csc", random_state=0, dtype=np.float32)
    for kind in ("csc", "csr"):
        sp.save_npz(tmp_path / f"{kind}.npz", matrix.asformat(kind), compressed=False)
        postings = Postings.load(tmp_path / f"{kind}.npz")
        assert postings.shape == (30, 50) and (postings.matrix() != matrix).nnz == 0
        assert np.array_equal(postings.indptr, matrix.indptr)


def test_a_chunk_deleted_and_added_back_counts_once(tmp_path):
    chunks = [random_chunk(random.Random(i), i) for i in range(20)]
    store = BM25Store.build(chunks, tmp_path, "s0")
    gone = chunks[3]
    rest = [c for c in chunks if c.id != gone.id]
    store = store.updated(rest, [], tmp_path, "s1")  # one dead row in 20: no merge
    store = store.updated(chunks, [gone], tmp_path, "s2")
    assert len(store.segments) == 2
    store.save(tmp_path / "bm25")
    loaded = BM25Store.load(tmp_path / "bm25", tmp_path, chunks)
    for query in [*QUERIES, gone.text]:
        np.testing.assert_allclose(loaded.scores(query), bm25s_scores(chunks, query), rtol=1e-5)


@pytest.mark.parametrize("seed", range(8))
def test_any_sequence_of_writes_scores_as_a_fresh_build(tmp_path, seed, monkeypatch):
    monkeypatch.setattr(segments, "MAX_SEGMENTS", 3)  # merges happen along the way too
    rng = random.Random(seed)
    corpus = {c.id: c for c in (random_chunk(rng, i) for i in range(5))}
    store = BM25Store.build(sorted(corpus.values(), key=lambda c: c.id), tmp_path, "s0")
    deleted: list[str] = []
    for step in range(1, 7):
        for gone in rng.sample(sorted(corpus), k=rng.randint(0, len(corpus) - 1)):
            deleted.append(corpus.pop(gone).id)
        added = [random_chunk(rng, 100 * step + j) for j in range(rng.randint(0, 4))]
        if deleted and rng.random() < 0.7:  # a replaced chunk: back under its id, new text
            back = deleted.pop(rng.randrange(len(deleted)))
            added.append(Chunk(back, back, "Back", random_chunk(rng, step).text))
        corpus.update({c.id: c for c in added})
        chunks = sorted(corpus.values(), key=lambda c: c.id)
        store = store.updated(chunks, added, tmp_path, f"s{step}")
        store.save(tmp_path / f"bm25-{step}")
        store = BM25Store.load(tmp_path / f"bm25-{step}", tmp_path, chunks)
        for query in QUERIES:
            np.testing.assert_allclose(
                store.scores(query), bm25s_scores(chunks, query), rtol=1e-5, atol=1e-6
            )
        sizes = [len(s.ids) for s in store.segments]
        small = [size for size in sizes if size < segments.LARGE_SHARE * max(sizes)]
        assert len(small) < segments.MAX_SEGMENTS  # merged once there are that many
        for segment, rows in zip(store.segments, store.rows, strict=True):
            assert (rows < 0).sum() <= segments.MAX_DEAD_SHARE * len(segment.ids)


def test_an_index_of_format_1_is_read_by_tokenizing_its_chunks(tmp_path):
    chunks = [Chunk("a", "a", "Alpha", "alpha beta"), Chunk("b", "b", "Beta", "gamma")]
    retriever = bm25s.BM25()
    retriever.index(tokenize([c.embed_text for c in chunks]), show_progress=False)
    retriever.save(str(tmp_path / "bm25"))
    store = BM25Store.load(tmp_path / "bm25", tmp_path, chunks)
    assert store.query("gamma", 2)[0][0] == "b"


def test_sparse_scores_tally_and_sort_agree_with_bm25s(tmp_path):
    """A query whose words are in most chunks takes the tally; a rare word, the sort."""
    chunks = [Chunk(f"c{i}", f"d{i}", "", f"river stone {'rare' if i == 3 else 'plain'} {i}")
              for i in range(30)]  # fmt: skip
    store = BM25Store.build(chunks, tmp_path, "seg")
    for query in ("river stone", "rare"):
        rows, scores = store.sparse_scores(query)
        dense = np.zeros(len(chunks), dtype=np.float32)
        dense[rows] = scores
        np.testing.assert_allclose(dense, bm25s_scores(chunks, query), rtol=1e-5)
        assert np.all(np.diff(rows) > 0) and np.all(scores > 0)
    assert len(store.sparse_scores("river stone")[0]) == 30
    assert store.sparse_scores("rare")[0].tolist() == [3]


def test_large_segments_stay_and_a_write_deleted_again_leaves_no_segment(tmp_path):
    """Two segments of 40 chunks (a build's partitions, say) are never merged for their
    number; a small write's segment, its chunks deleted again, goes without a trace."""
    rng = random.Random(5)
    first = [random_chunk(rng, i) for i in range(40)]
    second = [random_chunk(rng, 100 + i) for i in range(40)]
    store = BM25Store.build(first, tmp_path, "p0")
    store = store.updated(sorted(first + second, key=lambda c: c.id), second, tmp_path, "p1")
    small = [random_chunk(rng, 200 + i) for i in range(2)]
    every = sorted(first + second + small, key=lambda c: c.id)
    store = store.updated(every, small, tmp_path, "w1")
    assert store.paths == ["p0", "p1", "w1"]
    chunks = sorted(first + second, key=lambda c: c.id)
    store = store.updated(chunks, [], tmp_path, "w2")
    assert store.paths == ["p0", "p1"]
    store.save(tmp_path / "bm25")
    store = BM25Store.load(tmp_path / "bm25", tmp_path, chunks)
    for query in QUERIES:
        np.testing.assert_allclose(
            store.scores(query), bm25s_scores(chunks, query), rtol=1e-5, atol=1e-6
        )
