"""GEAR's diverse triple beam search (Algorithm 1) and flattening, checked by hand."""

import math

import numpy as np
import pytest

from hopgraph.tools.gear.retriever import chain_score, diverse_beam_search, flatten_to_chunks

Q = np.array([1.0, 0.0])
# t0 = [1,0], t1 = [0,1], t2 = [0,1], t3 = [1,0]
V = np.array([[1, 0], [0, 1], [0, 1], [1, 0]], dtype=np.float64)
NEIGHBOURS = {0: np.array([2, 3]), 1: np.array([2]), 2: np.array([0, 1]), 3: np.array([0])}


def search(**kwargs):
    return diverse_beam_search(Q, [0, 1], V, NEIGHBOURS.__getitem__, **kwargs)


def test_chain_score_is_the_cosine_of_the_summed_chain():
    assert chain_score(Q, V, [0]) == 1.0
    assert chain_score(Q, V, [0, 2]) == pytest.approx(1 / math.sqrt(2))  # [1,1]
    assert chain_score(Q, V, [1, 2]) == 0.0  # [0,2]


def test_beam_search_by_hand():
    beams = search(beam_width=2, length=2, gamma=2)
    # parent [0] (score 1): children [0,3] = 1 + 1 = 2 (best, ×1) and
    # [0,2] = 1 + 0.7071 = 1.7071, second child ×exp(-1/2) → 1.0354
    # parent [1] (score 0): child [1,2] = 0 + 0 = 0; the top 2 keep both children of [0]
    assert [chain for _, chain in beams] == [[0, 3], [0, 2]]
    assert beams[0][0] == pytest.approx(2.0)
    assert beams[1][0] == pytest.approx((1 + 1 / math.sqrt(2)) * math.exp(-0.5))


def test_without_diversity_pressure_the_order_is_plain_cumulative_score():
    beams = search(beam_width=3, length=2, gamma=1e9)
    assert [chain for _, chain in beams] == [[0, 3], [0, 2], [1, 2]]
    assert beams[1][0] == pytest.approx(1 + 1 / math.sqrt(2))


def test_visited_triples_are_skipped_and_dead_ends_keep_their_beams():
    # from [0] and [1], neighbours 0 and 1 are visited; with length 3 the third step finds
    # only visited triples and the beams stay as they were
    beams = search(beam_width=2, length=3, gamma=2)
    assert all(len(set(chain)) == len(chain) for _, chain in beams)
    assert diverse_beam_search(Q, [3], V, lambda t: np.array([0]), 1, 3) == [
        (pytest.approx(2.0), [3, 0])
    ]


def test_flatten_is_breadth_first_and_deduplicated():
    chunk_of = ["c0", "c1", "c1", "c3"]
    beams = [(2.0, [0, 3]), (1.0, [1, 2])]
    assert flatten_to_chunks(beams, chunk_of) == [("c0", 0), ("c1", 1), ("c3", 3)]
