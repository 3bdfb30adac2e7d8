"""The vector table returns every live chunk's vector, through any writes, merges included."""

import random
import zlib

import numpy as np
import pytest

from hopgraph.core.errors import IndexStateError
from hopgraph.graph_store.stores import segments, vector_table
from hopgraph.graph_store.stores.vector_table import VectorTable


def vector(chunk_id: str) -> np.ndarray:
    """A vector that tells which chunk it belongs to."""
    rng = np.random.default_rng(zlib.crc32(chunk_id.encode()))
    return rng.standard_normal(4).astype(np.float32)


@pytest.mark.parametrize("seed", range(6))
def test_any_sequence_of_writes_keeps_every_live_vector(tmp_path, seed, monkeypatch):
    monkeypatch.setattr(segments, "MAX_SEGMENTS", 3)  # merges happen along the way too
    monkeypatch.setattr(segments, "LARGE_SHARE", 1.0)  # (of segments of a few rows each)
    rng = random.Random(seed)
    live = [f"c{i}" for i in range(5)]
    table = VectorTable.build(live, np.stack([vector(i) for i in live]), tmp_path, "v0")
    merged = False
    for step in range(1, 9):
        for gone in rng.sample(live, k=rng.randint(0, len(live) - 1)):
            live.remove(gone)
        added = [f"c{step}-{j}" for j in range(rng.randint(0, 4))]
        vectors = np.stack([vector(i) for i in added]) if added else np.zeros((0, 4), np.float32)
        live = sorted(live + added)
        before = len(table.segments)
        table = table.updated(live, added, vectors, tmp_path, f"v{step}")
        merged |= len(table.segments) < before
        reopened = VectorTable.load(tmp_path, table.paths)
        np.testing.assert_array_equal(reopened.matrix(live), np.stack([vector(i) for i in live]))
        _tiered(table, live)
    assert merged


def _tiered(table: VectorTable, live: list[str]) -> None:
    """After a write: fewer small segments than make a merge, none with too many dead rows."""
    sizes = [len(s.ids) for s in table.segments]
    small = [size for size in sizes if size < segments.LARGE_SHARE * max(sizes)]
    assert len(small) < segments.MAX_SEGMENTS
    holder, wanted = _holders(table), set(live)
    for number, segment in enumerate(table.segments):
        rows = enumerate(segment.ids)
        alive = sum(1 for row, i in rows if i in wanted and holder[i] == (number, row))
        assert len(segment.ids) - alive <= segments.MAX_DEAD_SHARE * len(segment.ids)


def _holders(table: VectorTable) -> dict[str, tuple[int, int]]:
    """Where each id's vector lies, as a dict would say: a later segment and row win."""
    where: dict[str, tuple[int, int]] = {}
    for s, segment in enumerate(table.segments):
        where.update((chunk_id, (s, row)) for row, chunk_id in enumerate(segment.ids))
    return where


def test_a_clusters_partitions_stay_segments_of_their_own(tmp_path):
    """Sixteen equal segments (a cluster build's partitions) and twenty small writes: the
    partitions are never merged; the writes' segments are, eight at a time."""
    ids = [f"p{p}-{i}" for p in range(16) for i in range(40)]
    table = VectorTable.build(ids[:40], np.stack([vector(i) for i in ids[:40]]), tmp_path, "p0")
    for p in range(1, 16):
        part = ids[40 * p : 40 * (p + 1)]
        table = table.appended(part, np.stack([vector(i) for i in part]), tmp_path, f"p{p}")
    live = list(ids)
    for step in range(20):
        added = [f"w{step}-{j}" for j in range(2)]
        live = sorted(live + added)
        vectors = np.stack([vector(i) for i in added])
        table = table.updated(live, added, vectors, tmp_path, f"w{step}")
        assert [s.path for s in table.segments[:16]] == [f"p{p}" for p in range(16)]
        assert len(table.segments) <= 16 + segments.MAX_SEGMENTS
        _tiered(table, live)
    assert len(table.segments) < 16 + 20  # the writes' segments were merged
    np.testing.assert_array_equal(table.matrix(live), np.stack([vector(i) for i in live]))
    # the writes' documents deleted again: their segments go, none left empty in their place
    table = table.compacted(ids, tmp_path, "gone")
    assert [s.path for s in table.segments] == [f"p{p}" for p in range(16)]


def test_a_chunk_without_a_vector_is_a_clear_error(tmp_path):
    table = VectorTable.build(["a"], np.ones((1, 2), np.float32), tmp_path, "v")
    with pytest.raises(IndexStateError, match="no stored vector"):
        table.matrix(["a", "b"])
    table.read_every(["a"], block=1)  # a check reads every row without a matrix of them all
    with pytest.raises(IndexStateError, match=r"1 chunks have no stored vector .*'b'"):
        table.read_every(["a", "b"])


def test_a_damaged_segment_is_a_clear_error(tmp_path):
    table = VectorTable.build(["a"], np.ones((1, 2), np.float32), tmp_path, "v")
    (tmp_path / "v" / vector_table.IDS_FILE).write_text("[]", encoding="utf-8")
    with pytest.raises(IndexStateError, match="1 vectors for 0 ids"):
        VectorTable.load(tmp_path, table.paths)
