from graph_store.documents import Chunk
from graph_store.extraction import Extraction, Triple
from graph_store.extraction.normalise import title_aliases
from graph_store.extraction.offline import OfflineExtractor, extraction_sentences, token_key


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
