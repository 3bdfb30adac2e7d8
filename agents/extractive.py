"""An answer without an LLM: the evidence sentences that most likely hold the answer, each cited.

With no LLM, ``ask`` (the CLI, MCP, the LangGraph server and the page) still answers: it picks
at most three sentences (600 characters) out of the passages a method ranks first and cites the
passage of each. A "sentence" is a prose sentence, a code block or a list item whole, or a
heading (:mod:`hopgraph.agents.sentences`).

How a sentence is chosen (no model beyond the index's own embedder and a small linear model,
:mod:`hopgraph.agents.extractive_model`, whose weights were set by hand and chosen on the train
sets; weights fitted on them did worse on the documentation sets):

- every sentence is described by what it shows of an answer: the cosine of its embedding (the
  passage's title, then the sentence, as passages are embedded) to the question's; the share of
  the question's content words it holds (stemmed, weighted by how rare each word is among the
  sentences; the passage's title counts, since a sentence about its page's subject often names
  it only as "he"); its passage's place in the method's list; its place in its passage; whether
  it holds what the question asks for (a year or date for "when", a number for "how many", a
  name the question lacks for "who" or "where"); whether it names its page's subject; the names
  it brings that the question lacks; whether it names an option the question offers ("Which
  film came out first, Always or Blue Sky?": the answer is one of them); whether its page is
  the one the question names, or it names another passage's page;
- the first pick is the sentence most likely to hold the answer; a sentence that asks ("How do
  I upload a file?"), or a heading, states nothing: it is first only where nothing else is, and
  never a further pick;
- each further pick is scored again, with what the chosen sentences change: its cosine to the
  question *and* the chosen sentences, the question words still wanted, the *bridge* words it
  holds (of a name a chosen sentence brought in: "educated at the University of the Philippines"
  → the University of the Philippines' page), whether a chosen sentence names its page, and
  whether its passage is cited already, weighed by how much of the question the chosen sentences
  leave wanted (all of it said: the answer is likeliest beside them, in the same passage; words
  still wanted: another passage is the next hop). A further pick must have at least MIN_CHANCE
  of the chance left, fit in the characters left, and not repeat a chosen sentence (a page the
  corpus holds twice).

Each passage also gets its own best sentence for the question alone
(:attr:`ExtractiveAnswer.answering`), which ``ask`` shows whole instead of cutting the passage
off at a fixed width.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache, cached_property

import numpy as np

from hopgraph.graph_store import Index
from hopgraph.graph_store.graphs.extraction.offline import STOPWORDS
from hopgraph.tools import Hit

from .extractive_model import FIRST, SentenceModel, default_model
from .sentences import HEADING, sentences

MAX_SENTENCES = 3
"""The most sentences an answer gives: one per hop of a two-hop question and one to spare, or a
one-hop answer and the sentences beside it."""
MAX_CHARS = 600
"""The most characters an answer's sentences hold; a first sentence longer is cut at a word."""

ASKS_PENALTY = 10.0
"""Log-odds a sentence that asks ("How do I upload a file?"), or a heading, loses."""
REPEAT_COSINE = 0.95
"""A further sentence this close (cosine) to a chosen one repeats it: a corpus may hold one page
twice, in two versions, and its two copies of a sentence would take two of the three places. On
the dev sets 11 of 100 musique answers and 54 of 1,328 NQ answers repeated a sentence; leaving
repeats out kept more answers on NQ dev (83.1 -> 83.6 %) and marshmallow (63.6 -> 65.9 %), and
no fewer on any other dev or train set (0.9 did the same; 0.98 let some repeats in)."""
MIN_CHANCE = 0.05
"""A further sentence is given only when the model gives it at least this share of the chance
that one of the sentences left holds the answer: below it, one more is more to read for little.
On the train sets it kept as many answers as no threshold (0.1 lost 1.2 and 1.6 points on
hotpotqa-train and musique-train)."""

