"""The answer without an LLM: the passages' own sentences, at most three, each cited."""

import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from hopgraph.agents import extractive
from hopgraph.agents.extractive import (
    MAX_CHARS,
    MAX_SENTENCES,
    MIN_CHANCE,
    _options,
    choose,
    extractive_answer,
    further_features,
    sentences_of,
)
from hopgraph.agents.extractive_model import (
    CITED,
    FIRST,
    FURTHER,
    SentenceModel,
    Stage,
    default_model,
    fit_stage,
    load_model,
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


def model(first: dict[str, float], further: dict[str, float]) -> SentenceModel:
    """A hand-set model: the named features' weights, the others 0 (features not rescaled)."""

    def stage(names, weights):
        coef = np.array([weights.get(name, 0.0) for name in names])
        return Stage(names, np.zeros(len(names)), np.ones(len(names)), coef)

    return SentenceModel(stage(FIRST, first), stage(FURTHER, further), {})


def test_a_two_hop_question_gets_a_sentence_from_each_hop_citing_its_passage():
    answer = extractive_answer(INDEX, QUESTION, [ALCALA, UP, OTHER])
    said = [(s.text, s.passage) for s in answer.sentences]
    assert ("Military instruction started at the University of the Philippines in 1912.", 2) in said
    assert ("He was educated at the University of the Philippines.", 1) in said  # the bridge
    assert "in 1912. [2]" in answer.text
    assert answer.answering["d2"] == said[[p for _, p in said].index(2)][0]  # shown whole
    assert all(0 < s.score < 1 for s in answer.sentences)  # each its chance of holding the answer


def test_a_further_pick_follows_the_page_a_chosen_sentence_names():
    """The first sentence names the page "University of the Philippines": it is the next hop."""
    decoy = hit(2, "Instruction", "Military instruction may start at any place.")
    named = hit(3, "University of the Philippines", "Its cadets have drilled since 1912.")
    found = sentences_of(INDEX, QUESTION, [ALCALA, decoy, named])
    first = {"log passage rank": -5.0, "question words": 1.0}  # "He was educated at ..."
    by_words = model(first, {"question words left": 5.0, CITED: -9.0})
    by_link = model(first, {"its page is named by a chosen sentence": 5.0})
    assert [s.passage for s in choose(found, by_words).sentences][:2] == [1, 2]
    assert [s.passage for s in choose(found, by_link).sentences][:2] == [1, 3]
    educated = [c.text for c in found.candidates].index(choose(found, by_link).sentences[0].text)
    features = dict(zip(FURTHER, further_features(found, [educated]).T, strict=True))
    bridges = features["bridge words"]  # of the name it brought in, which the question lacks
    passages = [c.passage for c in found.candidates]
    assert bridges[passages.index(3)] > 0 == bridges[passages.index(2)]  # its page's title has it


def test_a_further_sentence_must_be_likely_enough_to_hold_the_answer():
    pages = [hit(n, f"Page {n}", f"Fact number {n} holds.") for n in range(1, 26)]
    found = sentences_of(INDEX, "Which fact holds?", pages)
    alike = model({}, {})  # 24 sentences left, each 1/24 of the chance: below MIN_CHANCE
    assert MIN_CHANCE > 1 / 24 and len(choose(found, alike).sentences) == 1
    leaning = model({}, {"log passage rank": -3.0})  # the next passage stands out
    assert [s.passage for s in choose(found, leaning).sentences][:2] == [1, 2]
    assert all(s.score >= MIN_CHANCE for s in choose(found, leaning).sentences[1:])


def test_a_fitted_model_is_read_back_and_one_on_other_features_is_refused(tmp_path):
    fitted = tmp_path / "model.json"
    fitted.write_text(default_model().to_json())
    again = load_model(fitted)
    assert again.first.names == FIRST and again.further.names == FURTHER
    assert np.allclose(again.further.coef, default_model().further.coef)
    data = json.loads(fitted.read_text())
    data["first"]["names"] = data["first"]["names"][:-1]
    fitted.write_text(json.dumps(data))
    with pytest.raises(RuntimeError, match=r"hopgraph\.evals\.extractive --train"):
        load_model(fitted)
    fitted.write_text("[1]")
    with pytest.raises(ValueError, match="is not a sentence model written by --train"):
        load_model(fitted)


def test_a_choice_questions_options_are_named_and_win_a_pick():
    pages = [
        hit(1, "Blue Sky (film)", "Blue Sky is a 1994 drama film. It starred Jessica Lange."),
        hit(2, "Always (2011 film)", "Always is a 2011 South Korean film. It was a hit."),
    ]
    question = "Which film came out first, Always or Blue Sky?"
    found = sentences_of(INDEX, question, pages)
    named = dict(zip(FIRST, found.first.T, strict=True))["names an option the question offers"]
    assert [c.text for c, n in zip(found.candidates, named, strict=True) if n] == [
        "Blue Sky is a 1994 drama film.",
        "Always is a 2011 South Korean film.",
    ]
    said = [s.text for s in extractive_answer(INDEX, question, pages).sentences]
    assert said[:2] == ["Blue Sky is a 1994 drama film.", "Always is a 2011 South Korean film."]


def test_fitting_finds_the_feature_that_predicts_which_sentence_of_a_question_answers():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2000, 3))
    groups = np.repeat(np.arange(200), 10)  # 200 questions of 10 sentences
    noisy = (x[:, 1] + 0.3 * rng.standard_normal(2000)).reshape(200, 10)
    y = (noisy == noisy.max(1, keepdims=True)).ravel().astype(float)  # one answers each
    stage = fit_stage(("a", "b", "c"), x, y, groups)
    assert stage.coef[1] > 2 and abs(stage.coef[0]) < 0.5 and abs(stage.coef[2]) < 0.5
    logits = stage.logits(x[:10])
    assert np.argmax(logits) == np.argmax(x[:10, 1])


