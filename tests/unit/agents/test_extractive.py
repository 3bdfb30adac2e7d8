"""The answer without an LLM: the passages' own sentences, one per hop, each cited."""

from types import SimpleNamespace

import numpy as np

from hopgraph.agents.extractive import (
    MAX_CHARS,
    MAX_SENTENCES,
    Weights,
    choose,
    extractive_answer,
    sentences_of,
)
from hopgraph.tools import Hit


class BagOfWords:
    """A stand-in embedder: each word a fixed random direction (no model, deterministic)."""

    def embed(self, texts):
        out = np.zeros((len(texts), 64), np.float32)
        for row, text in enumerate(texts):
            for word in text.lower().split():
                seed = sum(map(ord, word.strip(".,?'\"")))
                out[row] += np.random.default_rng(seed).standard_normal(64)
        return out


INDEX = SimpleNamespace(embedder=BagOfWords())


def hit(n: int, title: str, text: str) -> Hit:
    return Hit(f"d{n}", 1.0 / n, title, text, f"d{n}")


ALCALA = hit(
    1,
    "Larry Alcala",
    "Lauro Alcala was a Filipino cartoonist. He was educated at the University of the "
    "Philippines. He drew for magazines for decades.",
)
UP = hit(
    2,
    "University of the Philippines",
    "The university has eight campuses. Military instruction started at the University of the "
    "Philippines in 1912. Its library is large.",
)
OTHER = hit(3, "Manila", "Manila is the capital. Military parades are held there.")
QUESTION = "When did military instruction start at the place where Larry Alcala was educated?"


def test_a_two_hop_question_gets_a_sentence_from_each_hop_citing_its_passage():
    answer = extractive_answer(INDEX, QUESTION, [ALCALA, UP, OTHER])
    assert [(s.text, s.passage) for s in answer.sentences] == [
        ("He was educated at the University of the Philippines.", 1),  # the bridge
        ("Military instruction started at the University of the Philippines in 1912.", 2),
    ]
    assert answer.text.endswith("in 1912. [2]")
    assert answer.answering["d2"] == answer.sentences[1].text  # shown whole under its passage


def test_a_further_hop_must_bring_a_word_in_so_one_hop_gets_one_sentence():
    found = sentences_of(INDEX, "Who drew for magazines?", [ALCALA, hit(2, "Rain", "It rained.")])
    assert [s.passage for s in choose(found, Weights()).sentences] == [1]


def test_the_link_to_a_named_page_decides_the_second_hop():
    """The first sentence names the page "University of the Philippines": it is the next hop."""
    decoy = hit(2, "Instruction", "Military instruction may start at any place.")
    named = hit(3, "University of the Philippines", "Its cadets have drilled since 1912.")
    found = sentences_of(INDEX, QUESTION, [ALCALA, decoy, named])
    alone = Weights(bridge=0.0, link=0.0, min_gain=0.2)  # question words only
    assert 3 not in [s.passage for s in choose(found, alone).sentences]
    linked = Weights(bridge=0.0, link=0.5, min_gain=0.2)
    assert 3 in [s.passage for s in choose(found, linked).sentences]


def test_sentences_are_not_cut_after_abbreviations_and_code_stays_whole():
    text = (
        "Haymo (c. 1200 – 1243) was a scholar. Call it so:\n\n"
        "```python\nx = run()\nprint(x)\n```\n\nThat prints it."
    )
    found = sentences_of(INDEX, "what does run print", [hit(1, "Haymo", text)])
    texts = [c.text for c in found.candidates]
    assert texts[0] == "Haymo (c. 1200 – 1243) was a scholar."
    assert "```python\nx = run()\nprint(x)\n```" in texts


def test_no_passages_no_answer():
    assert extractive_answer(INDEX, QUESTION, []).sentences == []


def test_a_sentence_that_asks_does_not_answer():
    page = hit(1, "Uploads", "How do I upload a file? Files are uploaded with request.files.")
    answer = extractive_answer(INDEX, "How do I upload a file?", [page])
    assert [s.text for s in answer.sentences] == ["Files are uploaded with request.files."]


def test_list_items_stay_whole_and_apart_and_a_heading_is_a_piece_that_states_nothing():
    text = (
        "## Keys\nSettings:\n\n- SECRET_KEY signs the session\n  cookie\n"
        "- DEBUG shows tracebacks\n\nDone."
    )
    found = sentences_of(INDEX, "what signs the session", [hit(1, "Config", text)])
    assert [c.text for c in found.candidates] == [
        "## Keys",
        "Settings:",
        "- SECRET_KEY signs the session cookie",
        "- DEBUG shows tracebacks",
        "Done.",
    ]
    assert [c.asks for c in found.candidates] == [True, False, False, False, False]


def test_at_most_three_sentences_and_600_characters():
    long = " ".join(["military instruction start place educated"] * 30) + "."
    pages = [hit(n, f"Page {n}", f"Military instruction {n} started. {long}") for n in range(1, 9)]
    answer = extractive_answer(INDEX, QUESTION, pages)
    assert 1 <= len(answer.sentences) <= MAX_SENTENCES
    assert sum(len(s.text) for s in answer.sentences) <= MAX_CHARS
    alone = extractive_answer(INDEX, "military instruction educated", [hit(1, "Page", long)])
    (cut,) = alone.sentences  # a first sentence over the limit: its head, marked
    assert len(cut.text) <= MAX_CHARS and cut.text.endswith("…")