_WORD = re.compile(r"\w+")
_NAME = re.compile(r"\b[A-Z][\w'.-]*(?:\s+(?:of|the|de|von|van|and|du|la|le)?\s*[A-Z][\w'.-]*)*")
"""A name: capitalised words, with the small words names hold ("University of the Philippines")."""


@dataclass(frozen=True)
class AnswerSentence:
    """One sentence of the answer: its text, the passage it cites (1-based) and its score."""

    text: str
    passage: int
    id: str
    title: str
    score: float


@dataclass(frozen=True)
class ExtractiveAnswer:
    """The sentences that answer, in hop order, and each passage's own best sentence."""

    sentences: list[AnswerSentence]
    answering: dict[str, str] = field(default_factory=dict)
    """Chunk id → the sentence of that passage that best answers the question."""

    @property
    def text(self) -> str:
        """Return the answer as one line: each sentence followed by its citation, "[2]"."""
        return " ".join(f"{s.text} [{s.passage}]" for s in self.sentences)

    def to_dict(self) -> dict:
        """Return the answer as JSON-ready data: text, sentences (with citations), answering."""
        return {
            "text": self.text,
            "sentences": [s.__dict__ for s in self.sentences],
            "answering": self.answering,
        }


@dataclass(frozen=True)
class _Candidate:
    text: str
    passage: int
    place: int
    """Its place among its passage's sentences, from 0."""
    hit: Hit
    words: frozenset[str]
    names: frozenset[str]
    """The words of the names it holds (a bridge, where the question lacks them)."""
    subject: bool
    """It names its page's subject: it holds a word of the page's title."""
    asks: bool


@dataclass(frozen=True)
class Sentences:
    """The passages' sentences with what choosing among them needs (embedded once)."""

    candidates: list[_Candidate]
    asked: frozenset[str]
    rarity: dict[str, float]
    vectors: np.ndarray
    """Unit vectors: the question's first, then each candidate's."""
    question: str

    @cached_property
    def cosines(self) -> np.ndarray:
        """Return each sentence's cosine to the question."""
        return self.vectors[1:] @ self.vectors[0]

    @cached_property
    def first(self) -> np.ndarray:
        """Return each sentence's features for the first pick (extractive_model.FIRST)."""
        return _first_features(self)


def extractive_answer(
    index: Index, question: str, hits: Sequence[Hit], model: SentenceModel | None = None
) -> ExtractiveAnswer:
    """Return the answer ``hits`` hold for ``question``: sentences chosen as the module says."""
    return choose(sentences_of(index, question, hits), model or default_model())


def sentences_of(index: Index, question: str, hits: Sequence[Hit]) -> Sentences:
    """Split the passages into sentences and embed each with the question."""
    candidates = _candidates(hits)
    rarity = _rarity([c.words for c in candidates])
    vectors = _vectors(index, question, candidates)
    return Sentences(candidates, frozenset(_words(question)), rarity, vectors, question)


def choose(found: Sentences, model: SentenceModel) -> ExtractiveAnswer:
    """Pick the answer's sentences one at a time, each the likeliest left (the module doc)."""
    candidates = found.candidates
    chosen: list[int] = []
    chances: list[float] = []
    room = MAX_CHARS
    first = pick_logits(found, model, [])
    while len(chosen) < MAX_SENTENCES:
        logits = pick_logits(found, model, chosen) if chosen else first
        open_ = open_picks(found, chosen, room)
        if not open_:
            break
        best = max(open_, key=lambda i: logits[i])
        chance = _share(logits[open_], float(logits[best]))
        if chosen and chance < MIN_CHANCE:
            break
        chosen.append(best)
        chances.append(chance)
        room -= len(candidates[best].text) + 1
    sentences = [_sentence(candidates[i], p) for i, p in zip(chosen, chances, strict=True)]
    return ExtractiveAnswer(sentences, _answering(found, first))


