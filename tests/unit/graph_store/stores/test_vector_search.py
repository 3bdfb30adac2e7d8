"""Dense search through the IVF files, their damage and repair, float16 tables, local GNN-Ret."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest
import scipy.sparse as sp

from hopgraph.cli import main
from hopgraph.core.settings import IndexSettings
from hopgraph.graph_store import Document, Index, build_index
from hopgraph.graph_store.stores import vector_table
from hopgraph.graph_store.stores.ivf import IVF
from hopgraph.graph_store.stores.manifest import read_manifest
from hopgraph.graph_store.stores.vector_search import SearchSegment
from hopgraph.tools import make_retriever
from hopgraph.tools.gnn_ret.layers import propagate, smallest
from hopgraph.tools.gnn_ret.local import Candidates, KnownDistances, propagate_local, still_holds

WORDS = "river bridge castle harbour mountain forest library station market temple".split()
QUESTIONS = ("castle river", "library market station", "temple forest harbour bridge")


def documents(n: int = 600) -> list[Document]:
    rng = np.random.default_rng(7)
    return [
        Document(f"d{i}", f"Place {i}", " ".join(rng.choice(WORDS, size=6)) + f" number{i % 37}")
        for i in range(n)
    ]


@pytest.fixture(scope="module")
def ivf_index(tmp_path_factory):
    """An index whose one vector segment has an IVF (the size threshold lowered for the test)."""
    path = tmp_path_factory.mktemp("ivf") / "idx"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(vector_table, "MIN_ROWS", 100)
        build_index(documents(), path, IndexSettings(model="hashing"), show_progress=False)
    return path


def dense_ids(path, search="auto", k=8):
    with Index.open(path, search=search) as idx:
        dense = make_retriever("dense", idx)
        return [[(h.id, round(h.score, 5)) for h in dense.retrieve(q, k)] for q in QUESTIONS]


def test_a_large_segment_gets_an_ivf_and_dense_search_uses_it(ivf_index):
    manifest = read_manifest(ivf_index)
    assert list(manifest.ann) == manifest.vectors
    with Index.open(ivf_index) as idx:
        assert idx.vector_search.approximate
    # every list is probed at this size, so the IVF's answer is the exact one, scores included
    assert dense_ids(ivf_index) == dense_ids(ivf_index, "exact")


@pytest.mark.parametrize("damage", ["truncate", "flip", "delete"])
def test_a_damaged_ivf_is_searched_around_named_and_repaired(ivf_index, tmp_path, capsys, damage):
    import shutil

    index = tmp_path / "idx"
    shutil.copytree(ivf_index, index)
    name = next(iter(read_manifest(index).ann.values()))
    path = index / name
    data = bytearray(path.read_bytes())
    if damage == "truncate":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "flip":
        data[len(data) // 2] ^= 0xFF
        path.write_bytes(bytes(data))
    else:
        path.unlink()
    assert main(["retrieve", "castle river", "--method", "dense", "--index", str(index)]) == 0
    err = capsys.readouterr().err
    assert name.split("/")[-1] in err and "searching its segment exactly" in err
    assert "hopgraph check --repair" in err
    assert dense_ids(index) == dense_ids(ivf_index, "exact")  # slower, never wrong
    capsys.readouterr()
    assert main(["check", "--index", str(index)]) == 2
    err = capsys.readouterr().err
    assert name in err and "check --repair" in err
    assert main(["check", "--repair", "--index", str(index)]) == 0
    assert "IVF of" in capsys.readouterr().out
    assert main(["check", "--index", str(index)]) == 0
    with Index.open(index) as idx:
        assert idx.vector_search.approximate
    assert dense_ids(index) == dense_ids(ivf_index)


def test_check_names_a_large_segment_without_an_ivf_and_repair_adds_one(tmp_path, capsys):
    index = tmp_path / "idx"
    build_index(documents(), index, IndexSettings(model="hashing"), show_progress=False)
    assert read_manifest(index).ann == {}  # under the threshold: scanned exactly, nothing to say
    assert main(["check", "--index", str(index)]) == 0
    capsys.readouterr()
    with pytest.MonkeyPatch.context() as patch:
        from hopgraph.graph_store.index import check

        patch.setattr(check, "MIN_ROWS", 100)
        assert main(["check", "--index", str(index)]) == 2
        assert "has no IVF index" in capsys.readouterr().err
        assert main(["check", "--repair", "--index", str(index)]) == 0
    assert list(read_manifest(index).ann) == read_manifest(index).vectors


def test_an_ivf_of_another_segment_is_refused(ivf_index, tmp_path):
    from hopgraph.core.errors import IndexStateError

    name = next(iter(read_manifest(ivf_index).ann.values()))
    with pytest.raises(IndexStateError, match="its segment holds 5"):
        IVF.load(ivf_index / name, 5, 256)


def test_ann_mode_partitions_small_segments_in_memory(tmp_path):
    index = tmp_path / "idx"
    build_index(documents(), index, IndexSettings(model="hashing"), show_progress=False)
    with Index.open(index, search="ann") as idx:
        assert idx.vector_search.approximate
    with Index.open(index, search="auto") as idx:
        assert not idx.vector_search.approximate
    assert dense_ids(index, "ann") == dense_ids(index, "exact")


def test_forgetting_the_last_queries_drops_the_ivfs_last_search(tmp_path):
    """A timing that forgets the last queries pays for the IVF search again (evals/bench)."""
    index = tmp_path / "idx"
    build_index(documents(), index, IndexSettings(model="hashing"), show_progress=False)
    with Index.open(index, search="ann") as idx:
        [ivf] = [s.ivf for s in idx.vector_search.segments if s.ivf is not None]
        idx.dense_top("Larry Alcala", 3)
        assert ivf._last
        idx.forget_queries(vectors=False)
        assert not ivf._last and "Larry Alcala" in idx._query_vectors  # the vector is kept
        idx.forget_queries()
        assert "Larry Alcala" not in idx._query_vectors


def test_a_float16_table_halves_the_vectors_and_keeps_the_ranking(tmp_path):
    half, full = tmp_path / "half", tmp_path / "full"
    build_index(documents(), half, IndexSettings(model="hashing", vector_dtype="float16"), False)
    build_index(documents(), full, IndexSettings(model="hashing"), False)
    [segment] = read_manifest(half).vectors
    stored = np.load(half / segment / "vectors.npy", mmap_mode="r")
    assert stored.dtype == np.float16
    for a, b in zip(dense_ids(half), dense_ids(full), strict=True):
        assert [s for _, s in a] == pytest.approx([s for _, s in b], abs=2e-3)
    with Index.open(half) as idx:
        assert idx.embedding_matrix.dtype == np.float32  # widened for the methods


def random_graph(rng, n, degree, directed=False):
    rows = rng.integers(0, n, n * degree)
    cols = rng.integers(0, n, n * degree)
    matrix = sp.csr_matrix((np.ones(len(rows), np.float32), (rows, cols)), shape=(n, n))
    matrix.setdiag(0)
    matrix.eliminate_zeros()
    return matrix if directed else ((matrix + matrix.T) > 0).astype(np.float32).tocsr()


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("only_lower", [True, False])
@pytest.mark.parametrize("layers", [1, 2])
def test_local_gnn_ranks_as_the_full_scan(seed, only_lower, layers):
    rng = np.random.default_rng(seed)
    n, k, top_k = 3000, 10, 10
    h0 = rng.random(n).astype(np.float32)
    entity, link = random_graph(rng, n, 3), random_graph(rng, n, 2, directed=True)
    channels = [(entity, 0.65), (link, 0.2)]
    full, _, _ = propagate(h0, channels, top_k, layers, only_lower)
    for depth in (64, 256):
        start = np.argsort(h0, kind="stable")[:depth]
        bound = float(h0[start[-1]])
        found, exact = propagate_local(
            lambda rows: h0[rows], Candidates(start, bound),
            [([entity], 0.65), ([link], 0.2)], top_k, layers, only_lower,
        )  # fmt: skip
        best = found.best(k)
        if exact and found.h[best].max() <= bound:
            assert found.rows[best].tolist() == smallest(full, k).tolist()
            np.testing.assert_allclose(found.h[best], np.sort(full)[:k])
            break
    else:
        pytest.fail("the bound never held")


@pytest.mark.parametrize("seed", range(8))
def test_deeper_candidates_confirm_a_local_ranking_only_where_it_is_the_full_scans(seed):
    """A first round whose bound is too loose to certify it (the hybrid base's bound sums two
    lists' floors) is checked against deeper lists: confirmed, it is the full scan's ranking; a
    chunk the deeper lists bring closer than a sender is not."""
    rng = np.random.default_rng(seed)
    n, k, top_k, layers = 3000, 5, 10, 2  # fewer hits than senders
    h0 = rng.random(n).astype(np.float32)
    entity, link = random_graph(rng, n, 3), random_graph(rng, n, 2, directed=True)
    full, _, _ = propagate(h0, [(entity, 0.65), (link, 0.2)], top_k, layers, True)
    order = np.argsort(h0, kind="stable")
    confirmed = senders = 0
    for shallow in (12, 16, 24, 32):
        start = Candidates(order[:shallow], float(h0[order[shallow // 2]]))  # loose, valid
        found, exact = propagate_local(
            lambda rows: h0[rows], start, [([entity], 0.65), ([link], 0.2)], top_k, layers, True
        )
        deeper = Candidates(order[: 8 * shallow], float(h0[order[4 * shallow]]))
        if still_holds(found, k, k, deeper, lambda rows: h0[rows]):
            confirmed += not exact
            assert found.rows[found.best(k)].tolist() == smallest(full, k).tolist()
        # a chunk outside the first round's, closer than every sender: never confirmed
        outside = np.setdiff1d(order[shallow : 8 * shallow], found.rows)[0]
        closer = h0.copy()
        closer[outside] = 0.0
        assert not still_holds(found, k, k, deeper, closer.__getitem__)
        # nor one that would be no hit but a sender: its messages could move a hit
        kth, worst = float(found.h[found.best(k)].max()), max(found.worst_senders)
        if kth < worst:
            closer[outside] = (kth + worst) / 2
            assert not still_holds(found, k, k, deeper, closer.__getitem__)
            senders += 1
    assert confirmed and senders  # some first round failed its bound; the deeper lists confirmed it


def test_known_distances_compute_each_row_once_and_answer_in_the_order_asked():
    h0 = np.random.default_rng(0).random(100).astype(np.float32)
    asked: list[int] = []
    known = KnownDistances(lambda rows: asked.extend(rows.tolist()) or h0[rows])
    for rows in ([5, 9, 40], [1, 5, 40, 77], [9], [0, 1, 2, 99]):
        np.testing.assert_array_equal(known(np.array(rows)), h0[rows])
    assert sorted(asked) == [0, 1, 2, 5, 9, 40, 77, 99]  # each row once


class _CountedRows(np.ndarray):
    """A vector table that records how many rows each gather reads."""

    gathered: ClassVar[list[int]] = []

    def __getitem__(self, key):
        if isinstance(key, np.ndarray):
            _CountedRows.gathered.append(len(key))
        return np.asarray(super().__getitem__(key))


def test_a_deeper_search_for_the_same_query_reads_only_the_rows_it_adds():
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((3000, 16)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    segment = SearchSegment(vectors.view(_CountedRows), np.arange(3000), IVF.build(vectors))
    query = vectors[7]
    _CountedRows.gathered.clear()
    shallow = segment.top(query, 20)
    deep = segment.top(query, 200)
    first, second = _CountedRows.gathered
    proposed = len(segment.ivf.candidates(query, 200 + 32))  # the IVF's, a prefix of which
    assert first == 20 + 32 and second == proposed - first  # the shallow search read
    assert set(shallow[0]) <= set(deep[0])
    np.testing.assert_allclose(np.sort(deep[1]), np.sort(vectors[deep[0]] @ query), rtol=1e-6)
    segment.forget()
    _CountedRows.gathered.clear()
    again = segment.top(query, 200)
    assert _CountedRows.gathered[0] >= 200  # forgotten: every candidate read again
    np.testing.assert_array_equal(np.sort(again[0]), np.sort(deep[0]))


def test_cosines_are_the_full_scans_for_the_rows_asked_only(ivf_index):
    from hopgraph.graph_store.stores.vector_search import Cosines

    with Index.open(ivf_index, search="exact") as idx:
        vector = idx.embed_query("castle river")
        full = idx.similarities(vector)
        cosines = Cosines(idx.vector_search, vector)
        rows = np.array([5, 1, 5, 400])
        np.testing.assert_allclose(cosines[rows], full[rows], rtol=1e-6)
        assert cosines[7] == pytest.approx(float(full[7]), rel=1e-6)
        assert cosines.top(3).tolist() == np.argsort(-full, kind="stable")[:3].tolist()
        assert len(cosines._known) <= 4 + 3 < len(idx.chunks)  # 1, 5, 400, 7 and the top 3


def _mapped_mb() -> float:
    """Return this process's file-backed resident memory (Linux), in MB."""
    status = Path("/proc/self/status")
    if not status.is_file():
        pytest.skip("no /proc/self/status here")
    for line in status.read_text(encoding="ascii").splitlines():
        if line.startswith("RssFile:"):
            return int(line.split()[1]) / 1024
    pytest.skip("no RssFile in /proc/self/status")


def test_a_search_lets_go_of_the_mapped_pages_it_read(tmp_path):
    from hopgraph.graph_store.stores.vector_search import VectorSearch

    rows = 30_000  # 46 MB of float32 at 384 dimensions
    np.save(tmp_path / "v.npy", np.ones((rows, 384), dtype=np.float32))
    vectors = np.load(tmp_path / "v.npy", mmap_mode="r")
    search = VectorSearch([SearchSegment(vectors, np.arange(rows), None)], rows)
    before = _mapped_mb()
    assert search.matrix(np.arange(rows)).sum() == rows * 384
    read = _mapped_mb()
    search.release_pages()
    assert read - before > 30  # the pages read count in RSS ...
    assert read - _mapped_mb() > 30  # ... until let go
    assert search.matrix(np.array([7])).sum() == 384  # and read again when asked


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_rows_read_from_the_files_equal_the_mapped_rows_and_map_nothing(tmp_path, dtype):
    from hopgraph.graph_store.stores.vector_search import VectorSearch

    rng = np.random.default_rng(3)
    first, second = rng.normal(size=(20_000, 384)), rng.normal(size=(9_000, 384))
    np.save(tmp_path / "a.npy", first.astype(dtype))
    np.save(tmp_path / "b.npy", second.astype(dtype))
    segments = [  # the second segment's rows interleave with the first's, one row dead
        SearchSegment(np.load(tmp_path / "a.npy", mmap_mode="r"), np.arange(20_000) * 2, None),
        SearchSegment(
            np.load(tmp_path / "b.npy", mmap_mode="r"),
            np.r_[np.arange(8_999) * 2 + 1, -1],
            None,
        ),
    ]
    search = VectorSearch(segments, 40_000, complete=False)
    rows = np.r_[rng.integers(0, 17_998, size=5_000), [5, 5, 6, 7, 8, 9, 3, 17_997]]
    before = _mapped_mb()
    read = search.read(rows)
    assert _mapped_mb() - before < 5  # nothing mapped ...
    np.testing.assert_array_equal(read, search.matrix(rows))  # ... and the same rows
    assert read.dtype == np.float32
    in_memory = VectorSearch([SearchSegment(first, np.arange(20_000), None)], 20_000)
    np.testing.assert_array_equal(in_memory.read(rows), first[rows].astype(np.float32))
    sliced = np.load(tmp_path / "a.npy", mmap_mode="r")[5_000:]  # a view keeps its parent's map
    part = VectorSearch([SearchSegment(sliced, np.arange(15_000), None)], 15_000)
    np.testing.assert_array_equal(part.read(rows % 15_000), part.matrix(rows % 15_000))


def test_rows_read_in_blocks_equal_the_rows_read_at_once(tmp_path, monkeypatch):
    from hopgraph.graph_store.stores import vector_search
    from hopgraph.graph_store.stores.vector_search import VectorSearch

    rng = np.random.default_rng(5)
    first, second = rng.normal(size=(3_000, 16)), rng.normal(size=(1_000, 16))
    np.save(tmp_path / "a.npy", first.astype("float32"))
    np.save(tmp_path / "b.npy", second.astype("float32"))
    segments = [
        SearchSegment(np.load(tmp_path / "a.npy", mmap_mode="r"), np.arange(3_000) * 2, None),
        SearchSegment(np.load(tmp_path / "b.npy", mmap_mode="r"), np.arange(1_000) * 2 + 1, None),
    ]
    search = VectorSearch(segments, 6_000, complete=False)
    rows = np.r_[rng.integers(0, 1_999, size=2_500), [4, 4, 3, 1_997]]
    whole = search.read(rows)
    monkeypatch.setattr(vector_search, "GATHER_ROWS", 7)  # blocks that split runs and repeats
    np.testing.assert_array_equal(search.read(rows), whole)
    np.testing.assert_array_equal(search.matrix(rows), whole)
    even = rows[rows % 2 == 0]
    np.testing.assert_array_equal(whole[rows % 2 == 0], first[even // 2].astype(np.float32))