def test_a_question_that_offers_a_choice_names_its_options():
    assert _options("Which film came out first, The Fog (1980 film) or Jaws?") == (
        "the fog",
        "jaws",
    )
    assert _options("Who was born first, Gerald Ford or Bob Dole?") == ("gerald ford", "bob dole")
    assert _options("Are Christopher Nolan and Sathish Kalathil both film directors?") == ()


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


def test_sentences_glued_without_a_space_are_split_but_a_dotted_name_is_not():
    text = (
        "Charles Mathew (1872 – 1923) was a Labour politician.He was elected in 1922.The son "
        "of a judge, he read law. Use marshmallow.Schema to load. See `flask.Flask` there."
    )
    found = sentences_of(INDEX, "who was elected", [hit(1, "Charles Mathew", text)])
    assert [c.text for c in found.candidates] == [
        "Charles Mathew (1872 – 1923) was a Labour politician.",
        "He was elected in 1922.",
        "The son of a judge, he read law.",
        "Use marshmallow.Schema to load.",
        "See `flask.Flask` there.",
    ]


def test_a_cited_passage_loses_only_as_much_as_the_question_still_wants():
    """Said all the question asks: the answer is beside it; words still wanted: another hop."""
    etna = hit(
        1,
        "Mount Etna",
        "Mount Etna is a volcano whose eruptions are frequent. The latest came on 16 March 2017.",
    )
    other = hit(2, "Vesuvius", "Vesuvius is a volcano near Naples. It blew in 1944.")
    question = "When was the latest of the eruptions of Mount Etna?"
    found = sentences_of(INDEX, question, [etna, other])
    texts = [c.text for c in found.candidates]

    def cited_after(said: str) -> np.ndarray:
        chosen = [texts.index(said)]
        return dict(zip(FURTHER, further_features(found, chosen).T, strict=True))[CITED]

    said_most = cited_after("Mount Etna is a volcano whose eruptions are frequent.")
    said_none = cited_after("Vesuvius is a volcano near Naples.")
    assert 0 < said_most[texts.index("The latest came on 16 March 2017.")] < 0.5
    assert said_none[texts.index("It blew in 1944.")] == 1.0  # the whole question still wanted
    assert said_most[texts.index("It blew in 1944.")] == 0  # not cited
    answer = extractive_answer(INDEX, question, [etna, other])
    assert [s.passage for s in answer.sentences][:2] == [1, 1]
    assert "16 March 2017" in answer.text


def test_a_page_the_corpus_holds_twice_gives_its_sentence_once(monkeypatch):
    """Two versions of one page: a second copy of a chosen sentence would take a place."""
    copy = hit(2, "Larry Alcala", ALCALA.text.replace("was a Filipino", "was a noted Filipino"))
    educated = "He was educated at the University of the Philippines."
    instruction = "Military instruction started at the University of the Philippines in 1912."

    def said() -> list[str]:
        return [s.text for s in extractive_answer(INDEX, QUESTION, [ALCALA, copy, UP]).sentences]

    assert said().count(educated) == 1 and instruction in said()
    monkeypatch.setattr(extractive, "REPEAT_COSINE", 1.01)  # no sentence is a repeat
    assert said().count(educated) == 2


def test_the_fitted_study_model_in_the_repository_reads_the_features_this_code_computes():
    """A change of the features must refit evals/results/extractive/fitted-model.json."""
    fitted = Path(__file__).parents[3] / "evals" / "results" / "extractive" / "fitted-model.json"
    model = load_model(fitted)
    assert model.first.names == FIRST and model.further.names == FURTHER