def open_picks(found: Sentences, chosen: Sequence[int], room: int) -> list[int]:
    """Return the sentences a next pick may take: left, fitting the room, stating, no repeat.

    Any sentence may be the first (one too long is cut; one that asks loses ASKS_PENALTY). A
    further one may come from a passage already cited: the model weighs that
    (extractive_model.CITED: the more of the question the chosen sentences leave wanted, the less
    likely). It may not repeat a chosen one (a cosine of REPEAT_COSINE or more).
    """
    candidates = found.candidates
    if not chosen:
        return list(range(len(candidates)))
    said = found.vectors[[i + 1 for i in chosen]]
    repeats = (found.vectors[1:] @ said.T).max(1) >= REPEAT_COSINE
    return [
        i
        for i, c in enumerate(candidates)
        # one that asks adds nothing; nor does a repeat
        if i not in chosen and len(c.text) < room and not c.asks and not repeats[i]
    ]


def pick_logits(found: Sentences, model: SentenceModel, chosen: Sequence[int]) -> np.ndarray:
    """Return each sentence's logit of holding the answer, given the ones chosen so far.

    A sentence that asks, or a heading, states nothing: it loses ASKS_PENALTY, so it is taken
    only where nothing else is left (no train set has such sentences to learn it from).
    """
    if not found.candidates:
        return np.zeros(0)
    if chosen:
        logits = model.further.logits(further_features(found, chosen))
    else:
        logits = model.first.logits(found.first)
    return logits - ASKS_PENALTY * np.array([c.asks for c in found.candidates], float)


def picks_so_far(found: Sentences, chosen: Sequence[int]) -> tuple[set[str], set[str]]:
    """Return the question words the chosen sentences leave wanted, and the bridges they bring."""
    covered: set[str] = set()
    bridges: set[str] = set()
    for i in chosen:
        covered |= found.candidates[i].words
        bridges |= found.candidates[i].names - found.asked
    return set(found.asked) - covered, bridges


def further_features(found: Sentences, chosen: Sequence[int]) -> np.ndarray:
    """Return each sentence's features for a further pick (extractive_model.FURTHER)."""
    candidates, rarity = found.candidates, found.rarity
    left, bridges = picks_so_far(found, chosen)
    context = found.vectors[0] + CONTEXT_WEIGHT * found.vectors[[i + 1 for i in chosen]].sum(0)
    cosines = found.vectors[1:] @ (context / max(float(np.linalg.norm(context)), 1e-12))
    linked = _linked(candidates, [candidates[i].text for i in chosen], found.question)
    cited = {candidates[i].passage for i in chosen}
    wanted = _wanted(left, found.asked, rarity)
    extra = np.array(
        [
            [
                cosines[i],
                _held(c.words, left, rarity),
                _held(c.words, bridges, rarity),
                c.passage in linked,
                wanted if c.passage in cited else 0.0,
            ]
            for i, c in enumerate(candidates)
        ],
        float,
    ).reshape(len(candidates), 5)
    return np.hstack([found.first, extra])


CONTEXT_WEIGHT = 0.5
"""A further pick reads the question plus half the chosen sentences' vectors."""


def _first_features(found: Sentences) -> np.ndarray:
    """Return the FIRST features of every sentence (extractive_model.FIRST, in order)."""
    candidates = found.candidates
    if not candidates:
        return np.zeros((0, len(FIRST)))
    cos = found.cosines
    held = np.array([_held(c.words, found.asked, found.rarity) for c in candidates])
    passages = np.array([c.passage for c in candidates])
    best_in_passage = {p: cos[passages == p].max() for p in set(passages.tolist())}
    kind = _asked_kind(found.question)
    asked = found.question.casefold()
    titles = {c.passage: _TITLE_QUALIFIER.sub("", c.hit.title).strip() for c in candidates}
    options = _options(found.question)
    rows = []
    for i, c in enumerate(candidates):
        holds = _holds_kind(c.text, found.question, kind)
        others = (t for p, t in titles.items() if p != c.passage and len(t) > 2)
        rows.append([
            cos[i], cos[i] - cos.max(), cos[i] - best_in_passage[c.passage], held[i],
            held[i] - held.max(), math.log(c.passage), c.place == 0, math.log1p(c.place),
            math.log(max(len(c.text), 1)), c.subject,
            holds and kind == "date", holds and kind == "number", holds and kind == "name",
            math.log1p(len(c.names - found.asked)),
            len(titles[c.passage]) > 2 and titles[c.passage].casefold() in asked,
            any(t.casefold() in c.text.casefold() for t in others),
            any(option in c.text.casefold() for option in options),
        ])  # fmt: skip
    return np.array(rows, float)


