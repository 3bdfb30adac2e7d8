"""Serving from shards ranks as one index does: the router's merges, without Ray.

An index of the bundled sample written in four steps (a build, two adds and a delete: three
vector and BM25 segments, some rows dead) is served by 1, 2 and 3 shards in this process
(graph_store/cluster/shard.py, router.py). tests/integration/test_cluster.py serves shards of a
cluster's build through Ray Serve.
"""

import json

import numpy as np
import pytest

from hopgraph.cli.commands.demo import sample_dir
from hopgraph.core.errors import IndexStateError
from hopgraph.core.settings import IndexSettings
from hopgraph.graph_store import (
    Index,
    add_documents,
    build_graphs,
    build_index,
    load_documents,
)
from hopgraph.graph_store.cluster.router import LocalShards, ShardedIndex
from hopgraph.graph_store.cluster.shard import Shard, shard_ranges
from hopgraph.tools import make_retriever
from tests.sample_index import written_in_four_steps

METHODS = ["bm25", "dense", "hybrid", "gnn_ret", "iier", "naive_ge"]  # grag: trained weights


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    path = written_in_four_steps(tmp_path_factory.mktemp("shards") / "index")
    build_graphs(path, show_progress=False)
    return path


def questions() -> list[str]:
    lines = (sample_dir() / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["question"] for line in lines]


def sharded(path, count: int) -> ShardedIndex:
    return ShardedIndex.open_on(
        path,
        lambda manifest, ids: LocalShards(
            [Shard(str(path), i, count, ids, "auto", manifest) for i in range(count)]
        ),
    )


def test_shards_take_contiguous_ranges_of_segments():
    assert shard_ranges(4, 2) == [range(0, 2), range(2, 4)]
    assert shard_ranges(3, 2) == [range(0, 1), range(1, 3)]
    assert sum(len(r) for r in shard_ranges(7, 3)) == 7


@pytest.mark.parametrize("count", [1, 2, 3])
@pytest.mark.parametrize("method", METHODS)
def test_every_method_ranks_on_shards_as_on_one_index(written, method, count):
    with Index.open(written) as one:
        assert len(one.manifest.vectors) == 3 and len(one.manifest.segments) == 3
        router = sharded(written, count)
        here, there = make_retriever(method, one), make_retriever(method, router)
        for question in questions():
            a, b = here.retrieve(question, 10), there.retrieve(question, 10)
            assert [h.id for h in a] == [h.id for h in b], question
            assert np.allclose([h.score for h in a], [h.score for h in b], atol=1e-6)


def test_the_router_counts_bounded_rounds_per_query(written):
    router = sharded(written, 2)
    gnn = make_retriever("gnn_ret", router)
    rounds = []
    for question in questions():
        before = router.shards.rounds
        gnn.retrieve(question, 10)
        rounds.append(router.shards.rounds - before)
    assert max(rounds) <= 8 and router.shards.bytes > 0  # a scatter per list, not per row


def test_shards_of_another_generation_are_refused(written, tmp_path):
    other = tmp_path / "other"
    build_index(load_documents(sample_dir() / "corpus.jsonl")[:50], other,
                IndexSettings(model="hashing"), show_progress=False)  # fmt: skip
    add_documents(other, load_documents(sample_dir() / "corpus.jsonl")[50:60], show_progress=False)
    with pytest.raises(IndexStateError, match="another generation"):
        ShardedIndex.open_on(
            written, lambda manifest, ids: LocalShards([Shard(str(other), 0, 1, ids, "auto")])
        )


@pytest.mark.parametrize("base", ["hybrid", "dense", "bm25"])
def test_gnn_ret_local_computation_ranks_on_shards_as_on_one_index(written, monkeypatch, base):
    """GNN-Ret's local computation (BM25's MaxScore top, cosines of given rows), which it uses
    past FULL_SCAN_BELOW chunks: forced here on the small index."""
    from hopgraph.tools.gnn_ret import retriever as gnn_ret

    monkeypatch.setattr(gnn_ret, "FULL_SCAN_BELOW", 0)
    with Index.open(written) as one:
        router = sharded(written, 2)
        here = make_retriever("gnn_ret", one, base=base)
        there = make_retriever("gnn_ret", router, base=base)
        for question in questions():
            a, b = here.retrieve(question, 10), there.retrieve(question, 10)
            assert [h.id for h in a] == [h.id for h in b], question
            assert np.allclose([h.score for h in a], [h.score for h in b], atol=1e-6)
    assert router.shards.calls["bm25_top" if base != "dense" else "cosines"] > 0
