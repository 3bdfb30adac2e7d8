"""Offline extraction kept between writes equals a fresh extraction of the final corpus."""

import random

import numpy as np
import pytest

from graph_store.documents import Chunk
from graph_store.extraction.offline import CorpusReadings, OfflineExtractor
from graph_store.passage_graph import nearest, update_nearest

WORDS = "love river guy's film district new york city the of band stone hill lake".split()
TITLES = [
    "Love",
    "River Stone",
    "Guy's Hill",
    "New York (city)",
    "Lake, District",
    "The Band",
    "Film",
    "Stone Lake of Hill",
    "District",
    "York",
]


def random_chunk(rng: random.Random, i: int) -> Chunk:
    sentences = []
    for _ in range(rng.randint(1, 4)):
        words = [rng.choice(WORDS + TITLES) for _ in range(rng.randint(3, 9))]
        words = [w.capitalize() if rng.random() < 0.4 else w for w in words]
        if rng.random() < 0.3:
            words.insert(0, rng.choice(["He", "It", "In 1950", "The"]))
        sentences.append(" ".join(words) + ".")
    title = rng.choice([*TITLES, f"Page {i}"])
    return Chunk(f"c{i:03d}", f"d{i:03d}", title, " ".join(sentences))


@pytest.mark.parametrize("seed", range(20))
def test_any_sequence_of_adds_and_deletes_equals_a_fresh_extraction(seed):
    rng = random.Random(seed)
    corpus: dict[str, Chunk] = {}
    state = CorpusReadings()
    next_id = 0
    for _ in range(8):
        removed = rng.sample(sorted(corpus), k=min(len(corpus), rng.randint(0, 3)))
        removed_chunks = [corpus.pop(i) for i in removed]
        added = []
        for _ in range(rng.randint(0 if corpus else 1, 4)):
            added.append(random_chunk(rng, next_id))
            next_id += 1
        corpus.update({c.id: c for c in added})
        ordered = [corpus[i] for i in sorted(corpus)]
        got = state.update(ordered, removed_chunks, added)
        assert got == OfflineExtractor().extract(ordered)


def test_a_new_title_is_linked_in_chunks_written_before_it():
    old = Chunk("a", "a", "Alpha", "Alpha met the Zeta Band.")
    state = CorpusReadings()
    [before] = state.update([old], [], [old])
    assert "zeta band" in before.entities  # an unlinked name
    page = Chunk("b", "b", "Zeta", "Zeta is a town.")
    got = state.update([old, page], [], [page])
    assert "zeta" in got[0].entities  # re-read: the longest alias is now the page
    assert got == OfflineExtractor().extract([old, page])


@pytest.mark.parametrize("seed", range(10))
def test_neighbour_lists_kept_between_writes_equal_a_fresh_search(seed):
    rng = np.random.default_rng(seed)
    vectors = {i: rng.standard_normal(8).astype(np.float32) for i in range(rng.integers(1, 30))}
    vectors = {i: v / np.linalg.norm(v) for i, v in vectors.items()}
    ids = sorted(vectors)
    lists = nearest(np.stack([vectors[i] for i in ids]), 4)
    next_id = 100
    for _ in range(6):
        for gone in rng.choice(ids, size=min(len(ids) - 1, rng.integers(0, 6)), replace=False):
            del vectors[gone]
        for _ in range(rng.integers(0, 5)):
            v = rng.standard_normal(8).astype(np.float32)
            vectors[next_id] = v / np.linalg.norm(v)
            next_id += 1
        new_ids = sorted(vectors)
        position = {i: row for row, i in enumerate(new_ids)}
        old_to_new = np.array([position.get(i, -1) for i in ids])
        matrix = np.stack([vectors[i] for i in new_ids])
        lists = update_nearest(lists, old_to_new, matrix)
        fresh = nearest(matrix, 4)
        assert (lists.rows == fresh.rows).all()
        np.testing.assert_allclose(lists.scores, fresh.scores, rtol=1e-5)
        ids = new_ids