_CHOICE = re.compile(
    r"(?:,|:)\s*(?:the\s+)?(?P<a>[^,?]+?)\s+or\s+(?:the\s+)?(?P<b>[^,?]+?)\s*\??\s*$"
)
"""A question that offers a choice: "Which film came out first, Always or Blue Sky?"."""


def _options(question: str) -> tuple[str, ...]:
    """Return the options a question offers (casefolded), or none."""
    found = _CHOICE.search(question.strip())
    if not found:
        return ()
    return tuple(_TITLE_QUALIFIER.sub("", found[g]).strip().casefold() for g in ("a", "b"))


def _share(logits: np.ndarray, best: float) -> float:
    """Return ``best``'s softmax share among ``logits``: its chance of being the answer's."""
    return float(1 / np.exp(logits - best).sum())


def _linked(candidates: Sequence[_Candidate], said: Sequence[str], question: str) -> set[int]:
    """Return the passages whose page title a chosen sentence names and the question does not.

    "ex-wife of pitcher Kris Benson" leads to the page Kris Benson: the next hop. So does a
    name the title holds ("a 2000 Hong Kong action film" → British Hong Kong).
    """
    text, asked = " ".join(said).casefold(), question.casefold()
    names = {n.casefold() for n in _NAME.findall(" ".join(said)) if len(n) > 3}
    names = {n for n in names if n not in asked}
    out = set()
    for c in candidates:
        title = _TITLE_QUALIFIER.sub("", c.hit.title).strip().casefold()
        named = len(title) > 2 and title in text and title not in asked
        if named or any(re.search(rf"\b{re.escape(n)}\b", title) for n in names):
            out.add(c.passage)
    return out


_KINDS = (
    ("date", re.compile(r"\b(when|what (year|date|day|month|century|decade)|which year|"
                        r"birthday|date of birth|born on)\b")),
    ("number", re.compile(r"\b(how (many|much|old|long|far|tall|big|high|large)|"
                          r"what (percentage|number|age)|population)\b")),
    ("name", re.compile(r"\b(where|(what|which) (country|city|state|county|town|nation)|"
                        r"who|whom|whose)\b")),
)  # fmt: skip
"""What a question asks for, by its words, the first that matches ("the physicist who shared
the prize ... in what country" asks for a place: a name)."""
_YEAR = re.compile(r"\b(1[0-9]{3}|20[0-9]{2})s?\b")
_MONTH = re.compile(r"\b(January|February|March|April|May|June|July|August|September|October|"
                    r"November|December)\b")  # fmt: skip
_NUMBER = re.compile(
    r"\b\d[\d,.]*\b|\b(one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|dozen|"
    r"hundred|thousand|million|billion)\b",
    re.IGNORECASE,
)


def _asked_kind(question: str) -> str | None:
    """Return what ``question`` asks for: "date", "number", "name", or None."""
    asked = question.lower()
    return next((name for name, pattern in _KINDS if pattern.search(asked)), None)


