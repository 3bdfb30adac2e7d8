"""Offline extraction kept between writes equals a fresh extraction of the final corpus."""

import random

import pytest

from graph_store.documents import Chunk
from graph_store.extraction.offline import CorpusReadings, OfflineExtractor

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
    title = rng.choice(TITLES + [f"Page {i}"])
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
