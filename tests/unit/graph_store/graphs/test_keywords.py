"""Keywords kept between writes: checked, not re-picked, and still equal to a fresh pick."""

import random

import numpy as np
import pytest

from hopgraph.graph_store.documents.schema import Chunk
from hopgraph.graph_store.graphs.extraction import keywords
from hopgraph.graph_store.graphs.extraction.reading_table import READINGS_FILE, ReadingTable
from hopgraph.graph_store.graphs.extraction.readings import CorpusReadings, OfflineExtractor

NAMES = [f"{a} {b}" for a in ("Anna", "Boris", "Clara", "Dmitri") for b in ("Lake", "Stone")]
WORDS = [f"w{i}" for i in range(60)]


def _chunk(rng: random.Random, i: int) -> Chunk:
    """A chunk naming a few pages and using words of skewed frequency (so ties and near ties)."""
    sentences = []
    for _ in range(rng.randint(2, 4)):
        words = [WORDS[min(int(rng.expovariate(0.08)), len(WORDS) - 1)] for _ in range(6)]
        words.insert(rng.randint(0, 5), rng.choice(NAMES))
        sentences.append("The " + " ".join(words) + ".")
    title = rng.choice([*NAMES, f"Page {i}"])
    return Chunk(f"c{i:04d}", f"d{i:04d}", title, " ".join(sentences))


@pytest.mark.parametrize("seed", range(6))
def test_kept_keywords_equal_a_fresh_pick_and_most_are_kept(seed, monkeypatch):
    picked: list[tuple[int, int]] = []
    pick = keywords._pick

    def spy(table, entities, words, todo):
        picked.append((int(todo.sum()), table.rows))
        return pick(table, entities, words, todo)

    monkeypatch.setattr(keywords, "_pick", spy)
    rng = random.Random(seed)
    corpus = {c.id: c for c in (_chunk(rng, i) for i in range(150))}
    state, next_id = CorpusReadings(), 150
    state.update(sorted(corpus.values(), key=lambda c: c.id), [], list(corpus.values()))
    for _ in range(6):
        removed = [corpus.pop(i) for i in rng.sample(sorted(corpus), rng.randint(0, 4))]
        added = [_chunk(rng, next_id + j) for j in range(rng.randint(1, 4))]
        next_id += len(added)
        corpus.update({c.id: c for c in added})
        ordered = sorted(corpus.values(), key=lambda c: c.id)
        got = state.update(ordered, removed, added).to_extractions()
        assert got == OfflineExtractor().extract(ordered)
    redone = sum(todo for todo, _ in picked[1:])
    rows = sum(rows for _, rows in picked[1:])
    assert picked[0][0] == picked[0][1]  # the first reading picks every chunk
    assert 0 < redone < 0.8 * rows  # later writes pick again only the chunks that need it


def test_a_tie_broken_by_name_is_picked_again_when_one_side_moves():
    # "Zed" and "Ann" tie in the first chunk (one mention each, each in one chunk)
    first = Chunk("a", "a", "Home", "Home met Zed and Ann. Home is nice.")
    second = Chunk("b", "b", "Zed", "Zed is a person.")
    third = Chunk("c", "c", "Ann", "Ann is a person.")
    state = CorpusReadings()
    state.update([first, second, third], [], [first, second, third])
    more = Chunk("d", "d", "Other", "Zed came back. Zed again.")
    corpus = [first, second, third, more]
    got = state.update(corpus, [], [more]).to_extractions()
    assert got == OfflineExtractor().extract(corpus)


def test_a_state_saved_without_keywords_picks_them_all(tmp_path):
    rng = random.Random(7)
    chunks = [_chunk(rng, i) for i in range(40)]
    state = CorpusReadings()
    state.update(chunks, [], chunks)
    state.save(tmp_path)
    path = tmp_path / READINGS_FILE
    with np.load(path) as data:  # as an older hopgraph wrote it: no keywords
        kept = {k: data[k] for k in data.files if not k.startswith("keyword")}
    np.savez(path, **kept)
    table, _ = ReadingTable.load(tmp_path)
    assert (table.keyword_entities == -1).all()
    resumed = CorpusReadings.load(tmp_path, chunks)
    more = _chunk(rng, 99)
    got = resumed.update([*chunks, more], [], [more]).to_extractions()
    assert got == OfflineExtractor().extract([*chunks, more])


@pytest.mark.parametrize("seed", range(3))
def test_rows_picked_a_block_at_a_time_pick_as_all_at_once(seed, monkeypatch):
    rng = random.Random(seed)
    corpus = [_chunk(rng, i) for i in range(150)]
    whole = OfflineExtractor().extract(corpus)
    monkeypatch.setattr(keywords, "ROWS_AT_ONCE", 7)  # 22 blocks, the last one short
    state = CorpusReadings()
    assert state.update(corpus, [], corpus).to_extractions() == whole
    removed, added = corpus[:5], [_chunk(rng, 200 + i) for i in range(5)]
    later = [*corpus[5:], *added]
    monkeypatch.setattr(keywords, "ROWS_AT_ONCE", 1 << 16)
    fresh = OfflineExtractor().extract(later)
    monkeypatch.setattr(keywords, "ROWS_AT_ONCE", 9)  # kept picks checked block by block too
    assert state.update(later, removed, added).to_extractions() == fresh
