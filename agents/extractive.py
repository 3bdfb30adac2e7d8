"""An answer without an LLM: the evidence sentences that best answer the question, each cited.

With no LLM, ``ask`` (the CLI, MCP, the LangGraph server and the page) still answers: it picks
sentences out of the passages a method ranks first, one per hop where the evidence spans
passages, and cites the passage of each.

How a sentence is chosen (no model beyond the index's own embedder):

- every sentence of every passage is scored by the cosine of its embedding (the passage's
  title, then the sentence, as passages are embedded) to the question's, plus the share of the
  question's content words it holds (stemmed; the passage's title counts, since a sentence
  about its page's subject often names it only as "he" or "it"), weighted by how rare each
  word is among the sentences;
- the best sentence answers the first hop;
- each next hop is a sentence of another passage that holds a word the
  chosen sentences do not: one of the question's, or a *bridge*, a word a chosen sentence
  brought in that the question lacks ("educated at the University of the Philippines" → the
  University of the Philippines' page). The search stops when no sentence adds one, so a
  one-hop question gets one sentence.

Each passage also gets its own best sentence (:attr:`ExtractiveAnswer.answering`), which
``ask`` shows whole instead of cutting the passage off at a fixed width.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cache

import numpy as np

from hopgraph.graph_store import Index
from hopgraph.graph_store.graphs.extraction.offline import STOPWORDS, extraction_sentences
from hopgraph.tools import Hit

MAX_HOPS = 4
"""The most sentences an answer gives (MuSiQue's longest questions have four hops).

The weights below were chosen on the train sets (hotpotqa-train, musique-train; a grid of
lexical 0.5/1, bridge 0.25/0.5/1, link 0/0.5/1, min gain 0/0.2/0.4) for answer-string recall
against words: evals/results/extractive/train-grid.txt has the grid."""
LEXICAL_WEIGHT = 1.0
"""Weight of the question's words held against the cosine (both lie in [0, 1])."""
BRIDGE_WEIGHT = 0.5
"""A bridge word counts half a question word: it is what a chosen sentence suggested."""
MIN_GAIN = 0.2
"""What a further hop's sentence must add (its weighted share of the words still wanted)."""
LINK_WEIGHT = 0.5
"""What a passage whose title a chosen sentence names adds: it is where the next hop leads."""

_WORD = re.compile(r"\w+")
_CODE_FENCE = re.compile(r"^\s*(`{3,}|~{3,})", re.MULTILINE)


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
class Weights:
    """How sentences are scored and when a further hop is taken (see the module doc)."""

    lexical: float = LEXICAL_WEIGHT
    bridge: float = BRIDGE_WEIGHT
    link: float = LINK_WEIGHT
    min_gain: float = MIN_GAIN


@dataclass(frozen=True)
class _Candidate:
    text: str
    passage: int
    hit: Hit
    words: frozenset[str]


@dataclass(frozen=True)
class Sentences:
    """The passages' sentences with what choosing among them needs (embedded once)."""

    candidates: list[_Candidate]
    asked: frozenset[str]
    rarity: dict[str, float]
    cosines: np.ndarray
    question: str


def extractive_answer(
    index: Index, question: str, hits: Sequence[Hit], weights: Weights | None = None
) -> ExtractiveAnswer:
    """Return the answer ``hits`` hold for ``question``: sentences chosen as the module says."""
    return choose(sentences_of(index, question, hits), weights or Weights())


def sentences_of(index: Index, question: str, hits: Sequence[Hit]) -> Sentences:
    """Split the passages into sentences and score each against the question."""
    candidates = _candidates(hits)
    rarity = _rarity([c.words for c in candidates])
    cosines = _cosines(index, question, candidates) if candidates else np.zeros(0)
    return Sentences(candidates, frozenset(_words(question)), rarity, cosines, question)


def choose(found: Sentences, weights: Weights) -> ExtractiveAnswer:
    """Pick the answer's sentences, one a passage, hop by hop (the module doc says how)."""
    candidates, asked, rarity = found.candidates, found.asked, found.rarity
    passages = len({c.passage for c in candidates})
    chosen: list[int] = []
    holders: Counter[str] = Counter()  # word → how many chosen sentences hold it
    while len(chosen) < min(MAX_HOPS, passages):
        left = asked - holders.keys()
        bridges = {w for w, n in holders.items() if n == 1 and w not in asked}
        used = {candidates[i].passage for i in chosen}
        linked = _linked(candidates, [candidates[i].text for i in chosen], found.question)
        best, best_score = None, -math.inf
        for i, c in enumerate(candidates):
            if c.passage in used:
                continue
            gain = _held(c.words, left, rarity) + weights.bridge * _held(c.words, bridges, rarity)
            gain += weights.link * (c.passage in linked)
            if chosen and gain <= weights.min_gain:  # a further hop must bring enough in
                continue
            score = float(found.cosines[i]) + weights.lexical * gain
            if score > best_score:
                best, best_score = i, score
        if best is None:
            break
        chosen.append(best)
        holders.update(candidates[best].words)
    score = _scorer(found, weights)
    sentences = [_sentence(candidates[i], score(i)) for i in chosen]
    return ExtractiveAnswer(sentences, _answering(found, score))


def _linked(candidates: Sequence[_Candidate], said: Sequence[str], question: str) -> set[int]:
    """Return the passages whose page title a chosen sentence names and the question does not.

    "ex-wife of pitcher Kris Benson" leads to the page Kris Benson: the next hop.
    """
    text, asked = " ".join(said).casefold(), question.casefold()
    out = set()
    for c in candidates:
        name = _TITLE_QUALIFIER.sub("", c.hit.title).strip().casefold()
        if len(name) > 2 and name in text and name not in asked:
            out.add(c.passage)
    return out


_TITLE_QUALIFIER = re.compile(r"\s*\([^)]*\)$")
"""A title's trailing qualifier, "(film)" in "Always (2011 film)": sentences name it without."""


def _candidates(hits: Sequence[Hit]) -> list[_Candidate]:
    """Return every sentence of the passages (code blocks as one piece), with its words."""
    out = []
    for n, hit in enumerate(hits, start=1):
        title_words = _words(hit.title)
        for text in _sentences(hit.text):
            out.append(_Candidate(text, n, hit, frozenset(_words(text) + title_words)))
    return out


def _sentences(text: str) -> list[str]:
    """Split a passage into sentences; a fenced code block stays whole (it is one statement)."""
    if not _CODE_FENCE.search(text):
        return _prose(text)
    out: list[str] = []
    for n, part in enumerate(re.split(r"(^\s*(?:`{3,}|~{3,}).*?^\s*(?:`{3,}|~{3,})\s*$)",
                                      text, flags=re.MULTILINE | re.DOTALL)):  # fmt: skip
        if n % 2:  # a fenced block
            out.append(part.strip())
        else:
            out += _prose(part)
    return [s for s in out if s]


_CONTINUES = re.compile(r"^[a-z(),;:\-–]")
"""A piece that starts so goes on the sentence before: a split after "c." or "approx."."""


_OPEN = re.compile(r"\([^)]*$|\b(?:c|ca|cf|vs|approx|e\.g|i\.e)\.$")
"""A piece that ends so is cut short: inside parentheses ("(c. 1200"), after "c." or "e.g."."""


def _prose(text: str) -> list[str]:
    """Split prose into sentences, re-joining splits after initials and abbreviations."""
    out: list[str] = []
    for piece in extraction_sentences(text):
        piece = " ".join(piece.split())
        if out and (_CONTINUES.match(piece) or _OPEN.search(out[-1])):
            out[-1] = f"{out[-1]} {piece}"
        elif piece:
            out.append(piece)
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


def _held(words: frozenset[str], wanted: set[str] | frozenset[str], rarity: dict) -> float:
    """Return the weighted share of ``wanted`` that ``words`` hold (0 when nothing is wanted)."""
    total = sum(rarity.get(w, math.log(2)) for w in wanted)
    if total == 0:
        return 0.0
    return sum(rarity.get(w, 0.0) for w in wanted & words) / total


def _cosines(index: Index, question: str, candidates: Sequence[_Candidate]) -> np.ndarray:
    """Return each sentence's cosine to the question, embedded as passages are (title, text)."""
    texts = [f"{c.hit.title}\n{c.text}" if c.hit.title else c.text for c in candidates]
    vectors = index.embedder.embed([question, *texts])
    vectors = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    return vectors[1:] @ vectors[0]


def _scorer(found: Sentences, weights: Weights) -> Callable[[int], float]:
    """Return a sentence's score for the question alone: cosine plus the words it holds."""

    def score(i: int) -> float:
        held = _held(found.candidates[i].words, found.asked, found.rarity)
        return float(found.cosines[i]) + weights.lexical * held

    return score


def _sentence(c: _Candidate, score: float) -> AnswerSentence:
    return AnswerSentence(c.text, c.passage, c.hit.id, c.hit.title, round(score, 4))


def _answering(found: Sentences, score: Callable[[int], float]) -> dict[str, str]:
    """Return each passage's best sentence for the question alone."""
    best: dict[str, tuple[float, str]] = {}
    for i, c in enumerate(found.candidates):
        value = score(i)
        if c.hit.id not in best or value > best[c.hit.id][0]:
            best[c.hit.id] = (value, c.text)
    return {chunk: text for chunk, (_, text) in best.items()}
