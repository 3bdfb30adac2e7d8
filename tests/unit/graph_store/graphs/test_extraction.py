import math
import random
from collections import Counter

import pytest

from hopgraph.graph_store.documents.schema import Chunk
from hopgraph.graph_store.graphs.extraction import Extraction, Triple
from hopgraph.graph_store.graphs.extraction.normalise import title_aliases
from hopgraph.graph_store.graphs.extraction.offline import (
    corpus_titles,
    extraction_sentences,
    read_chunk,
    token_key,
)
from hopgraph.graph_store.graphs.extraction.readings import OfflineExtractor
from tests.unit.graph_store.graphs.test_incremental_graphs import random_chunk


def chunk(cid, title, text):
    return Chunk(cid, cid, title, text)


CHUNKS = [
    chunk(
        "a",
        "Van Hook Township",
        "Van Hook Township is a township in Mountrail County, "
        "North Dakota. It was founded in 1903.",
    ),
    chunk("b", "Mountrail County", "Mountrail County has its seat in Stanley (North Dakota)."),
    chunk("c", "Stanley (North Dakota)", "Stanley is a city. Robert G. Vignola never lived there."),
    chunk("d", "John, Count Palatine of Gelnhausen", "He was a count."),
    chunk("e", "Flannelfoot", "Flannelfoot stars Ronald Howard, Mary Germaine and John Smith."),
]


def by_id():
    return {e.chunk_id: e for e in OfflineExtractor().extract(CHUNKS)}


def test_titles_link_mentions_and_each_chunk_carries_its_page():
    ex = by_id()
    assert ex["a"].entities[:2] == ("van hook township", "mountrail county")
    assert "mountrail county" in ex["b"].entities
    assert "stanley north dakota" in ex["b"].entities  # the full title, linked
    assert ex["c"].entities[0] == "stanley north dakota"  # own page; "Stanley" resolves to it


def test_spans_stop_at_punctuation_and_single_first_names_do_not_link():
    ex = by_id()["e"]
    assert {"ronald howard", "mary germaine", "john smith"} <= set(ex.entities)
    assert "john count palatine of gelnhausen" not in ex.entities  # no alias "john"
    assert title_aliases("John, Count Palatine of Gelnhausen") == {
        "john, count palatine of gelnhausen"
    }
    assert title_aliases("Stanley (North Dakota)") == {"stanley (north dakota)", "stanley"}


def test_initials_do_not_end_a_sentence():
    assert extraction_sentences("Robert G. Vignola directed it. Then he left.") == [
        "Robert G. Vignola directed it.",
        "Then he left.",
    ]
    assert "robert g vignola" in by_id()["c"].entities


def test_triples_by_hand():
    triples = set(by_id()["a"].triples)
    # "Van Hook Township is a township in Mountrail County": predicate = content words between
    assert Triple("van hook township", "township", "mountrail county") in triples
    # "It was founded in 1903.": a pronoun opens the sentence, so the page is the subject
    assert Triple("van hook township", "founded", "1903") in triples


def test_keywords_never_the_own_title_and_five_at_most():
    ex = by_id()
    assert all(len(e.keywords) <= 5 for e in ex.values())
    assert "van hook township" not in ex["a"].keywords
    assert "mountrail county" in ex["a"].keywords


def test_extraction_round_trips_as_json():
    e = Extraction("x", ("a", "b"), ("k",), (Triple("a", "p", "b"),))
    assert Extraction.from_dict(e.to_dict()) == e
    assert token_key("St. Maurice’s Abbey") == "st maurice's abbey"


def reference_keywords(chunk, reading, entity_df, word_df, n):
    """Keywords picked one chunk at a time, as the readings' vectorised pick must pick them."""
    page = token_key(chunk.title) if chunk.title else ""

    def idf(df):
        return math.log((n + 1) / (df + 0.5))

    ranked = sorted(
        ((tf * idf(entity_df[e]), e) for e, tf in reading.entity_counts.items() if e != page),
        key=lambda pair: (-pair[0], pair[1]),
    )
    chosen = [e for _, e in ranked[:5]]
    taken = {w for e in chosen for w in e.split()} | set(page.split())
    words = sorted(
        ((tf * idf(word_df[w]), w) for w, tf in reading.word_counts.items() if w not in taken),
        key=lambda pair: (-pair[0], pair[1]),
    )
    return tuple(chosen + [w for _, w in words[: 5 - len(chosen)]])


@pytest.mark.parametrize("seed", range(5))
def test_vectorised_keywords_equal_a_pick_one_chunk_at_a_time(seed):
    rng = random.Random(seed)
    chunks = [random_chunk(rng, i) for i in range(40)]
    titles = corpus_titles(chunks)
    readings = [read_chunk(c, titles) for c in chunks]
    entity_df = Counter(e for r in readings for e in r.entity_counts)
    word_df = Counter(w for r in readings for w in r.word_counts)
    got = OfflineExtractor().extract(chunks)
    for chunk, reading, extraction in zip(chunks, readings, got, strict=True):
        want = reference_keywords(chunk, reading, entity_df, word_df, len(chunks))
        assert extraction.keywords == want, chunk.id


def test_documentation_code_names_and_headings_are_entities():
    text = (
        "Set ``html_theme`` in conf.py. The :mod:`sphinx.ext.autodoc` extension reads "
        "autodoc_default_options and `Make Html`, see `the guide <usage/quickstart>`_."
    )
    docs = Chunk("d#1", "d", "Autodoc", text, 1, 3, section="Usage > Options")
    titles = corpus_titles([docs])
    reading = read_chunk(docs, titles)
    assert {"html_theme", "sphinx.ext.autodoc", "autodoc_default_options", "make html"} <= set(
        reading.entities
    )
    assert "the guide" in reading.entities and "usage quickstart" not in reading.entities
    assert {"usage", "options"} <= set(reading.entities)  # the headings above the chunk
    assert Triple("autodoc", "section", "options") in reading.triples
    assert not {"conf.py", "3.5"} & set(reading.entities)  # dotted words outside code: no


def test_wikipedia_quotes_and_placeholders_are_not_code():
    text = "The ``Lucky Penny '' was a ship, and ``Gold Star'' too. See formula_1 below."
    reading = read_chunk(chunk("w", "Ship", text), corpus_titles([chunk("w", "Ship", text)]))
    assert "lucky penny" in reading.entities and "formula_1" not in reading.entities
    assert not any("penny to" in e or "was" in e.split() for e in reading.entities)


def test_a_sparse_graph_is_named():
    from hopgraph.graph_store.graphs.passage_graph import sparse_reason

    dense = {"chunks": 10, "edges": {"entity": 40, "link": 5}, "triples_per_chunk": 2.0}
    assert sparse_reason(dense) is None
    sparse = dense | {"triples_per_chunk": 0.2}
    assert "0.2 triples" in sparse_reason(sparse)
    assert "--extractor llm" in sparse_reason(dense | {"edges": {"entity": 3, "link": 1}})
