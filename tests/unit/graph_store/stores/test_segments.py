"""A segment row is live when it is its chunk's newest: what every store's merge relies on."""

import numpy as np

from hopgraph.core.id_lists import ChunkIds
from hopgraph.graph_store.stores.segments import live_rows


def _dict_places(table: list[str], segments: list[list[str]]) -> list[list[int]]:
    """The same, as dicts say it: a later segment and a later row win."""
    newest = {}
    for s, ids in enumerate(segments):
        newest.update((chunk_id, (s, row)) for row, chunk_id in enumerate(ids))
    place = {chunk_id: at for at, chunk_id in enumerate(table)}
    return [
        [place[i] if i in place and newest[i] == (s, row) else -1 for row, i in enumerate(ids)]
        for s, ids in enumerate(segments)
    ]


def test_a_rows_place_is_its_chunks_newest_only() -> None:
    segments = [["a", "b", "c", "d"], ["e", "b", "f"], ["g", "e", "e"]]  # b, e replaced; e twice
    table = ["a", "b", "d", "e", "g", "h"]  # c and f deleted; h never stored
    rows, held = live_rows(ChunkIds(table), [ChunkIds(ids) for ids in segments])
    assert [r.tolist() for r in rows] == _dict_places(table, segments)
    assert [r.tolist() for r in rows] == [[0, -1, -1, 2], [-1, 1, -1], [4, -1, 3]]
    assert held.tolist() == [True, True, True, True, True, False]


def test_random_segments_agree_with_dicts() -> None:
    rng = np.random.default_rng(3)
    for _ in range(20):
        segments = [[f"c{i}" for i in rng.integers(0, 40, rng.integers(0, 15))] for _ in range(4)]
        table = sorted({f"c{i}" for i in rng.integers(0, 45, 30)})
        rows, held = live_rows(ChunkIds(table), segments)  # plain lists: hashed here
        assert [r.tolist() for r in rows] == _dict_places(table, segments)
        stored = {i for ids in segments for i in ids}
        assert held.tolist() == [i in stored for i in table]