def _holds_kind(text: str, question: str, kind: str | None) -> bool:
    """Tell whether ``text`` holds what ``question`` asks for (False when it asks for nothing)."""
    if kind == "date":
        return bool(_YEAR.search(text) or _MONTH.search(text))
    if kind == "number":
        return bool(_NUMBER.search(text))
    if kind == "name":  # a name of which some word is not the question's
        asked = question.lower()
        return any(
            any(word.lower() not in asked for word in name.split()) for name in _NAME.findall(text)
        )
    return False


_TITLE_QUALIFIER = re.compile(r"\s*\([^)]*\)$")
"""A title's trailing qualifier, "(film)" in "Always (2011 film)": sentences name it without."""


def _candidates(hits: Sequence[Hit]) -> list[_Candidate]:
    """Return every sentence of the passages (code blocks, list items whole), with its words."""
    out = []
    for n, hit in enumerate(hits, start=1):
        title_words = _words(_TITLE_QUALIFIER.sub("", hit.title))
        for place, text in enumerate(sentences(hit.text)):
            words = _words(text)
            names = frozenset(w for name in _NAME.findall(text) for w in _words(name))
            subject = bool(set(title_words) & set(words))
            asks = text.rstrip().endswith("?") or bool(HEADING.match(text))
            out.append(
                _Candidate(
                    text, n, place, hit, frozenset(words + title_words), names, subject, asks
                )
            )
    return out


@cache
def _stemmer():  # PyStemmer has no types
    import Stemmer

    return Stemmer.Stemmer("english")


def _words(text: str) -> list[str]:
    """Return the stemmed content words of ``text`` (no stop words, no single letters)."""
    found = [w for w in _WORD.findall(text.lower()) if len(w) > 1 and w not in STOPWORDS]
    return _stemmer().stemWords(found)


def _rarity(sentences: Sequence[frozenset[str]]) -> dict[str, float]:
    """Return each word's weight: its inverse document frequency among the sentences."""
    n = len(sentences)
    df = Counter(w for s in sentences for w in s)
    return {w: math.log(1 + n / d) for w, d in df.items()}


def _wanted(left: set[str], asked: frozenset[str], rarity: dict) -> float:
    """Return the rarity-weighted share of the question's words still wanted (left by the picks).

    A question word no sentence holds counts as a word once (log 2) and is always left.
    """
    said = frozenset(asked - left)  # words of chosen sentences: each has its rarity
    return 1.0 - _held(said, asked, rarity) if asked else 0.0


def _held(words: frozenset[str], wanted: set[str] | frozenset[str], rarity: dict) -> float:
    """Return the weighted share of ``wanted`` that ``words`` hold (0 when nothing is wanted)."""
    total = sum(rarity.get(w, math.log(2)) for w in wanted)
    if total == 0:
        return 0.0
    return sum(rarity.get(w, 0.0) for w in wanted & words) / total


def _vectors(index: Index, question: str, candidates: Sequence[_Candidate]) -> np.ndarray:
    """Return unit vectors of the question and each sentence, embedded as passages are."""
    texts = [f"{c.hit.title}\n{c.text}" if c.hit.title else c.text for c in candidates]
    vectors = np.asarray(index.embedder.embed([question, *texts]), dtype=np.float32)
    return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)


def _sentence(c: _Candidate, score: float) -> AnswerSentence:
    text = c.text
    if len(text) > MAX_CHARS:  # only a first sentence can be: cut at a word, marked
        text = text[: MAX_CHARS - 1].rsplit(" ", 1)[0] + "…"
    return AnswerSentence(text, c.passage, c.hit.id, c.hit.title, round(score, 4))


def _answering(found: Sentences, first: np.ndarray) -> dict[str, str]:
    """Return each passage's likeliest sentence for the question alone."""
    best: dict[str, tuple[float, str]] = {}
    for i, c in enumerate(found.candidates):
        if c.hit.id not in best or first[i] > best[c.hit.id][0]:
            best[c.hit.id] = (float(first[i]), c.text)
    return {chunk: text for chunk, (_, text) in best.items()}
